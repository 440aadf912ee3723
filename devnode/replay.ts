/**
 * Replays a recorded chain, a directory holding `blocks.jsonl`
 * (every block, main and stale, raw) and `zmq-sequence.jsonl`, whose `C`/`D` lines give the
 * order in which the recording node connected and disconnected blocks. Each event is applied as
 * the node applied it (disconnected transactions return to the mempool, connected blocks remove
 * theirs), so the same reorgs happen again and the replay ends on exactly the recorded chain.
 * @module
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { hashToHex, hexToBytes } from '../src/bitcoin/hash.js';
import type { Node } from './node.js';

export type ReplayEvent = { label: 'C' | 'D'; hash: string };

/** A loaded recording. */
export type ReplayPlan = {
  blocks: Map<string, DecodedBlock>;
  events: ReplayEvent[];
  /** The recorded final tip (the highest main block). */
  final: { height: number; hash: string };
  /** Largest block time, to keep the node clock near the recording. */
  maxTime: number;
};

/** Reads `blocks.jsonl` and the C/D lines of `zmq-sequence.jsonl` from `dir`. */
export function loadReplay(dir: string): ReplayPlan {
  const blocks = new Map<string, DecodedBlock>();
  let final = { height: -1, hash: '' };
  let maxTime = 0;
  for (const line of readFileSync(join(dir, 'blocks.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const rec = JSON.parse(line) as { height: number; hash: string; main: boolean; hex: string };
    const block = decodeBlock(hexToBytes(rec.hex));
    blocks.set(rec.hash, block);
    maxTime = Math.max(maxTime, block.header.time);
    if (rec.main && rec.height > final.height) final = { height: rec.height, hash: rec.hash };
  }
  const events: ReplayEvent[] = [];
  for (const line of readFileSync(join(dir, 'zmq-sequence.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const rec = JSON.parse(line) as { hash: string; label: string };
    if (rec.label === 'C' || rec.label === 'D') events.push({ label: rec.label, hash: rec.hash });
  }
  return { blocks, events, final, maxTime };
}

/** Applies one event to the node; `persist` records what happened (for --data-dir). */
export function applyReplayEvent(
  node: Node,
  plan: ReplayPlan,
  ev: ReplayEvent,
  persist: (op: { kind: 'replay-connect'; raw: Uint8Array } | { kind: 'replay-disconnect' }) => void,
): void {
  const chain = node.chain;
  if (ev.label === 'D') {
    const e = chain.get(ev.hash);
    if (!e || !chain.contains(e) || e.height === 0) return;
    while (chain.contains(e)) {
      node.replayDisconnect();
      persist({ kind: 'replay-disconnect' });
    }
    return;
  }
  const known = chain.get(ev.hash);
  if (known && chain.contains(known)) return;
  const block = plan.blocks.get(ev.hash);
  if (!block) throw new Error(`replay: block ${ev.hash} is not in blocks.jsonl`);
  // Connect missing ancestors first (a recording that starts late, or lost C lines).
  const path: DecodedBlock[] = [block];
  for (let prev = prevOf(block); ;) {
    const e = chain.get(prev);
    if (e && chain.contains(e)) {
      while (chain.tip() !== e) {
        node.replayDisconnect();
        persist({ kind: 'replay-disconnect' });
      }
      break;
    }
    const b = plan.blocks.get(prev);
    if (!b) throw new Error(`replay: ancestor ${prev} of ${ev.hash} is unknown`);
    path.unshift(b);
    prev = prevOf(b);
  }
  for (const b of path) {
    node.replayConnect(b);
    persist({ kind: 'replay-connect', raw: b.bytes });
  }
}

function prevOf(block: DecodedBlock): string {
  return hashToHex(block.header.prevHash);
}

/** Steps through a plan at a pace, all at once, or on request. */
export class Replayer {
  private applied = 0;
  private timer: NodeJS.Timeout | null = null;
  private resolveDone!: () => void;
  private rejectDone!: (err: unknown) => void;
  readonly done: Promise<void>;

  constructor(
    private readonly node: Node,
    private readonly plan: ReplayPlan,
    private readonly persist: Parameters<typeof applyReplayEvent>[3],
    private readonly onError: (err: unknown) => void,
    /** Called after each event applied, with the node's tip then. */
    private readonly onEvent: (ev: ReplayEvent, tip: { height: number; hash: string }) => void = () => {},
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  position(): { applied: number; total: number } {
    return { applied: this.applied, total: this.plan.events.length };
  }

  /** Applies the next `n` events; returns how many were applied. */
  step(n = 1): number {
    let k = 0;
    // The recording comes from a real node: returning its transactions to the mempool needs no
    // second signature check.
    const verify = this.node.verifyScripts;
    this.node.verifyScripts = false;
    try {
      while (k < n && this.applied < this.plan.events.length) {
        const ev = this.plan.events[this.applied]!;
        applyReplayEvent(this.node, this.plan, ev, this.persist);
        this.applied++;
        const tip = this.node.chain.tip();
        this.onEvent(ev, { height: tip.height, hash: tip.hash });
        k++;
      }
    } catch (err) {
      this.stop();
      this.rejectDone(err);
      this.onError(err);
      throw err;
    } finally {
      this.node.verifyScripts = verify;
    }
    if (this.applied === this.plan.events.length) {
      this.stop();
      this.resolveDone();
    }
    return k;
  }

  /** Marks the whole recording as applied without applying it (a data dir already holds its chain). */
  markDone(): void {
    this.applied = this.plan.events.length;
    this.stop();
    this.resolveDone();
  }

  /** Everything that is left. */
  runAll(): void {
    this.step(Number.MAX_SAFE_INTEGER);
  }

  /** `eventsPerSecond` events per second in the background. */
  startPaced(eventsPerSecond: number): void {
    const interval = Math.max(1, Math.round(1000 / eventsPerSecond));
    const perTick = Math.max(1, Math.round((eventsPerSecond / 1000) * interval));
    this.timer = setInterval(() => {
      try {
        this.step(perTick);
      } catch {
        // reported through onError and `done`
      }
    }, interval);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
