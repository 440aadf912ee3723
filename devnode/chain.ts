/**
 * The block tree, the active chain, the UTXO set with per-block undo data, and the transaction
 * index (txid → last block that connected it, kept after a disconnect as Core's txindex does).
 * `connectTip` validates a block against the UTXO set and applies it atomically (nothing changes
 * when it throws); `disconnectTip` restores the set from the block's undo data. Choosing which
 * chain to follow, the mempool and notifications are the node's business (node.ts).
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { blockSubsidy, blockWork, medianTime, REGTEST } from './consensus.js';
import { isUnspendable, sigOpsCost } from './policy.js';
import type { Prevout } from './script-verify.js';

/** An unspent output. */
export type Coin = { value: bigint; script: Uint8Array; height: number; coinbase: boolean };

/** A consensus failure: Core's reject reason and debug message (BlockValidationState). */
export class BlockInvalid extends Error {
  constructor(
    readonly reason: string,
    readonly debug = '',
  ) {
    super(debug ? `${reason}, ${debug}` : reason);
    this.name = 'BlockInvalid';
  }
}

/** One block of the tree (Core's CBlockIndex plus the block data). */
export type BlockEntry = {
  readonly hash: string;
  readonly block: DecodedBlock;
  readonly height: number;
  readonly prev: BlockEntry | null;
  readonly chainwork: bigint;
  /** Arrival order: the first block seen wins between chains of equal work. */
  readonly seq: number;
  /** Median time past of the chain ending at this block. */
  readonly mtp: number;
  /** Transactions in the chain up to and including this block. */
  readonly chainTx: number;
  /** 'valid' | failed itself | an ancestor failed. */
  failed: 'no' | 'self' | 'child';
  /** Connected at least once (Core's BLOCK_VALID_SCRIPTS). */
  everConnected: boolean;
  /** Set aside by a replay: not a candidate for the best chain until connected again. */
  parked: boolean;
  /** Spent coins per non-coinbase transaction, recorded when connected. */
  undo: Coin[][] | null;
};

/** `txid:vout` key of an outpoint given the display-order txid. */
export function outpointKey(txid: string, vout: number): string {
  return `${txid}:${vout}`;
}

const txidCache = new WeakMap<DecodedTx, string>();

/** Display-order txid of a decoded transaction (memoized). */
export function txidOf(tx: DecodedTx): string {
  let s = txidCache.get(tx);
  if (s === undefined) {
    s = hashToHex(tx.txid);
    txidCache.set(tx, s);
  }
  return s;
}

/** Display-order wtxid. */
export function wtxidOf(tx: DecodedTx): string {
  return tx.hasWitness ? hashToHex(tx.wtxid) : txidOf(tx);
}

/** Display-order txid of the output an input spends. */
export function prevTxidOf(tx: DecodedTx, i: number): string {
  return hashToHex(tx.inputs[i]!.prevTxid);
}

type ConnectPlan = { added: Map<string, Coin>; spent: Map<string, Coin>; undo: Coin[][] };

/** Script checker used when connecting blocks: returns Core's error text or null. */
export type ScriptChecker = (tx: DecodedTx, prevouts: Prevout[]) => string | null;

/** IsFinalTx: locktime below the height (or time) it is checked at, or every sequence final. */
export function isFinalTx(tx: DecodedTx, height: number, time: number): boolean {
  if (tx.locktime === 0) return true;
  const limit = tx.locktime < 500_000_000 ? height : time;
  if (tx.locktime < limit) return true;
  return tx.inputs.every((i) => i.sequence === 0xffffffff);
}

export class Chain {
  readonly blocks = new Map<string, BlockEntry>();
  readonly active: BlockEntry[] = [];
  readonly utxo = new Map<string, Coin>();
  readonly txIndex = new Map<string, string>();
  /** Blocks without children: every chain tip of the tree. */
  readonly leaves = new Set<BlockEntry>();
  private nextSeq = 0;

