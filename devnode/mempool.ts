/**
 * The mempool's data: entries in arrival order, which outpoints they spend, their in-mempool
 * parents and children, and Core's mempool sequence number (starts at 1, taken by every addition
 * and every removal, reported with `A`/`R` on the ZMQ `sequence` topic and by
 * `getrawmempool(false, true)`). Admission rules live in mempool-accept.ts.
 * @module
 */
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { outpointKey, prevTxidOf, txidOf, wtxidOf, type Coin } from './chain.js';

/** Why a transaction left the mempool (MemPoolRemovalReason). */
export type RemovalReason = 'expiry' | 'sizelimit' | 'reorg' | 'block' | 'conflict' | 'replaced';

export type MempoolEntry = {
  readonly tx: DecodedTx;
  readonly txid: string;
  readonly wtxid: string;
  readonly fee: bigint;
  readonly vsize: number;
  readonly weight: number;
  /** Entry time (seconds). */
  readonly time: number;
  /** Chain height when it entered. */
  readonly height: number;
  /** Mempool sequence taken when it entered. */
  readonly sequence: bigint;
  readonly sigopsCost: number;
  unbroadcast: boolean;
  readonly parents: Set<string>;
  readonly children: Set<string>;
};

/** Receives additions and non-block removals with their mempool sequence (ZMQ `A`/`R`). */
export type MempoolListener = {
  added(entry: MempoolEntry, sequence: bigint): void;
  removed(entry: MempoolEntry, reason: RemovalReason, sequence: bigint): void;
};

export class Mempool {
  readonly entries = new Map<string, MempoolEntry>();
  /** outpoint key → txid of the mempool transaction spending it (mapNextTx). */
  readonly spenders = new Map<string, string>();
  readonly byWtxid = new Map<string, string>();
  private seq = 1n;

  constructor(private readonly listener: MempoolListener) {}

  /** The next sequence number (what getrawmempool reports as `mempool_sequence`). */
  get sequence(): bigint {
    return this.seq;
  }

  /** Back to 1, as a restart does. */
  resetSequence(): void {
    this.seq = 1n;
  }

  has(txid: string): boolean {
    return this.entries.has(txid);
  }

  get(txid: string): MempoolEntry | undefined {
    return this.entries.get(txid);
  }

  /** An output created by a mempool transaction (as CCoinsViewMemPool sees it; height is the mempool height). */
  coin(txid: string, vout: number, mempoolHeight: number): Coin | undefined {
    const e = this.entries.get(txid);
    const out = e?.tx.outputs[vout];
    return out ? { value: out.value, script: out.script, height: mempoolHeight, coinbase: false } : undefined;
  }

  /** The mempool transaction spending an outpoint, if any. */
  spender(txid: string, vout: number): string | undefined {
    return this.spenders.get(outpointKey(txid, vout));
  }

  /** Adds an entry (without checks) and links it with its in-mempool parents and children. */
  add(init: Omit<MempoolEntry, 'sequence' | 'parents' | 'children'>): MempoolEntry {
    const sequence = this.seq++;
    const entry: MempoolEntry = { ...init, sequence, parents: new Set(), children: new Set() };
    const tx = entry.tx;
    for (let i = 0; i < tx.inputs.length; i++) {
      const ptxid = prevTxidOf(tx, i);
      this.spenders.set(outpointKey(ptxid, tx.inputs[i]!.vout), entry.txid);
      const parent = this.entries.get(ptxid);
      if (parent) {
        entry.parents.add(ptxid);
        parent.children.add(entry.txid);
      }
    }
    // A transaction re-added after a reorg may already have children in the mempool.
    for (let v = 0; v < tx.outputs.length; v++) {
      const child = this.spenders.get(outpointKey(entry.txid, v));
      if (child && child !== entry.txid) {
        entry.children.add(child);
        this.entries.get(child)?.parents.add(entry.txid);
      }
    }
    this.entries.set(entry.txid, entry);
    this.byWtxid.set(entry.wtxid, entry.txid);
    this.listener.added(entry, sequence);
    return entry;
  }

