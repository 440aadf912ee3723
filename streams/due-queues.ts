/**
 * Items that wait until a due time, kept as one FIFO per window (due = when pushed + its window):
 * with the clock going forward, each FIFO is in due order by itself, so the first due is the
 * smallest of the FIFOs' heads, and the items due first are taken by merging those heads. A push
 * and the first due cost O(windows), a take O(windows) per run of items one FIFO gives in a row,
 * for the few windows a caller uses (the outcome writer: a delivery's own job, a batch's
 * deliveries) — never a scan of everything waiting. A clock that steps back (a due smaller than
 * its FIFO's last) only delays that item behind the ones pushed before it in its window.
 * @module
 */

type Fifo<T> = { items: { due: number; value: T }[]; head: number };

/** Taken items leave a FIFO's array for good once this many and half of it are taken. */
const COMPACT_AT = 1024;

export class DueQueues<T> {
  readonly #fifos = new Map<number, Fifo<T>>();
  #size = 0;

  /** Items waiting. */
  get size(): number {
    return this.#size;
  }

  /** Adds `value`, due `windowMs` after `now`. */
  push(value: T, windowMs: number, now: number): void {
    let fifo = this.#fifos.get(windowMs);
    if (!fifo) this.#fifos.set(windowMs, (fifo = { items: [], head: 0 }));
    fifo.items.push({ due: now + windowMs, value });
    this.#size += 1;
  }

  /** When the first item waiting is due (Infinity: none waits). */
  firstDue(): number {
    let due = Infinity;
    for (const f of this.#fifos.values()) {
      const d = f.items[f.head]!.due;
      if (d < due) due = d;
    }
    return due;
  }

  /**
   * Takes up to `n` items, the first due first: from the FIFO with the first due head, every item
   * due no later than the other FIFOs' first head (one look at the heads per run, not per item).
   */
  take(n: number): T[] {
    const out: T[] = [];
    while (out.length < n && this.#size > 0) {
      let first: Fifo<T> | undefined;
      let firstWindow = 0;
      let firstDue = Infinity;
      // (the first due of every other FIFO's head: the run taken from `first` stops there)
      let others = Infinity;
      for (const [w, f] of this.#fifos) {
        const d = f.items[f.head]!.due;
        if (d < firstDue) {
          others = firstDue;
          first = f;
          firstWindow = w;
          firstDue = d;
        } else if (d < others) others = d;
      }
      const fifo = first!;
      const items = fifo.items;
      let head = fifo.head;
      do out.push(items[head++]!.value);
      while (out.length < n && head < items.length && items[head]!.due <= others);
      this.#size -= head - fifo.head;
      fifo.head = head;
      if (head === items.length) this.#fifos.delete(firstWindow);
      else if (head >= COMPACT_AT && head * 2 >= items.length) {
        fifo.items = items.slice(head);
        fifo.head = 0;
      }
    }
    return out;
  }
}