  constructor(genesis: DecodedBlock) {
    const g = this.addBlock(genesis);
    this.connectTip(g, null);
  }

  tip(): BlockEntry {
    return this.active[this.active.length - 1]!;
  }

  height(): number {
    return this.active.length - 1;
  }

  contains(e: BlockEntry): boolean {
    return this.active[e.height] === e;
  }

  get(hash: string): BlockEntry | undefined {
    return this.blocks.get(hash);
  }

  /** Adds a block whose parent is known (or the genesis) to the tree; returns the existing entry if known. */
  addBlock(block: DecodedBlock): BlockEntry {
    const hash = hashToHex(block.hash);
    const known = this.blocks.get(hash);
    if (known) return known;
    const prevHash = hashToHex(block.header.prevHash);
    const prev = this.blocks.size === 0 ? null : (this.blocks.get(prevHash) ?? null);
    if (this.blocks.size > 0 && prev === null) throw new BlockInvalid('prev-blk-not-found', `previous block ${prevHash} not found`);
    const times: number[] = [block.header.time];
    for (let p = prev, i = 0; p && i < 10; p = p.prev, i++) times.push(p.block.header.time);
    const entry: BlockEntry = {
      hash,
      block,
      height: prev ? prev.height + 1 : 0,
      prev,
      chainwork: (prev?.chainwork ?? 0n) + blockWork(block.header.bits),
      seq: this.nextSeq++,
      mtp: medianTime(times),
      chainTx: (prev?.chainTx ?? 0) + block.txs.length,
      failed: prev && prev.failed !== 'no' ? 'child' : 'no',
      everConnected: false,
      parked: false,
      undo: null,
    };
    this.blocks.set(hash, entry);
    if (prev) this.leaves.delete(prev);
    this.leaves.add(entry);
    return entry;
  }

  /** The last common block of the active chain and `e`'s chain. */
  findFork(e: BlockEntry): BlockEntry {
    let p: BlockEntry | null = e;
    while (p && !this.contains(p)) p = p.prev;
    return p ?? this.active[0]!;
  }

  /** A coin of the UTXO set. */
  coin(txid: string, vout: number): Coin | undefined {
    return this.utxo.get(outpointKey(txid, vout));
  }

