/**
 * The node: Core's validation flow over the chain and the mempool, and the validation signals
 * in Core's order. ProcessNewBlock checks and stores a block, then ActivateBestChain moves to
 * the most-work valid chain: disconnect to the fork (`blockDisconnected`), connect up the new
 * branch (removing mined and conflicting mempool transactions), return disconnected
 * transactions to the mempool, then `blockConnected` per block and one `updatedBlockTip` per
 * step. InvalidateBlock disconnects block by block, updating the mempool after each.
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { DecodedTx } from '../src/bitcoin/tx.js';
import type { Logger } from '../src/log.js';
import { checkBlock, contextualCheckBlock } from './block-check.js';
import { BlockInvalid, Chain, isFinalTx, outpointKey, prevTxidOf, txidOf, type BlockEntry, type ScriptChecker } from './chain.js';
import { REGTEST } from './consensus.js';
import { Mempool, type MempoolEntry, type RemovalReason } from './mempool.js';
import { acceptToMempool, type AcceptOptions, type TxAccepted, type TxRejected } from './mempool-accept.js';
import { verifyTxScripts } from './script-verify.js';

/** Validation signals, in the order Core's CValidationInterface delivers them. */
export type NodeSignals = {
  txAdded(entry: MempoolEntry, mempoolSequence: bigint): void;
  txRemoved(entry: MempoolEntry, reason: RemovalReason, mempoolSequence: bigint): void;
  blockConnected(entry: BlockEntry): void;
  blockDisconnected(entry: BlockEntry): void;
  /** A new tip after a step; `ibd` true while in initial block download (ZMQ stays quiet then). */
  updatedBlockTip(tip: BlockEntry, fork: BlockEntry, ibd: boolean): void;
};

export type NodeOptions = {
  genesis: DecodedBlock;
  verifyScripts: boolean;
  fullRbf?: boolean;
  log: Logger;
};

/** Result of ProcessNewBlock as `submitblock` reports it. */
export type BlockResult =
  | { status: 'accepted'; entry: BlockEntry }
  | { status: 'duplicate' | 'duplicate-invalid' | 'inconclusive'; entry: BlockEntry }
  | { status: 'invalid'; reason: string; debug: string };

export class Node {
  readonly chain: Chain;
  readonly mempool: Mempool;
  verifyScripts: boolean;
  fullRbf: boolean;
  private readonly log: Logger;
  private signals: NodeSignals | null = null;
  private mockTime: number | null = null;
  private clockOffset = 0;
  private ibdDone = false;
  private readonly failReasons = new Map<BlockEntry, BlockInvalid>();
  /** Replay: the tip before the current run of disconnects (hashblock waits until we pass it). */
  private replayStartTip: BlockEntry | null = null;
  /** First height whose block confirmed mempool transactions (fee estimator's firstRecordedHeight). */
  firstRecordedHeight = 0;

  constructor(opts: NodeOptions) {
    this.verifyScripts = opts.verifyScripts;
    this.fullRbf = opts.fullRbf ?? true;
    this.log = opts.log;
    this.mempool = new Mempool({
      added: (e, s) => this.signals?.txAdded(e, s),
      removed: (e, r, s) => this.signals?.txRemoved(e, r, s),
    });
    this.chain = new Chain(opts.genesis);
  }

  /** Where validation signals go (the ZMQ notifier). */
  setSignals(signals: NodeSignals | null): void {
    this.signals = signals;
  }

  /** Node time in seconds: mock time when set (`setmocktime`), else the wall clock plus an offset. */
  now(): number {
    return this.mockTime ?? Math.floor(Date.now() / 1000) + this.clockOffset;
  }

  setMockTime(t: number | null): void {
    this.mockTime = t && t > 0 ? t : null;
  }

  /** Shifts the node clock (replay of an old chain stays out of initial block download). */
  setClockOffset(seconds: number): void {
    this.clockOffset = seconds;
  }

  /** IsInitialBlockDownload: the tip is older than 24 h; latches to false once left. */
  isInitialBlockDownload(): boolean {
    if (this.ibdDone) return false;
    if (this.chain.tip().block.header.time < this.now() - REGTEST.maxTipAgeSeconds) return true;
    this.ibdDone = true;
    return false;
  }

  private scriptChecker(): ScriptChecker | null {
    if (!this.verifyScripts) return null;
    return (tx, prevouts) => verifyTxScripts(tx, prevouts)?.error ?? null;
  }

  /** AcceptToMemoryPool with the node's settings. */
  acceptTx(tx: DecodedTx, opts: AcceptOptions = {}): TxAccepted | TxRejected {
    return acceptToMempool(
      {
        chain: this.chain,
        mempool: this.mempool,
        now: () => this.now(),
        verifyScripts: this.verifyScripts,
        fullRbf: this.fullRbf,
        onUnchecked: (txid, inputs) =>
          this.log.debug({ txid, inputs }, 'devnode: input scripts outside the checked templates accepted unevaluated'),
      },
      tx,
      opts,
    );
  }

