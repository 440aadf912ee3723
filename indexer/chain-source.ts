/**
 * What the indexer asks of the node, as two small interfaces (tests implement them over
 * fixtures), and their implementation over bitcoind: blocks over REST binary when the node
 * serves it, RPC `getblock <hash> 0` otherwise; the outputs a block spent from `/rest/spenttxouts`
 * when the node serves it (Core ≥ 30), RPC `getblock <hash> 3` otherwise (its inputs' prevouts).
 * Hashes cross these interfaces in display hex (as Core prints them).
 * @module
 */
import { RpcError, RPC_CODES, type BitcoindClient } from '../src/rpc/bitcoind.js';
import type { BitcoindRest, SpentOutput } from './node-rest.js';
import { btcToSats, type BlockInfo, type TxInfo } from '../src/rpc/types.js';
import { hexToBytes } from '../src/bitcoin/hash.js';

/** The node's tip and the hashes of its active chain at some heights, read in one round trip. */
export interface ChainView {
  bestHash: string;
  height: number;
  /** Hash at each height asked for (null above the tip). */
  hashes: (string | null)[];
}

/** The node's active chain. */
export interface ChainSource {
  /** Tip and active-chain hashes at `heights` (one RPC batch against bitcoind). */
  getChainView(heights: readonly number[]): Promise<ChainView>;
  /** Hash of the active-chain block at `height`, or null above the node's tip. */
  getBlockHash(height: number): Promise<string | null>;
  /** The serialized block, or null when the node does not have it (pruned, unknown). */
  getBlock(hash: string): Promise<Uint8Array | null>;
  /**
   * The outputs each transaction of the block spent, in input order (the coinbase's list empty),
   * or null when the node does not have them (block or undo data unknown or pruned). A node
   * still has them for a block it disconnected: undo takes them from here when the index
   * keeps no `block_undo` row for the block (writer/apply.ts `undoBlock`). `restOnly`: only
   * where the node serves them in binary (`/rest/spenttxouts`, Core ≥ 30), null otherwise (the
   * run loop's live blocks: `getblock 3`'s JSON costs the node more than it saves the index).
   */
  getSpentTxOuts?(hash: string, opts?: { restOnly?: boolean }): Promise<SpentOutput[][] | null>;
}

/** A transaction the node holds in its mempool. */
export interface NodeMempoolTx {
  raw: Uint8Array;
  /** Fee in sats (from the node's mempool entry). */
  fee: bigint | null;
  /** When the node first saw it (mempool entry `time`). */
  time: Date | null;
}

/** The node's mempool. */
export interface MempoolSource {
  /** `getrawmempool(false, true)`: txids and the mempool sequence they correspond to. */
  getMempoolSnapshot(): Promise<{ txids: string[]; sequence: number }>;
  /** The given txids that are in the node's mempool now, with their raw bytes (absent ones omitted). */
  getMempoolTxs(txids: readonly string[]): Promise<Map<string, NodeMempoolTx>>;
  /** `getmempoolinfo`'s size and total fee (sat): a cheap fingerprint; null while the node loads its mempool. */
  getMempoolSummary(): Promise<MempoolSummary | null>;
}

/** How many transactions a mempool holds and their fees summed (sat). */
export interface MempoolSummary {
  size: number;
  fee: bigint;
}

export type NodeSourceOptions = {
  rpc: BitcoindClient;
  /** REST client for blocks and spenttxouts. */
  rest?: BitcoindRest;
  /** 'auto' probes the node once (and again after a failed probe), 'on' requires REST, 'off' uses RPC only. */
  restMode: 'auto' | 'on' | 'off';
};

const isNotFound = (err: unknown) =>
  err instanceof RpcError && (err.code === RPC_CODES.INVALID_ADDRESS_OR_KEY || err.code === RPC_CODES.INVALID_PARAMETER);

