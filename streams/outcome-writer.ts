/**
 * Group commit of attempt outcomes: one UPDATE of the delivery log for many deliveries, instead
 * of one each. An outcome waits at most `windowMs` for others to join it (fewer statements, each
 * with more rows: a PostgreSQL statement costs a fixed part besides its rows, and every commit
 * an fsync); one statement runs at a time, and what arrives while it runs goes into the next, so
 * the busier the worker the more rows each statement carries (and no two of this process's
 * statements wait on each other's locks of the per-minute counts). Each `record` resolves once
 * its row is written, so a job still ends only after its log row.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { recordOutcomes, type AttemptOutcome } from '../src/db/queries/tenancy-deliveries.js';

/** Outcomes written in one statement at most (more are written at once, without waiting out the window). */
const FLUSH_ROWS = 500;

/** `fn` after `ms`, or with 0 after this turn of the event loop (the outcomes it produced go together). */
function later(fn: () => void, ms: number): { cancel(): void } {
  if (ms > 0) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  }
  const i = setImmediate(fn);
  return { cancel: () => clearImmediate(i) };
}

/**
 * `record(outcome)` resolves once the outcome is in the log (rejects when its statement failed).
 * `windowMs` 0: the outcomes of one turn of the event loop go together.
 */
export function createOutcomeWriter(db: Kysely<Database>, windowMs: number): (o: AttemptOutcome) => Promise<void> {
  const pending: { o: AttemptOutcome; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let writing = false;
  let timer: { cancel(): void } | undefined;
  const flush = async () => {
    timer?.cancel();
    timer = undefined;
    if (writing) return;
    writing = true;
    // (what waited while a statement ran goes at once: it has waited at least that long)
    while (pending.length > 0) {
      const batch = pending.splice(0, FLUSH_ROWS);
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
  };
  return (o: AttemptOutcome) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ o, resolve, reject });
      if (writing) return;
      if (pending.length >= FLUSH_ROWS) void flush();
      else if (timer === undefined) timer = later(() => void flush(), windowMs);
    });
}
