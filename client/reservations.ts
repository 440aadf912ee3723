/**
 * Client-side reservation of unspent outputs, so that concurrent builders of one client never
 * select the same output. Selection filters out reserved outpoints and reserves its choice in the
 * same synchronous step, so no await can interleave. A reservation is released when building or
 * sending fails, and kept for `spentTtlMs` after a successful broadcast (until the index shows
 * the outputs spent).
 * @module
 */

/** `txid:vout`. */
export type Outpoint = string;

/** The outpoint key of an output. */
export function outpoint(txid: string, vout: number): Outpoint {
  return `${txid}:${vout}`;
}

/** A held set of outpoints. */
export type Reservation = {
  readonly outpoints: readonly Outpoint[];
  /** Gives the outpoints back (building or sending failed). Idempotent. */
  release(): void;
  /** The outputs were spent by a broadcast transaction: keep them reserved for the TTL, then forget them. */
  commit(): void;
};

/** The reservation book of one client. */
export class Reservations {
  private readonly held = new Map<Outpoint, { until: number }>();
  /**
   * @param spentTtlMs - how long committed (spent) outpoints stay excluded (default 10 min); the
   *   index lists a spent output as spent once it has seen the spending transaction.
   * @param now - clock, for tests.
   */
  constructor(
    readonly spentTtlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when `op` is held. */
  isReserved(op: Outpoint): boolean {
    const h = this.held.get(op);
    if (!h) return false;
    if (h.until <= this.now()) {
      this.held.delete(op);
      return false;
    }
    return true;
  }

  /** The outpoints currently held. */
  list(): Outpoint[] {
    return [...this.held.keys()].filter((op) => this.isReserved(op));
  }

  /**
   * Reserves `ops` (all or none). @throws Error if any is already held — callers filter with
   * `isReserved` and reserve in the same synchronous step.
   */
  reserve(ops: readonly Outpoint[]): Reservation {
    for (const op of ops) if (this.isReserved(op)) throw new Error(`Output ${op} is already reserved`);
    for (const op of ops) this.held.set(op, { until: Number.POSITIVE_INFINITY });
    let done = false;
    return {
      outpoints: [...ops],
      release: () => {
        if (done) return;
        done = true;
        for (const op of ops) this.held.delete(op);
      },
      commit: () => {
        if (done) return;
        done = true;
        const until = this.now() + this.spentTtlMs;
        for (const op of ops) this.held.set(op, { until });
      },
    };
  }
}
