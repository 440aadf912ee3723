/**
 * The phases of the indexer's writes, timed one way: a `PhaseTimer` per write (a block applied
 * or undone, a bulk batch, a part of the bulk finish) whose `lap(name)` ends a phase. Each lap
 * goes to the process's listeners (`PhaseFeed`): the metrics registry turns them into the
 * `blockwire_indexer_phase_seconds{path, phase}` histogram (cli/ops/metrics.ts), so the live
 * block's profile is read from /metrics; the timer's `ms` map feeds the debug log lines.
 * @module
 */

/** Which write a phase belongs to. */
export type WritePath = 'apply' | 'undo' | 'bulk_batch' | 'bulk_finish';

export type PhaseListener = (path: WritePath, phase: string, seconds: number) => void;

/** The phase listeners of one indexer (the metrics of its process subscribe). */
export class PhaseFeed {
  private readonly listeners = new Set<PhaseListener>();

  /** Adds a listener; returns its removal. */
  on(listener: PhaseListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  readonly emit: PhaseListener = (path, phase, seconds) => {
    for (const l of this.listeners) l(path, phase, seconds);
  };
}

/** Times the consecutive phases of one write from its creation. */
export class PhaseTimer {
  /** Milliseconds per phase, rounded (for log lines). */
  readonly ms: Record<string, number> = {};
  private last = performance.now();

  /**
   * `shares`: how many blocks the write holds (several blocks written with one set of
   * statements): each lap goes to the listener as that many equal shares, so a histogram of
   * `apply` counts one observation per block whatever the write that held it.
   */
  constructor(
    private readonly path: WritePath,
    private readonly listener?: PhaseListener,
    private readonly shares = 1,
  ) {}

  /** Ends the current phase as `phase`: the time since the previous lap (or the start), added to the phase's earlier laps. */
  lap(phase: string): void {
    const now = performance.now();
    const d = now - this.last;
    this.last = now;
    this.ms[phase] = (this.ms[phase] ?? 0) + Math.round(d);
    for (let i = 0; i < this.shares; i++) this.listener?.(this.path, phase, d / this.shares / 1000);
  }
}
