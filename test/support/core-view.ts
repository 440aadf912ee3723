/**
 * What a real bitcoind says, kept for comparing an index with it: blocks as `getblock` verbosity
 * 3 gives them (every input's spent output; cached by hash, so a block that later left the chain
 * — or that a kill -9 took from the node — is still known), the active chain, the mempool's
 * transactions decoded, and per output script the transactions of the active chain and of the
 * mempool that pay to it or spend from it.
 */
import { btcToSats } from '../../src/rpc/types.js';
import type { Bitcoind } from './bitcoind.js';

export type TxOut = { script: string; value: bigint };
/** An input: the outpoint it spends and, when known, that output. */
export type TxIn = { txid: string; vout: number; prev: TxOut | null };
export type TxView = { txid: string; ins: TxIn[]; outs: TxOut[] };
export type BlockView = { hash: string; height: number; prev: string | null; time: number; size: number; weight: number; txs: TxView[] };

type VerboseTx = {
  txid: string;
  vin: { txid?: string; vout?: number; coinbase?: string; prevout?: { value: number; scriptPubKey: { hex: string } } }[];
  vout: { value: number; scriptPubKey: { hex: string } }[];
};

export class CoreView {
  readonly blocks = new Map<string, BlockView>();
  readonly txs = new Map<string, TxView>();

  constructor(private readonly node: Bitcoind) {}

  private addTx(t: VerboseTx): TxView {
    const outs = t.vout.map((o) => ({ script: o.scriptPubKey.hex, value: btcToSats(o.value) }));
    const ins = t.vin
      .filter((i) => i.coinbase === undefined)
      .map((i) => ({
        txid: i.txid!,
        vout: i.vout!,
        prev: i.prevout ? { script: i.prevout.scriptPubKey.hex, value: btcToSats(i.prevout.value) } : null,
      }));
    const v = { txid: t.txid, ins, outs };
    this.txs.set(t.txid, v);
    return v;
  }

  /** The block, from the cache or `getblock <hash> 3`. */
  async block(hash: string): Promise<BlockView> {
    const known = this.blocks.get(hash);
    if (known) return known;
    const b = await this.node.call<{
      hash: string;
      height: number;
      previousblockhash?: string;
      time: number;
      size: number;
      weight: number;
      tx: VerboseTx[];
    }>('getblock', [hash, 3]);
    const view = {
      hash,
      height: b.height,
      prev: b.previousblockhash ?? null,
      time: b.time,
      size: b.size,
      weight: b.weight,
      txs: b.tx.map((t) => this.addTx(t)),
    };
    this.blocks.set(hash, view);
    return view;
  }

  /** Fetches blocks just made (before a kill -9 can take them from the node). */
  async remember(hashes: readonly string[]): Promise<void> {
    for (const h of hashes) await this.block(h);
  }

  /** The active chain's block hashes by height (one consistent answer: retried if the tip moved meanwhile). */
  async activeChain(): Promise<string[]> {
    for (;;) {
      const tip = await this.node.call<string>('getbestblockhash');
      const chain: string[] = [];
      let hash: string | null = tip;
      // Walk back through the cache to the first height whose block is the node's there.
      const stack: BlockView[] = [];
      while (hash) {
        const b = await this.block(hash);
        stack.push(b);
        hash = b.prev;
      }
      for (const b of stack.reverse()) chain[b.height] = b.hash;
      if ((await this.node.call<string>('getbestblockhash')) === tip) return chain;
    }
  }

  /** The node's mempool txids, each decoded (inputs' outputs filled from known transactions). */
  async mempool(): Promise<string[]> {
    const txids = await this.node.call<string[]>('getrawmempool');
    for (const txid of txids) {
      if (this.txs.has(txid)) continue;
      try {
        this.addTx(await this.node.call<VerboseTx>('getrawtransaction', [txid, 1]));
      } catch {
        // Left the mempool meanwhile: the caller's next look will not list it.
      }
    }
    return txids;
  }

  /** The output an input spends, when the transaction that made it is known. */
  prevOut(i: TxIn): TxOut | null {
    return i.prev ?? this.txs.get(i.txid)?.outs[i.vout] ?? null;
  }

  /** Sats `tx` pays to `script` and spends from it. */
  amounts(tx: TxView, script: string): { received: bigint; sent: bigint } {
    let received = 0n;
    let sent = 0n;
    for (const o of tx.outs) if (o.script === script) received += o.value;
    for (const i of tx.ins) {
      const p = this.prevOut(i);
      if (p?.script === script) sent += p.value;
    }
    return { received, sent };
  }

  /** Whether `tx` pays to or spends from one of `scripts`. */
  touches(tx: TxView, scripts: ReadonlySet<string>): boolean {
    return tx.outs.some((o) => scripts.has(o.script)) || tx.ins.some((i) => scripts.has(this.prevOut(i)?.script ?? ''));
  }
}