  /** Removes one entry (its children stay); every removal takes a sequence number. */
  remove(txid: string, reason: RemovalReason): void {
    const entry = this.entries.get(txid);
    if (!entry) return;
    const sequence = this.seq++;
    const tx = entry.tx;
    for (let i = 0; i < tx.inputs.length; i++) {
      const key = outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout);
      if (this.spenders.get(key) === txid) this.spenders.delete(key);
    }
    for (const p of entry.parents) this.entries.get(p)?.children.delete(txid);
    for (const c of entry.children) this.entries.get(c)?.parents.delete(txid);
    this.entries.delete(txid);
    this.byWtxid.delete(entry.wtxid);
    if (reason !== 'block') this.listener.removed(entry, reason, sequence);
  }

  /** In-mempool ancestors of `txid` (not itself). */
  ancestors(txid: string): Set<string> {
    return this.walk(txid, (e) => e.parents);
  }

  /** In-mempool descendants of `txid` (not itself). */
  descendants(txid: string): Set<string> {
    return this.walk(txid, (e) => e.children);
  }

  /** Ancestors of a transaction not yet in the mempool. */
  ancestorsOfTx(tx: DecodedTx): Set<string> {
    const out = new Set<string>();
    for (let i = 0; i < tx.inputs.length; i++) {
      const p = prevTxidOf(tx, i);
      if (this.entries.has(p) && !out.has(p)) {
        out.add(p);
        for (const a of this.ancestors(p)) out.add(a);
      }
    }
    return out;
  }

  private walk(txid: string, next: (e: MempoolEntry) => Set<string>): Set<string> {
    const out = new Set<string>();
    const stack = [txid];
    while (stack.length) {
      const e = this.entries.get(stack.pop()!);
      if (!e) continue;
      for (const n of next(e)) {
        if (!out.has(n)) {
          out.add(n);
          stack.push(n);
        }
      }
    }
    return out;
  }

  /** Removes `txid` and everything that descends from it, parents first (removeRecursive). */
  removeRecursive(txid: string, reason: RemovalReason): void {
    if (!this.entries.has(txid)) {
      // Not in the mempool: remove the mempool children spending its outputs (Core does too).
      const e = [...this.spenders.entries()].filter(([k]) => k.startsWith(`${txid}:`)).map(([, v]) => v);
      for (const c of new Set(e)) this.removeRecursive(c, reason);
      return;
    }
    const all = [txid, ...this.descendants(txid)];
    const order = this.topological(all);
    for (const t of order) this.remove(t, reason);
  }

  /** Parents before children. */
  topological(txids: Iterable<string>): string[] {
    const set = new Set(txids);
    const out: string[] = [];
    const seen = new Set<string>();
    const visit = (t: string) => {
      if (seen.has(t)) return;
      seen.add(t);
      const e = this.entries.get(t);
      if (e) for (const p of e.parents) if (set.has(p)) visit(p);
      out.push(t);
    };
    for (const t of set) visit(t);
    return out;
  }

  /**
   * removeForBlock: block transactions leave (reason block, no `R`), then mempool transactions
   * spending the same outpoints leave with their descendants (reason conflict, `R`).
   */
  removeForBlock(txs: readonly DecodedTx[]): void {
    for (const tx of txs) {
      const txid = txidOf(tx);
      if (this.entries.has(txid)) this.remove(txid, 'block');
      for (let i = 0; i < tx.inputs.length; i++) {
        const spender = this.spenders.get(outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout));
        if (spender && spender !== txid) this.removeRecursive(spender, 'conflict');
      }
    }
  }

  /** Entries in arrival order. */
  all(): MempoolEntry[] {
    return [...this.entries.values()];
  }

  /** The wtxid-keyed lookup used to spot resubmissions. */
  txidForWtxid(wtxid: string): string | undefined {
    return this.byWtxid.get(wtxid);
  }
}

/** wtxid helper re-exported for callers that build entries. */
export { wtxidOf };
