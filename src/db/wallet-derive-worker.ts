/**
 * A derivation thread of src/db/wallet-derive-pool.ts: answers each `{id, descriptor, network,
 * from, to}` with `{id, rows}` (or `{id, error}`), one job at a time. The pool terminates the
 * thread to cancel a job.
 * @module
 */
import { parentPort } from 'node:worker_threads';
import { deriveAddresses } from './wallet-derive.js';

type Job = { id: number; descriptor: string; network: string; from: number; to: number };

parentPort!.on('message', (job: Job) => {
  try {
    parentPort!.postMessage({ id: job.id, rows: deriveAddresses(job.descriptor, job.network, job.from, job.to) });
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: (err as Error).message });
  }
});
