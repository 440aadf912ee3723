/**
 * A transaction as the index answers it (`IndexedTx`, before any dialect shapes it): a confirmed
 * one from its `txs` row with its outputs and the outputs its inputs spend from the node
 * (api/node-transactions.ts; without a node, only from rows still holding scripts), a mempool one from its raw bytes
 * with the outputs it spends from `utxos` and the mempool's outputs (they are unspent while it is
 * in the mempool); `used` says whether a block or a mempool transaction
 * spends an output; Open Assets colors when the index recorded them. And /v1's Transaction JSON
 * made from it: OP_RETURN outputs carry `data` and are never used.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { NetworkName } from '../src/config.js';
import { decodeIns, decodeOut, decodeOuts, isTaggedOuts } from '../src/db/packed.js';
import { ServiceError } from '../src/errors.js';
import { txNumHeight, txNumPosition } from '../src/db/tx-num.js';
import {
  type ConfirmedTxRow,
  findConfirmedTx,
  findConfirmedTxs,
  findMempoolTx,
  getMempoolOutputs,
  getOutputSpendState,
  getTxsByNum,
  getUnspentOutputs,
  tipOfRow,
  type Tip,
} from './queries/chain.js';
import { decodeTx } from '../src/bitcoin/tx.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { describeOutput } from './address-codec.js';
import type { OutputAssets } from '../src/bitcoin/open-assets.js';
import { decodeAssetColors } from '../src/db/asset-colors.js';
import { isoFromUnix, isoTime, UNKNOWN_TIME } from '../src/time.js';
import { batchPerTick } from './cache/tick-batch.js';
import { HeldTransactions } from './cache/held-transactions.js';
import { perApp } from './cache/per-app.js';
import { readAtTip } from './tip.js';
import type { NodeClient } from './deps.js';
import { nodeGenesisCoinbase, nodeTransactions } from './node-transactions.js';

export type TransactionJson = {
  transaction_hash: string;
  block_hash: { block_hash: string; block_height: number }[];
  coinbase: boolean;
  inputs: { transaction_hash: string; output_index: number; address: string[]; value: string }[];
  outputs: { index: number; address: string[]; script: string; value: string; used: boolean; data?: string }[];
  time: string | null;
  broadcast_time: string;
  addresses: string[];
};

const COINBASE_INPUT = { transaction_hash: '0'.repeat(64), output_index: -1, address: [] as string[], value: '' };

type Prevout = { value: bigint; script: Uint8Array } | undefined;

/** A transaction as the index knows it, before any dialect shapes it. */
export type IndexedTx = {
  txid: Uint8Array;
  coinbase: boolean;
  /** Each input with the output it spends (undefined when the index does not have it). */
  inputs: { prevTxid: Uint8Array; vout: number; prevout: Prevout }[];
  outputs: { value: bigint; script: Uint8Array }[];
  /** Whether a block or a mempool transaction spends output `vout`. */
  used: (vout: number) => boolean;
  block: { hash: Uint8Array; height: number; time: number } | undefined;
  firstSeen: Date | null;
  /** Open Assets colors of the outputs, when the index recorded the transaction as colored. */
  assets?: readonly OutputAssets[] | undefined;
  /** Serialized size and weight of a confirmed transaction, from the node's answer (undefined: ask the node). */
  sizes?: TxSizes | undefined;
};

/** A transaction's serialized bytes (witness included) and BIP141 weight. */
export type TxSizes = { size: number; weight: number };

/** Hex of bytes. */
export const toHex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** /v1's Transaction JSON (with the fee the index computes) of an indexed transaction. */
function buildJson(network: NetworkName, tx: IndexedTx): TransactionJson & { fee: number | null } {
  const addresses = new Set<string>();
  const inputs = tx.coinbase
    ? [{ ...COINBASE_INPUT, address: [] }]
    : tx.inputs.map((i) => {
        const address = i.prevout ? describeOutput(i.prevout.script, network).addresses : [];
        for (const a of address) addresses.add(a);
        return {
          transaction_hash: hashToHex(i.prevTxid),
          output_index: i.vout,
          address,
          value: i.prevout ? i.prevout.value.toString() : '',
        };
      });
  const outputs = tx.outputs.map((o, index) => {
    const view = describeOutput(o.script, network);
    for (const a of view.addresses) addresses.add(a);
    const out: TransactionJson['outputs'][number] = {
      index,
      address: view.addresses,
      script: Buffer.from(o.script.buffer, o.script.byteOffset, o.script.byteLength).toString('hex'),
      value: o.value.toString(),
      used: view.data === undefined && tx.used(index),
    };
    if (view.data !== undefined) out.data = Buffer.from(view.data.buffer, view.data.byteOffset, view.data.byteLength).toString('hex');
    return out;
  });
  return {
    transaction_hash: hashToHex(tx.txid),
    block_hash: tx.block ? [{ block_hash: hashToHex(tx.block.hash), block_height: tx.block.height }] : [],
    coinbase: tx.coinbase,
    inputs,
    outputs,
    time: tx.block ? isoFromUnix(tx.block.time) : null,
    broadcast_time: tx.firstSeen ? isoTime(tx.firstSeen) : UNKNOWN_TIME,
    addresses: [...addresses],
    fee: feeOf(tx),
  };
}