  /**
   * ConnectBlock's checks against the UTXO set for `block` at `height` on the current tip: inputs
   * exist and are unspent, coinbase maturity, values, BIP30, sigops, coinbase amount, scripts
   * when `checkScripts` is given. Throws BlockInvalid; changes nothing.
   */
  private plan(block: DecodedBlock, height: number, checkScripts: ScriptChecker | null): ConnectPlan {
    const added = new Map<string, Coin>();
    const spent = new Map<string, Coin>();
    const undo: Coin[][] = [];
    let fees = 0n;
    let sigops = 0;
    const txs = block.txs;
    for (let t = 0; t < txs.length; t++) {
      const tx = txs[t]!;
      const txid = txidOf(tx);
      if (height > 0) {
        for (let v = 0; v < tx.outputs.length; v++) {
          const key = outpointKey(txid, v);
          if ((this.utxo.has(key) && !spent.has(key)) || added.has(key))
            throw new BlockInvalid('bad-txns-BIP30', 'tried to overwrite transaction');
        }
      }
      if (t > 0) {
        const prevouts: Prevout[] = [];
        const coins: Coin[] = [];
        let valueIn = 0n;
        for (let i = 0; i < tx.inputs.length; i++) {
          const key = outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout);
          const coin = spent.has(key) ? undefined : (added.get(key) ?? this.utxo.get(key));
          if (!coin) throw new BlockInvalid('bad-txns-inputs-missingorspent', 'CheckTxInputs: inputs missing/spent');
          if (coin.coinbase && height - coin.height < REGTEST.coinbaseMaturity) {
            throw new BlockInvalid('bad-txns-premature-spend-of-coinbase', `tried to spend coinbase at depth ${height - coin.height}`);
          }
          spent.set(key, coin);
          coins.push(coin);
          prevouts.push({ value: coin.value, script: coin.script });
          valueIn += coin.value;
        }
        const valueOut = tx.outputs.reduce((s, o) => s + o.value, 0n);
        if (valueIn < valueOut) throw new BlockInvalid('bad-txns-in-belowout', `value in (${valueIn}) < value out (${valueOut})`);
        fees += valueIn - valueOut;
        sigops += sigOpsCost(tx, prevouts);
        if (checkScripts) {
          const err = checkScripts(tx, prevouts);
          if (err) throw new BlockInvalid(`block-script-verify-flag-failed (${err})`, `input script check failed for ${txid}`);
        }
        undo.push(coins);
      } else {
        sigops += sigOpsCost(tx, null);
      }
      for (let v = 0; v < tx.outputs.length; v++) {
        const out = tx.outputs[v]!;
        if (isUnspendable(out.script)) continue;
        added.set(outpointKey(txid, v), { value: out.value, script: out.script, height, coinbase: t === 0 });
      }
    }
    if (sigops > REGTEST.maxBlockSigopsCost) throw new BlockInvalid('bad-blk-sigops', 'too many sigops');
    if (height > 0) {
      const paid = txs[0]!.outputs.reduce((s, o) => s + o.value, 0n);
      const limit = blockSubsidy(height) + fees;
      if (paid > limit) throw new BlockInvalid('bad-cb-amount', `coinbase pays too much (actual=${paid} vs limit=${limit})`);
    }
    return { added, spent, undo };
  }

  /** Checks that `block` would connect on the tip (TestBlockValidity's UTXO part); throws BlockInvalid. */
  testConnect(block: DecodedBlock, checkScripts: ScriptChecker | null): void {
    this.plan(block, this.height() + 1, checkScripts);
  }

  /** ConnectBlock: validates `entry` against the UTXO set and applies it; throws BlockInvalid and changes nothing on failure. */
  connectTip(entry: BlockEntry, checkScripts: ScriptChecker | null): void {
    if (entry.prev !== (this.active.length ? this.tip() : null)) throw new Error('connectTip: block does not extend the tip');
    const { added, spent, undo } = this.plan(entry.block, entry.height, checkScripts);
    // The genesis coinbase is not spendable: Core never adds it to the UTXO set.
    for (const key of spent.keys()) {
      if (!added.delete(key)) this.utxo.delete(key);
    }
    if (entry.height > 0) for (const [k, c] of added) this.utxo.set(k, c);
    for (const tx of entry.block.txs) this.txIndex.set(txidOf(tx), entry.hash);
    entry.undo = undo;
    entry.everConnected = true;
    this.active.push(entry);
  }

  /** DisconnectBlock: removes the tip's outputs and restores the coins it spent. */
  disconnectTip(): BlockEntry {
    const entry = this.tip();
    if (entry.height === 0) throw new Error('cannot disconnect the genesis block');
    const txs = entry.block.txs;
    const undo = entry.undo!;
    for (let t = txs.length - 1; t >= 0; t--) {
      const tx = txs[t]!;
      const txid = txidOf(tx);
      for (let v = 0; v < tx.outputs.length; v++) this.utxo.delete(outpointKey(txid, v));
      if (t === 0) continue;
      const coins = undo[t - 1]!;
      for (let i = 0; i < tx.inputs.length; i++) this.utxo.set(outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout), coins[i]!);
    }
    this.active.pop();
    return entry;
  }

  /** Entries whose subtree contains `e` or that descend from it. */
  descendants(e: BlockEntry): BlockEntry[] {
    const out: BlockEntry[] = [];
    for (const b of this.blocks.values()) {
      if (b === e) continue;
      for (let p = b.prev; p && p.height >= e.height; p = p.prev) {
        if (p === e) {
          out.push(b);
          break;
        }
      }
    }
    return out;
  }
}
