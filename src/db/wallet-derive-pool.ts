/**
 * Address derivation off the event loop (docs/wallets.md "Derivation threads"): a fixed pool of
 * `WALLET_DERIVE_THREADS` worker threads (node:worker_threads) runs every derivation of wallet
 * addresses — creation, reservation, the indexer's gap extension — so that the thread serving
 * requests, Electrum clients, streams and the indexer never computes BIP32 keys.
 *
 * - A derivation is cut into jobs of about `JOB_DERIVATIONS` child keys, submitted one after the
 *   other: one caller holds at most one thread at a time.
 * - Waiting jobs are taken round-robin between owners (an API key, or the indexer, whose jobs go
 *   first: its block transaction waits on them), so one tenant's wallets never queue another's.
 * - A caller's AbortSignal (the request timed out, the client went away) drops its waiting jobs
 *   and terminates the thread running its job: the CPU stops at once, and a fresh thread takes
 *   the place of the terminated one.
 * - A DeriveBudget bounds the child keys one request derives (`API_WALLET_MAX_DERIVATIONS`);
 *   past it the request fails with 422 ERR_WALLET_TOO_LARGE before deriving more.
 * @module
 */
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../errors.js';
import { keysPerAddress, type DerivedAddress } from './wallet-derive.js';

/** Child keys one job derives at most (about a second of one core at 0.5 ms each). */
const JOB_DERIVATIONS = 2000;

/** The owner of the indexer's jobs: served before any API key's. */
export const INDEXER_OWNER = 'indexer';

/**
 * The child keys one request may derive (each key of each address counts: an address of a
 * 16-key multisig costs 16). Spent before each job is submitted.
 */
export class DeriveBudget {
  private spent = 0;
  constructor(readonly limit: number) {}

  /** Counts `n` more derivations; throws 422 ERR_WALLET_TOO_LARGE when past the limit. */
  spend(n: number): void {
    this.spent += n;
    if (this.spent > this.limit) throw walletTooLarge(this.spent, this.limit);
  }
}

/** The refusal of a request that would derive `cost` child keys, `limit` being the cap. */
export function walletTooLarge(cost: number, limit: number): ServiceError {
  return new ServiceError('ERR_WALLET_TOO_LARGE', {
    message: `this request would derive ${cost} child keys (addresses × keys per address), over the limit of ${limit} (API_WALLET_MAX_DERIVATIONS): use fewer descriptors or a smaller gap_limit`,
  });
}

export type DeriveOptions = {
  /** Ends the derivation: waiting jobs dropped, the running one's thread terminated. */
  signal?: AbortSignal;
  /** Whose jobs these are (round-robin between owners); INDEXER_OWNER goes first. */
  owner?: string;
  /** The request's budget of child keys. */
  budget?: DeriveBudget;
};

type Job = { descriptor: string; network: string; from: number; to: number };
type Pending = Job & {
  owner: string;
  signal: AbortSignal | undefined;
  resolve: (rows: DerivedAddress[]) => void;
  reject: (err: unknown) => void;
  thread?: Thread;
};
type Thread = { worker: Worker; job: (Pending & { id: number }) | null };