/** Inputs' values less outputs' (0 for a coinbase), null when a spent output is unknown. */
function feeOf(tx: { coinbase: boolean; inputs: { prevout: Prevout }[]; outputs: { value: bigint }[] }): number | null {
  if (tx.coinbase) return 0;
  let fee = 0n;
  for (const i of tx.inputs) {
    if (!i.prevout) return null;
    fee += i.prevout.value;
  }
  for (const o of tx.outputs) fee -= o.value;
  return Number(fee);
}

/** Rows read by separate queries disagree: a block was applied or undone in between. */
class InconsistentRead extends Error {}

/** A view with the fee the index computes (inputs less outputs), for /v1's extra fields. */
export type TransactionView = TransactionJson & { fee: number | null };

/**
 * The Transaction JSON of a confirmed or mempool transaction, or undefined when unknown, with
 * its mempool raw bytes when it is unconfirmed (the index keeps those; a confirmed one's are
 * the node's). The reads are separate queries; when a reorg lands between them, the whole read
 * is done again.
 */
export async function loadTransactionView(
  db: Kysely<Database>,
  network: NetworkName,
  txid: Buffer,
  node: NodeClient | undefined,
  held?: HeldTxs,
): Promise<{ view: TransactionView; mempoolRaw: Buffer | null; sizes: TxSizes | undefined; tip: Tip } | undefined> {
  const r = await loadIndexedTx(db, txid, node, held);
  if (!r) return undefined;
  // (a held transaction with the same spend state is the same object: its view is built once)
  const built = views.get(r.tx);
  const view = built?.network === network ? built.view : buildJson(network, r.tx);
  if (held && r.tx.block && built?.view !== view) views.set(r.tx, { network, view });
  return { view, mempoolRaw: r.mempoolRaw, sizes: r.tx.sizes, tip: r.tip };
}

/** The /v1 views built of held transactions, by transaction object (a new spend state is a new object). */
const views = new WeakMap<IndexedTx, { network: NetworkName; view: TransactionView }>();

/**
 * A confirmed or mempool transaction as the index knows it, with its raw bytes when it is in
 * the mempool, or undefined when unknown. The reads are separate queries; when a reorg lands
 * between them, the whole read is done again. With `held`, a confirmed transaction built before
 * from the same row is taken from there instead of reading its prevouts again.
 */
export async function loadIndexedTx(
  db: Kysely<Database>,
  txid: Buffer,
  node: NodeClient | undefined,
  held?: HeldTxs,
): Promise<IndexedRead | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readIndexedTx(db, txid, node, held);
    } catch (err) {
      if (!(err instanceof InconsistentRead) || attempt >= 3) throw err;
    }
  }
}

/** The spec's Transaction JSON (loadTransactionView without the index's extras). */
export async function loadTransactionJson(
  db: Kysely<Database>,
  network: NetworkName,
  txid: Buffer,
  node: NodeClient | undefined,
): Promise<TransactionJson | undefined> {
  const r = await loadTransactionView(db, network, txid, node);
  if (!r) return undefined;
  const { fee: _fee, ...json } = r.view;
  return json;
}

/**
 * A held confirmed transaction (api/cache/held-transactions.ts): everything but the spend state of its
 * outputs, and the transaction with the spend state it was last asked with.
 */
type HeldTx = {
  base: Omit<IndexedTx, 'used'>;
  last: { unspent: number[]; mempoolSpent: number[]; tx: IndexedTx };
  /** The answer of the last statement that read the row, with the chain generation read before it was sent. */
  seen?: { generation: number; tx: IndexedTx; tip: Tip };
};
export type HeldTxs = HeldTransactions<HeldTx>;

/** The confirmed transactions an app holds (one for its /v1 and bare routes), or undefined when API_TX_CACHE_MB is 0. */
export const heldTransactions = perApp((deps): HeldTxs | undefined =>
  deps.settings.txCacheBytes > 0 ? new HeldTransactions<HeldTx>(deps.settings.txCacheBytes, deps.chainChanges) : undefined,
);