  /** The reason a block failed to connect, if it did. */
  failReason(entry: BlockEntry): BlockInvalid | undefined {
    return this.failReasons.get(entry);
  }

  /** ProcessNewBlock: checks, stores and (if it leads to the most work) connects a block. */
  processBlock(block: DecodedBlock, opts: { checkTime?: boolean; checkScripts?: boolean } = {}): BlockResult {
    const known = this.chain.get(hashHex(block));
    if (known) {
      if (known.failed !== 'no') return { status: 'duplicate-invalid', entry: known };
      this.activateBestChain(opts.checkScripts);
      return { status: 'duplicate', entry: known };
    }
    const prev = this.chain.get(prevHex(block));
    if (!prev) return { status: 'invalid', reason: 'prev-blk-not-found', debug: '' };
    if (prev.failed !== 'no') return { status: 'invalid', reason: 'bad-prevblk', debug: '' };
    try {
      checkBlock(block);
      contextualCheckBlock(block, prev, opts.checkTime === false ? null : this.now());
    } catch (err) {
      if (err instanceof BlockInvalid) return { status: 'invalid', reason: err.reason, debug: err.debug };
      throw err;
    }
    const entry = this.chain.addBlock(block);
    this.activateBestChain(opts.checkScripts);
    if (entry.failed === 'self') {
      const why = this.failReasons.get(entry);
      return { status: 'invalid', reason: why?.reason ?? 'invalid', debug: why?.debug ?? '' };
    }
    return entry.everConnected ? { status: 'accepted', entry } : { status: 'inconclusive', entry };
  }

  /** CBlockIndexWorkComparator: more work wins; equal work, the first received. */
  private better(a: BlockEntry, b: BlockEntry): boolean {
    if (a.chainwork !== b.chainwork) return a.chainwork > b.chainwork;
    return a.seq < b.seq;
  }

  /** The tip of the most-work chain made only of valid, unparked blocks. */
  private findMostWork(): BlockEntry {
    let best = this.chain.tip();
    for (const leaf of this.chain.leaves) {
      // Walk down to the highest block whose whole branch (down to the active chain) is usable.
      let cand: BlockEntry | null = leaf;
      for (let p: BlockEntry | null = leaf; p && !this.chain.contains(p); p = p.prev) {
        if (p.failed !== 'no' || p.parked) cand = p.prev;
      }
      if (cand && this.better(cand, best)) best = cand;
    }
    return best;
  }

  /** ActivateBestChain. */
  activateBestChain(checkScripts = true): void {
    for (;;) {
      const startingTip = this.chain.tip();
      let connected = false;
      do {
        const cand = this.findMostWork();
        if (cand === this.chain.tip()) break;
        this.activateStep(cand, checkScripts);
        connected = true;
      } while (this.better(startingTip, this.chain.tip()));
      if (!connected) return;
      const tip = this.chain.tip();
      const fork = this.chain.findFork(startingTip);
      if (fork !== tip) this.signals?.updatedBlockTip(tip, fork, this.isInitialBlockDownload());
      if (this.findMostWork() === tip) return;
    }
  }

  /** ActivateBestChainStep: disconnect to the fork, connect towards `target` until better than before. */
  private activateStep(target: BlockEntry, checkScripts: boolean): void {
    const oldTip = this.chain.tip();
    const fork = this.chain.findFork(target);
    const disconnected: DecodedTx[][] = [];
    while (this.chain.tip() !== fork) {
      const e = this.chain.disconnectTip();
      this.signals?.blockDisconnected(e);
      disconnected.unshift([...e.block.txs]);
    }
    const path: BlockEntry[] = [];
    for (let e: BlockEntry | null = target; e && e !== fork; e = e.prev) path.unshift(e);
    const connected: BlockEntry[] = [];
    for (const e of path) {
      try {
        this.chain.connectTip(e, checkScripts ? this.scriptChecker() : null);
      } catch (err) {
        if (!(err instanceof BlockInvalid)) throw err;
        this.markFailed(e, err);
        break;
      }
      this.afterConnect(e, disconnected);
      connected.push(e);
      if (e.chainwork > oldTip.chainwork) break;
    }
    if (disconnected.length) this.updateMempoolForReorg(disconnected.flat(), true);
    for (const e of connected) this.signals?.blockConnected(e);
  }

  private afterConnect(e: BlockEntry, disconnectPool: DecodedTx[][] | null): void {
    const txs = e.block.txs;
    if (this.firstRecordedHeight === 0 && txs.some((t) => this.mempool.has(txidOf(t)))) this.firstRecordedHeight = e.height;
    this.mempool.removeForBlock(txs);
    if (disconnectPool) {
      const mined = new Set(txs.map(txidOf));
      for (const list of disconnectPool) {
        for (let i = list.length - 1; i >= 0; i--) if (mined.has(txidOf(list[i]!))) list.splice(i, 1);
      }
    }
  }