/** ChainSource and MempoolSource over a bitcoind (or the devnode). */
export function createNodeSource(opts: NodeSourceOptions): ChainSource & MempoolSource {
  const { rpc, rest } = opts;
  let probe: Promise<boolean> | null = null;
  const useRest = async (): Promise<boolean> => {
    if (rest === undefined || opts.restMode === 'off') return false;
    if (opts.restMode === 'on') return true;
    probe ??= rest.available().catch((err) => {
      probe = null;
      throw err;
    });
    return probe;
  };
  let spentTxOutsAvailable = true;
  return {
    async getChainView(heights) {
      const replies = await rpc.batch<unknown>([
        { method: 'getblockcount' },
        { method: 'getbestblockhash' },
        ...heights.map((h) => ({ method: 'getblockhash', params: [h] })),
      ]);
      const [count, best] = replies;
      if (count instanceof Error) throw count;
      if (best instanceof Error) throw best;
      return {
        height: count as number,
        bestHash: best as string,
        hashes: replies.slice(2).map((r) => {
          if (r instanceof Error) {
            if (isNotFound(r)) return null;
            throw r;
          }
          return r as string;
        }),
      };
    },
    async getBlockHash(height) {
      try {
        return await rpc.getBlockHash(height);
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    async getBlock(hash) {
      if (await useRest()) return rest!.getBlock(hash);
      try {
        return await rpc.getBlockRaw(hash);
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    async getSpentTxOuts(hash, how) {
      if (spentTxOutsAvailable && rest && (await useRest())) {
        try {
          return await rest.getSpentTxOuts(hash);
        } catch (err) {
          // Nodes before Core 30 do not know the path (400 or a bare 404): stop asking, use RPC.
          const code = (err as { code?: string }).code;
          if (code !== 'ERR_REST_BAD_REQUEST' && code !== 'ERR_REST_UNSUPPORTED') throw err;
          spentTxOutsAvailable = false;
        }
      }
      if (how?.restOnly) return null;
      let info: BlockInfo<TxInfo>;
      try {
        info = await rpc.getBlock(hash, 3);
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
      return spentOfBlockInfo(info);
    },
    async getMempoolSnapshot() {
      const r = await rpc.getRawMempoolWithSequence();
      return { txids: r.txids, sequence: r.mempool_sequence };
    },
    async getMempoolSummary() {
      const info = await rpc.getMempoolInfo();
      // (a node that does not report its mempool's fees gives no fingerprint: no check)
      if (info.loaded === false || typeof info.size !== 'number' || typeof info.total_fee !== 'number') return null;
      return { size: info.size, fee: btcToSats(info.total_fee) };
    },
    async getMempoolTxs(txids) {
      const out = new Map<string, NodeMempoolTx>();
      for (let i = 0; i < txids.length; i += 500) {
        const part = txids.slice(i, i + 500);
        const calls = part.flatMap((txid) => [
          { method: 'getmempoolentry', params: [txid] },
          { method: 'getrawtransaction', params: [txid, 0] },
        ]);
        const replies = await rpc.batch<unknown>(calls);
        part.forEach((txid, j) => {
          const entry = replies[2 * j];
          const raw = replies[2 * j + 1];
          // Only what is in the mempool now: getrawtransaction alone also finds confirmed txs.
          if (entry instanceof RpcError || raw instanceof RpcError || typeof raw !== 'string') return;
          const e = entry as { fees?: { base?: number }; time?: number };
          out.set(txid, {
            raw: Buffer.from(raw, 'hex'),
            fee: typeof e.fees?.base === 'number' ? btcToSats(e.fees.base) : null,
            time: typeof e.time === 'number' ? new Date(e.time * 1000) : null,
          });
        });
      }
      return out;
    },
  };
}

/** The spent outputs of `getblock <hash> 3` (each input's prevout), as `/rest/spenttxouts` gives them; null when one is missing. */
function spentOfBlockInfo(info: BlockInfo<TxInfo>): SpentOutput[][] | null {
  const out: SpentOutput[][] = [];
  for (const tx of info.tx) {
    const list: SpentOutput[] = [];
    for (const i of tx.vin) {
      if (i.coinbase !== undefined) continue;
      if (!i.prevout) return null;
      list.push({ value: btcToSats(i.prevout.value), script: hexToBytes(i.prevout.scriptPubKey.hex) });
    }
    out.push(list);
  }
  return out;
}
