/**
 * Whether the index is close enough to the node's tip for Electrum answers to be final: the
 * node's block count, read every `pollMs` (and once before the listeners open), against the
 * indexed tip the tracker follows. While the index is more than `maxLagBlocks` behind, the
 * methods that read the chain or the index are refused (methods.ts) — a wallet must not take a
 * status computed from a half-built index for its final state. A node that does not answer
 * leaves the gate as the index alone can tell (open): its outage is reported by the requests
 * that need it.
 * @module
 */
import type { Logger } from '../src/log.js';

export type SyncGateDeps = {
  /** The node's block count (getblockcount). */
  nodeHeight(): Promise<number>;
  /** The indexed tip's height (-1 when nothing is indexed). */
  indexHeight(): number;
  maxLagBlocks: number;
  pollMs: number;
  log: Logger;
};

export class SyncGate {
  private nodeAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private failing = false;
  private stopped = false;

  constructor(private readonly deps: SyncGateDeps) {}

  /** Reads the node's tip once (waiting at most 10 s: a stalled node must not hold the listeners for good), then every pollMs. */
  async start(): Promise<void> {
    await this.atMost(10_000, this.poll());
    const loop = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.poll().finally(loop), this.deps.pollMs);
      this.timer.unref();
    };
    loop();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The node's block count read now (undefined when it does not answer within 5 s). */
  async nodeHeightNow(): Promise<number | undefined> {
    return (await this.atMost(5000, this.poll())) ? this.nodeAt : undefined;
  }

  /** Whether `work` settled within `ms`. */
  private async atMost(ms: number, work: Promise<void>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const done = await Promise.race([work.then(() => true as const), late]);
    clearTimeout(timer);
    return done;
  }

  /** Undefined when answers are final; else what to tell the client. */
  behind(): string | undefined {
    const node = this.nodeAt;
    const index = this.deps.indexHeight();
    if (node === undefined || node - index <= this.deps.maxLagBlocks) return undefined;
    return `still catching up with the node: the index is at height ${index}, the node at ${node}; try again shortly`;
  }

  private poll(): Promise<void> {
    this.polling ??= this.deps
      .nodeHeight()
      .then((h) => {
        this.nodeAt = h;
        this.failing = false;
      })
      .catch((err: unknown) => {
        if (!this.failing) this.deps.log.warn({ err }, "electrum: cannot read the node's tip; answering without the sync check");
        this.failing = true;
        this.nodeAt = undefined;
      })
      .finally(() => (this.polling = undefined));
    return this.polling;
  }
}