const sameNumbers = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** `tx` with the spend state of `row`. */
function withSpendState(base: Omit<IndexedTx, 'used'>, row: Pick<ConfirmedRow, 'unspent_vouts' | 'mempool_spent_vouts'>): IndexedTx {
  const unspent = new Set(row.unspent_vouts);
  const mempoolSpent = new Set(row.mempool_spent_vouts);
  return { ...base, used: (vout) => !unspent.has(vout) || mempoolSpent.has(vout) };
}

/** The held transaction of `row` with the row's spend state, when one built from an equal row is held. */
function fromHeld(held: HeldTxs, row: ConfirmedTxRow): IndexedTx | undefined {
  const h = held.get(row);
  if (!h) return undefined;
  if (!sameNumbers(h.last.unspent, row.unspent_vouts) || !sameNumbers(h.last.mempoolSpent, row.mempool_spent_vouts)) {
    h.last = { unspent: row.unspent_vouts, mempoolSpent: row.mempool_spent_vouts, tx: withSpendState(h.base, row) };
  }
  return h.last.tx;
}

/** A confirmed `txs` row with the spend state of its outputs. */
type ConfirmedRow = {
  tx_num: bigint;
  txid: Buffer;
  outs: Buffer;
  ins: Buffer;
  first_seen: Date | null;
  unspent_vouts: number[];
  mempool_spent_vouts: number[];
  asset_colors?: Buffer | null;
};

/**
 * Views of confirmed transactions of one block (`rows` from one statement), their spent outputs
 * read in one more round trip.
 */
export async function confirmedViews(
  db: Kysely<Database>,
  network: NetworkName,
  rows: readonly ConfirmedRow[],
  block: { hash: Uint8Array; height: number; time: number },
  node: NodeClient | undefined,
): Promise<{ view: TransactionView; sizes: TxSizes | undefined }[]> {
  return (await confirmedTxs(db, rows, block, node)).map((tx) => ({ view: buildJson(network, tx), sizes: tx.sizes }));
}

/**
 * Indexed transactions of one block (`rows` from one statement). Outputs and the outputs their
 * inputs spend come from the node in one batch (api/node-transactions.ts); the genesis
 * coinbase, which Core does not hand out as a transaction, from the genesis block. Without a
 * node, only rows still in the script form answer (an index not migrated by 0053_tagged_outs);
 * a tagged row keeps no scripts, and its view is 503 ERR_NODE_UNAVAILABLE as with a node down.
 */
async function confirmedTxs(
  db: Kysely<Database>,
  rows: readonly ConfirmedRow[],
  block: { hash: Uint8Array; height: number; time: number },
  node: NodeClient | undefined,
): Promise<IndexedTx[]> {
  const parts = !node
    ? await fromRows(db, rows)
    : block.height > 0
      ? await fromNode(node, rows, block.hash)
      : await Promise.all(rows.map(() => nodeGenesisCoinbase(node, block.hash)));
  return rows.map((row, k) => {
    const base = {
      txid: row.txid,
      coinbase: txNumPosition(row.tx_num) === 0,
      ...parts[k]!,
      block,
      firstSeen: row.first_seen,
      assets: row.asset_colors ? decodeAssetColors(row.asset_colors) : undefined,
      sizes: parts[k]!.sizes,
    };
    return withSpendState(base, row);
  });
}

type TxParts = Pick<IndexedTx, 'inputs' | 'outputs' | 'sizes'>;

async function fromNode(node: NodeClient, rows: readonly ConfirmedRow[], blockHash: Uint8Array): Promise<TxParts[]> {
  return nodeTransactions(
    node,
    rows.map((r) => ({ txid: r.txid, blockHash })),
  );
}

async function fromRows(db: Kysely<Database>, rows: readonly ConfirmedRow[]): Promise<TxParts[]> {
  const ins = rows.map((r) => decodeIns(r.ins));
  const prevs = await lookups(db).prevTxs(ins.flat().map((i) => i.txNum));
  return rows.map((row, k) => ({
    inputs: ins[k]!.map((i) => {
      const prev = prevs.get(i.txNum);
      if (!prev) throw new InconsistentRead(`input refers to tx_num ${i.txNum} that has no txs row`);
      return { prevTxid: prev.txid, vout: i.vout, prevout: decodeOut(withScripts(prev.outs), i.vout) };
    }),
    outputs: decodeOuts(withScripts(row.outs)),
  }));
}

/** Packed outs with their scripts; a tagged row has none to read without a node. */
function withScripts(outs: Buffer): Buffer {
  if (isTaggedOuts(outs))
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read confirmed transactions from' });
  return outs;
}

