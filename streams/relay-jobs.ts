/**
 * The relay's batching, pure: which jobs one relay batch's hook deliveries go out in. Before the
 * delivery log is written, each hook's pending deliveries get batch job ids, `size` to a job, in
 * event order (`assignBatchJobs`); once the log has answered (a row already there keeps the job
 * recorded for it: a replayed batch re-adds that job, a no-op while it exists), `relayJobs` makes
 * the jobs: a pending delivery with no batch job in a job of its own, the others in their batch
 * jobs, those queued in turns over the keys. test/fixtures/relay-batching.json holds the cases.
 * @module
 */
import type { NewDelivery } from '../src/db/queries/tenancy-deliveries.js';
import { roundRobin } from './fair-share.js';
import { batchJobId, type DeliveryBatch, type DeliveryJob, type Transport } from './queues.js';

/**
 * Gives the pending deliveries of each hook (in event order) batch job ids, `size` to a job; a
 * delivery left alone keeps its own job (no id).
 */
export function assignBatchJobs(rows: NewDelivery[], size: number, to: bigint): void {
  if (size < 2) return;
  const byHook = new Map<string, NewDelivery[]>();
  for (const r of rows) {
    if (r.status !== 'pending') continue;
    const list = byHook.get(r.hookId);
    if (list) list.push(r);
    else byHook.set(r.hookId, [r]);
  }
  for (const [hook, list] of byHook) {
    for (let i = 0, n = 0; i < list.length; i += size, n++) {
      const chunk = list.slice(i, i + size);
      if (chunk.length < 2) continue;
      const jobId = batchJobId(hook, to, n);
      for (const r of chunk) r.jobId = jobId;
    }
  }
}

/** What the delivery log answered for a pending delivery: its attempt series and recorded batch job. */
export type LoggedDelivery = { id: string; redeliveries: number; jobId: string | null };

/**
 * The jobs of a relay batch: `rows` its hook deliveries in event order, `logged` the log's
 * answer (only deliveries still pending: the others need no job), `transportOf` each delivery's
 * hook transport, `failing` the hooks whose breaker is not closed (their batch jobs queue behind
 * the others': `backlog`).
 */
export function relayJobs(
  rows: readonly NewDelivery[],
  logged: readonly LoggedDelivery[],
  transportOf: ReadonlyMap<string, Transport>,
  failing: ReadonlySet<string>,
): { own: DeliveryJob[]; batches: DeliveryBatch[] } {
  const recorded = new Map(logged.map((p) => [p.id, p]));
  const own: DeliveryJob[] = [];
  const batches = new Map<string, DeliveryBatch>();
  const batchKeys = new Map<string, string>();
  for (const h of rows) {
    const p = recorded.get(h.id);
    if (!p) continue;
    const transport = transportOf.get(h.id)!;
    if (p.jobId === null) {
      own.push({ transport, delivery: h.id, hook: h.hookId, payload: h.payload, type: h.eventType, redeliveries: p.redeliveries });
      continue;
    }
    let b = batches.get(p.jobId);
    if (!b) {
      batches.set(
        p.jobId,
        (b = { transport, jobId: p.jobId, hook: h.hookId, deliveries: [], ...(failing.has(h.hookId) ? { backlog: true } : {}) }),
      );
      batchKeys.set(p.jobId, String(h.keyId));
    }
    b.deliveries.push({ delivery: h.id, type: h.eventType });
  }
  // (in turns over the keys: one key's many hooks do not queue in front of another key's first job)
  return { own, batches: roundRobin([...batches.values()], (b) => batchKeys.get(b.jobId)!) };
}
