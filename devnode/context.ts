/**
 * What the RPC and REST handlers reach: the node, the wallet, ZMQ endpoint, fault state, and the
 * block operations that also persist (submit, invalidate, reconsider, mine).
 * @module
 */
import type { DecodedBlock } from '../src/bitcoin/block.js';
import type { Logger } from '../src/log.js';
import type { BlockEntry } from './chain.js';
import type { BlockResult, Node } from './node.js';
import type { Wallet } from './wallet.js';

export type MineOptions = {
  /** Raw transactions to put first in the block (generateblock). */
  txs?: import('../src/bitcoin/tx.js').DecodedTx[];
  /** Transactions per block, block i taking entry i (reorg helpers keep heights). */
  txsPerBlock?: import('../src/bitcoin/tx.js').DecodedTx[][];
  /** Fill from the mempool (default true). */
  useMempool?: boolean;
  /** Mine on this block instead of the tip. */
  parent?: BlockEntry;
  time?: number;
};

export type DevnodeContext = {
  node: Node;
  wallet: Wallet;
  log: Logger;
  /** The ZMQ endpoint, as getzmqnotifications reports it. */
  zmqEndpoint: () => string;
  /** Blocks RPC and REST pretend not to have. */
  hidden: Set<string>;
  /**
   * A fee estimate to answer with (sat/kvB) and the least target it holds for (`blocks`), or
   * `perKvB` null for Core's "Insufficient data" answer (setfeeestimate, faults.setFeeEstimate).
   */
  feeEstimate: { perKvB: bigint | null; blocks: number };
  startedAt: number;
  /** ProcessNewBlock plus persistence. */
  submitBlock: (block: DecodedBlock, opts?: { checkTime?: boolean }) => BlockResult;
  invalidate: (entry: BlockEntry) => void;
  reconsider: (entry: BlockEntry) => void;
  /** Mines `n` blocks paying `payout`; returns their hashes (stops early if one fails). */
  mine: (n: number, payout: Uint8Array, opts?: MineOptions) => string[];
  requestStop: () => void;
};
