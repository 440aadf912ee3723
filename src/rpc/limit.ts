/**
 * A concurrency cap: at most `max` tasks in flight, the rest wait in FIFO order. The node
 * clients use it so Blockwire never has more than a handful of requests open against bitcoind
 *.
 * @module
 */

/** Runs tasks with at most `max` in flight. */
export class ConcurrencyLimit {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private peak = 0;

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`concurrency limit must be a positive integer, got ${max}`);
  }

  /** Tasks running now. */
  get inFlight(): number {
    return this.active;
  }

  /** The most tasks ever in flight at once (for tests and metrics). */
  get maxObserved(): number {
    return this.peak;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its slot straight to the next waiter, so `active` never exceeds max.
    if (this.active < this.max) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.active > this.peak) this.peak = this.active;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