/** A new derivation thread: the compiled worker beside this module, or the TypeScript source through tsx. */
function spawnWorker(): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./wallet-derive-worker.js', here));
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = new URL('./wallet-derive-worker.ts', here).href;
  return new Worker(`import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`, {
    eval: true,
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('derivation aborted');
}

/** The pool: `size` threads, started when first needed. */
class WalletDerivePool {
  private readonly threads: Thread[] = [];
  private readonly idle: Thread[] = [];
  /** Waiting jobs by owner; the Map's order is the round-robin turn. */
  private readonly waiting = new Map<string, Pending[]>();
  private nextId = 1;
  private terminatedCount = 0;
  private closed = false;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`pool size ${size} is not a positive integer`);
  }

  /** Threads running a job, jobs waiting, and threads terminated to cancel a job (monotonic). */
  status(): { threads: number; busy: number; waiting: number; terminated: number } {
    let waiting = 0;
    for (const q of this.waiting.values()) waiting += q.length;
    return {
      threads: this.threads.length,
      busy: this.threads.filter((t) => t.job !== null).length,
      waiting,
      terminated: this.terminatedCount,
    };
  }

  /** Addresses `from` … `to - 1` of a chain, derived in the pool job by job. */
  async derive(descriptor: string, network: string, from: number, to: number, opts: DeriveOptions = {}): Promise<DerivedAddress[]> {
    const per = Math.max(1, Math.floor(JOB_DERIVATIONS / keysPerAddress(descriptor)));
    const out: DerivedAddress[] = [];
    for (let start = from; start < to; start += per) {
      const end = Math.min(to, start + per);
      opts.signal?.throwIfAborted();
      opts.budget?.spend((end - start) * keysPerAddress(descriptor));
      const rows = await this.submit({ descriptor, network, from: start, to: end }, opts);
      for (const r of rows) out.push(r);
    }
    return out;
  }

  /** Terminates every thread; waiting and running jobs fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.waiting.values()) for (const p of q) p.reject(new Error('derivation pool closed'));
    this.waiting.clear();
    const threads = this.threads.splice(0);
    this.idle.length = 0;
    await Promise.all(
      threads.map(async (t) => {
        t.job?.reject(new Error('derivation pool closed'));
        await t.worker.terminate();
      }),
    );
  }

  private submit(job: Job, opts: DeriveOptions): Promise<DerivedAddress[]> {
    if (this.closed) return Promise.reject(new Error('derivation pool closed'));
    const owner = opts.owner ?? '';
    const signal = opts.signal;
    return new Promise<DerivedAddress[]>((resolve, reject) => {
      let onAbort: (() => void) | undefined;
      const done = () => {
        if (onAbort) signal!.removeEventListener('abort', onAbort);
      };
      const p: Pending = {
        ...job,
        owner,
        signal,
        resolve: (rows) => (done(), resolve(rows)),
        reject: (err) => (done(), reject(err)),
      };
      if (signal) {
        onAbort = () => this.cancel(p);
        signal.addEventListener('abort', onAbort, { once: true });
      }
      let q = this.waiting.get(owner);
      if (!q) this.enqueue(owner, (q = []));
      q.push(p);
      this.dispatch();
    });
  }

  /** The next waiting job: the indexer's first, else the first owner's in the turn (who then goes last). */
  private take(): Pending | undefined {
    for (const [owner, q] of this.waiting) {
      const p = q.shift();
      this.waiting.delete(owner);
      if (q.length > 0) this.enqueue(owner, q);
      if (p) return p;
    }
    return undefined;
  }

  /** Puts an owner's queue in the turn: last, but the indexer's first. */
  private enqueue(owner: string, q: Pending[]): void {
    if (owner !== INDEXER_OWNER) {
      this.waiting.set(owner, q);
      return;
    }
    const rest = [...this.waiting];
    this.waiting.clear();
    this.waiting.set(owner, q);
    for (const [k, v] of rest) this.waiting.set(k, v);
  }

  private dispatch(): void {
    while (!this.closed) {
      let thread = this.idle.pop();
      if (!thread && this.threads.length < this.size) thread = this.startThread();
      if (!thread) return;
      const p = this.take();
      if (!p) {
        this.idle.push(thread);
        return;
      }
      const id = this.nextId++;
      thread.job = { ...p, id };
      p.thread = thread;
      thread.worker.postMessage({ id, descriptor: p.descriptor, network: p.network, from: p.from, to: p.to });
    }
  }

  private startThread(): Thread {
    const thread: Thread = { worker: spawnWorker(), job: null };
    // An idle thread does not keep the process alive.
    thread.worker.unref();
    thread.worker.on('message', (m: { id: number; rows?: DerivedAddress[]; error?: string }) => {
      const job = thread.job;
      if (!job || job.id !== m.id) return;
      thread.job = null;
      this.idle.push(thread);
      if (m.error !== undefined) job.reject(new Error(`derivation failed: ${m.error}`));
      else job.resolve(m.rows!);
      this.dispatch();
    });
    thread.worker.on('error', (err) => this.replace(thread, err));
    thread.worker.on('exit', () => this.replace(thread, new Error('derivation thread exited')));
    this.threads.push(thread);
    return thread;
  }

  /** Drops a thread that died or was terminated; its job (if any) fails with `err`. */
  private replace(thread: Thread, err: unknown): void {
    const i = this.threads.indexOf(thread);
    if (i < 0) return;
    this.threads.splice(i, 1);
    const j = this.idle.indexOf(thread);
    if (j >= 0) this.idle.splice(j, 1);
    const job = thread.job;
    thread.job = null;
    job?.reject(err);
    this.dispatch();
  }

  /** Cancels a job: out of its queue if waiting, its thread terminated if running. */
  private cancel(p: Pending): void {
    const reason = abortReason(p.signal!);
    const q = this.waiting.get(p.owner);
    const at = q?.indexOf(p) ?? -1;
    if (at >= 0) {
      q!.splice(at, 1);
      if (q!.length === 0) this.waiting.delete(p.owner);
      p.reject(reason);
      return;
    }
    const thread = p.thread;
    if (!thread || thread.job === null || thread.job.resolve !== p.resolve) return;
    this.terminatedCount++;
    this.replace(thread, reason);
    void thread.worker.terminate();
  }
}

let shared: WalletDerivePool | undefined;
let sharedSize = 2;

/** Sets the size of the process's pool (WALLET_DERIVE_THREADS); effective for a pool not started yet. */
export function setWalletDeriveThreads(n: number): void {
  sharedSize = n;
  if (shared && shared.size !== n && shared.status().threads === 0) shared = undefined;
}

/** The process's derivation pool (every role of the process shares it). */
export function walletDerivePool(): WalletDerivePool {
  shared ??= new WalletDerivePool(sharedSize);
  return shared;
}