type PrevTxs = Map<bigint, { txid: Buffer; outs: Buffer }>;

/**
 * The lookups of one turn of the event loop in one statement each (api/cache/tick-batch.ts): confirmed
 * transactions by txid, then the transactions their inputs spend, one batcher each per database.
 */
const batchers = new WeakMap<
  Kysely<Database>,
  { confirmed: (txid: Buffer) => Promise<ConfirmedTxRow | undefined>; prevTxs: (nums: bigint[]) => Promise<PrevTxs> }
>();
function lookups(db: Kysely<Database>) {
  let b = batchers.get(db);
  if (!b) {
    b = {
      confirmed: batchPerTick(async (txids: Buffer[]) =>
        txids.length === 1 ? [await findConfirmedTx(db, txids[0]!)] : findConfirmedTxs(db, txids),
      ),
      // (every caller gets the map of the whole batch: it reads only its own tx_nums from it)
      prevTxs: batchPerTick(async (lists: bigint[][]) => {
        const all = await getTxsByNum(db, lists.flat());
        return lists.map(() => all);
      }),
    };
    batchers.set(db, b);
  }
  return b;
}

/**
 * An indexed transaction, its raw bytes when in the mempool, and the indexed tip it was read at:
 * a confirmed one's from the statement that read its row, block and spend state (its prevouts do
 * not change while its row stands), a mempool one's from the snapshot of its reads.
 */
type IndexedRead = { tx: IndexedTx; mempoolRaw: Buffer | null; tip: Tip };

async function readIndexedTx(
  db: Kysely<Database>,
  txid: Buffer,
  node: NodeClient | undefined,
  held: HeldTxs | undefined,
): Promise<IndexedRead | undefined> {
  // (read before the statement is sent: a change committed after this moves it, api/cache/held-transactions.ts)
  const generation = held?.changes?.generation;
  if (generation !== undefined) {
    const seen = held!.peek(txid)?.seen;
    // No change since the statement that gave `seen`, up to a barrier started after the request came.
    if (seen?.generation === generation && (await held!.changes!.unchangedSince(generation)))
      return { tx: seen.tx, mempoolRaw: null, tip: seen.tip };
  }
  const confirmed = await lookups(db).confirmed(txid);
  if (confirmed) {
    const tip = tipOfRow(confirmed);
    let tx = held && fromHeld(held, confirmed);
    if (!tx) {
      const block = { hash: confirmed.block_hash, height: txNumHeight(confirmed.tx_num), time: confirmed.block_time };
      tx = (await confirmedTxs(db, [confirmed], block, node))[0]!;
      if (held) {
        const { used: _used, ...base } = tx;
        held.set(confirmed, tx.inputs.length + tx.outputs.length, {
          base,
          last: { unspent: confirmed.unspent_vouts, mempoolSpent: confirmed.mempool_spent_vouts, tx },
        });
      }
    }
    const entry = generation !== undefined ? held!.peek(txid) : undefined;
    if (entry) entry.seen = { generation: generation!, tx, tip };
    return { tx, mempoolRaw: null, tip };
  }
  const { value, tip } = await readAtTip(db, (trx) => readMempoolTx(trx, txid));
  return value && { ...value, tip };
}

async function readMempoolTx(db: Kysely<Database>, txid: Buffer): Promise<{ tx: IndexedTx; mempoolRaw: Buffer } | undefined> {
  const mempool = await findMempoolTx(db, txid);
  if (!mempool) return undefined;
  const tx = decodeTx(mempool.raw);
  const outpoints = tx.inputs.map((i) => ({ txid: Buffer.from(i.prevTxid), vout: i.vout }));
  const [confirmedPrev, mempoolPrev, spend] = await Promise.all([
    getUnspentOutputs(db, outpoints),
    getMempoolOutputs(db, outpoints),
    getOutputSpendState(db, txid),
  ]);
  const indexed: IndexedTx = {
    txid,
    coinbase: false,
    inputs: tx.inputs.map((i) => {
      const k = `${Buffer.from(i.prevTxid).toString('hex')}:${i.vout}`;
      const prevout = confirmedPrev.get(k) ?? mempoolPrev.get(k);
      return { prevTxid: i.prevTxid, vout: i.vout, prevout };
    }),
    outputs: [...tx.outputs],
    used: (vout) => spend.mempoolSpent.has(vout),
    block: undefined,
    firstSeen: mempool.first_seen,
    assets: mempool.assets ? decodeAssetColors(mempool.assets) : undefined,
  };
  return { tx: indexed, mempoolRaw: mempool.raw };
}
