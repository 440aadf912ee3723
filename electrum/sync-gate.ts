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

  /** Reads the node's tip once, then every pollMs. */
  async start(): Promise<void> {
    await this.poll();
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
        if (!this.failing) this.deps.log.warn({ err }, 'electrum: cannot read the node\'s tip; answering without the sync check');
        this.failing = true;
        this.nodeAt = undefined;
      })
      .finally(() => (this.polling = undefined));
    return this.polling;
  }
}