  private markFailed(e: BlockEntry, why: BlockInvalid): void {
    e.failed = 'self';
    this.failReasons.set(e, why);
    for (const d of this.chain.descendants(e)) if (d.failed === 'no') d.failed = 'child';
    this.log.info({ hash: e.hash, reason: why.message }, 'devnode: block failed to connect');
  }

  /**
   * MaybeUpdateMempoolForReorg: return disconnected transactions to the mempool (oldest block
   * first, no fee checks), drop what no longer fits, then remove mempool transactions that are
   * no longer final or spend a coinbase that is no longer mature.
   */
  private updateMempoolForReorg(txs: DecodedTx[], addToMempool: boolean): void {
    for (const tx of txs) {
      const txid = txidOf(tx);
      if (tx.isCoinbase || !addToMempool) {
        this.mempool.removeRecursive(txid, 'reorg');
        continue;
      }
      if (this.mempool.has(txid)) continue;
      const r = this.acceptTx(tx, { bypassLimits: true });
      if (!r.ok) this.mempool.removeRecursive(txid, 'reorg');
    }
    const tip = this.chain.tip();
    const next = tip.height + 1;
    for (const e of this.mempool.all()) {
      if (!this.mempool.has(e.txid)) continue;
      let drop = !isFinalTx(e.tx, next, tip.mtp);
      for (let i = 0; !drop && i < e.tx.inputs.length; i++) {
        const coin = this.chain.utxo.get(outpointKey(prevTxidOf(e.tx, i), e.tx.inputs[i]!.vout));
        if (coin?.coinbase && next - coin.height < REGTEST.coinbaseMaturity) drop = true;
      }
      if (drop) this.mempool.removeRecursive(e.txid, 'reorg');
    }
  }

  /** InvalidateBlock followed by ActivateBestChain, as the `invalidateblock` RPC does. */
  invalidateBlock(entry: BlockEntry): void {
    let disconnected = 0;
    while (this.chain.contains(entry) && entry.height > 0) {
      const e = this.chain.disconnectTip();
      e.failed = e === entry ? 'self' : 'child';
      this.signals?.blockDisconnected(e);
      this.updateMempoolForReorg([...e.block.txs], ++disconnected <= 10);
    }
    entry.failed = 'self';
    this.failReasons.set(entry, new BlockInvalid('invalidated', 'invalidateblock'));
    for (const d of this.chain.descendants(entry)) d.failed = 'child';
    this.activateBestChain();
  }

  /** ResetBlockFailureFlags on the block, its ancestors and descendants, then ActivateBestChain. */
  reconsiderBlock(entry: BlockEntry): void {
    for (let p: BlockEntry | null = entry; p; p = p.prev) {
      if (p.failed !== 'no') {
        p.failed = 'no';
        this.failReasons.delete(p);
      }
    }
    for (const d of this.chain.descendants(entry)) {
      d.failed = 'no';
      this.failReasons.delete(d);
    }
    this.activateBestChain();
  }

  /** Replay: disconnects the tip (parked, not invalid) and updates the mempool as Core does. */
  replayDisconnect(): BlockEntry {
    this.replayStartTip ??= this.chain.tip();
    const e = this.chain.disconnectTip();
    e.parked = true;
    this.signals?.blockDisconnected(e);
    this.updateMempoolForReorg([...e.block.txs], true);
    return e;
  }

  /** Replay: connects a block on the tip (no time or script checks: it came from a real node). */
  replayConnect(block: DecodedBlock): BlockEntry {
    const known = this.chain.get(hashHex(block));
    if (!known) {
      const prev = this.chain.get(prevHex(block));
      if (!prev) throw new BlockInvalid('prev-blk-not-found', `replay: parent ${prevHex(block)} unknown`);
      checkBlock(block);
      contextualCheckBlock(block, prev, null);
    }
    const entry = known ?? this.chain.addBlock(block);
    entry.parked = false;
    this.chain.connectTip(entry, null);
    this.afterConnect(entry, null);
    this.signals?.blockConnected(entry);
    const start = this.replayStartTip;
    if (!start || entry.chainwork > start.chainwork) {
      this.replayStartTip = null;
      this.signals?.updatedBlockTip(entry, entry.prev!, this.isInitialBlockDownload());
    }
    return entry;
  }

  /** Core's getchaintips statuses. */
  chainTips(): { height: number; hash: string; branchlen: number; status: string }[] {
    const tips: BlockEntry[] = [this.chain.tip()];
    for (const b of this.chain.leaves) if (!this.chain.contains(b)) tips.push(b);
    tips.sort((a, b) => b.height - a.height || a.seq - b.seq);
    return tips.map((b) => {
      const fork = this.chain.findFork(b);
      let status: string;
      if (this.chain.contains(b)) status = 'active';
      else if (b.failed !== 'no') status = 'invalid';
      else if (b.everConnected) status = 'valid-fork';
      else status = 'valid-headers';
      return { height: b.height, hash: b.hash, branchlen: b.height - fork.height, status };
    });
  }
}

function hashHex(block: DecodedBlock): string {
  return hashToHex(block.hash);
}

function prevHex(block: DecodedBlock): string {
  return hashToHex(block.header.prevHash);
}
