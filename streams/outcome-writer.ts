/**
 * Group commit of attempt outcomes: one UPDATE of the delivery log for many deliveries, instead
 * of one each. Each outcome comes with how long it may wait for others to join it (its window:
 * a delivery's own job a few milliseconds, a batch job's deliveries longer); the statement goes
 * once the first outcome waiting is due, or once `FLUSH_ROWS` wait, and takes everything waiting
 * (up to `FLUSH_ROWS`, the first due first; streams/due-queues.ts keeps them). Fewer statements, each with more rows: a statement costs PostgreSQL a
 * fixed part besides its rows (planning, its commit and WAL flush) — about as much as 50 rows'
 * share of the statement. One statement runs at a time per process (no two of its statements wait
 * on each other's locks of the per-minute counts). Each `record` resolves once its row is
 * written, so a job still ends only after its log rows: a worker killed before they are written
 * leaves its job to run again (its deliveries sent again, under the same webhook-id).
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { recordOutcomes, type AttemptOutcome } from '../src/db/queries/tenancy-deliveries.js';
import { DueQueues } from './due-queues.js';

/** Outcomes written in one statement at most (this many waiting are written at once, whatever their windows). */
const FLUSH_ROWS = 500;

export type OutcomeWriter = {
  /**
   * Resolves once the outcome is in the log (rejects when its statement failed); it waits at
   * most `windowMs` (default `defaultWindowMs`) for others, 0: only those of the same turn of
   * the event loop.
   */
  record(o: AttemptOutcome, windowMs?: number): Promise<void>;
  /** From now on nothing waits for its window (a worker closing: its jobs end as soon as their rows are written). */
  hurry(): void;
};

export function createOutcomeWriter(db: Kysely<Database>, defaultWindowMs: number): OutcomeWriter {
  // (one FIFO per window: the first due is known without a look at every outcome waiting)
  const pending = new DueQueues<{ o: AttemptOutcome; resolve: () => void; reject: (e: unknown) => void }>();
  let writing = false;
  let hurried = false;
  /** The flush to come, and when (setImmediate for what is due already: the outcomes of this turn go together). */
  let timer: { at: number; cancel(): void } | undefined;
  const firstDue = () => (hurried ? 0 : pending.firstDue());
  const arm = () => {
    if (writing || pending.size === 0) return;
    if (pending.size >= FLUSH_ROWS) return void flush();
    const at = firstDue();
    if (timer && timer.at <= at) return;
    timer?.cancel();
    const wait = at - Date.now();
    if (wait > 0) {
      const t = setTimeout(() => void flush(), wait);
      timer = { at, cancel: () => clearTimeout(t) };
    } else {
      const i = setImmediate(() => void flush());
      timer = { at, cancel: () => clearImmediate(i) };
    }
  };
  const flush = async () => {
    timer?.cancel();
    timer = undefined;
    if (writing) return;
    writing = true;
    // (what became due while a statement ran goes at once, with everything else waiting)
    while (pending.size >= FLUSH_ROWS || (pending.size > 0 && firstDue() <= Date.now())) {
      const batch = pending.take(FLUSH_ROWS);
      try {
        await recordOutcomes(
          db,
          batch.map((p) => p.o),
        );
        for (const p of batch) p.resolve();
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    writing = false;
    arm();
  };
  return {
    record: (o, windowMs = defaultWindowMs) =>
      new Promise<void>((resolve, reject) => {
        pending.push({ o, resolve, reject }, windowMs, Date.now());
        arm();
      }),
    hurry() {
      hurried = true;
      arm();
    },
  };
}
