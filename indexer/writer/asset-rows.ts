/**
 * Open Assets colors of indexed transactions (src/bitcoin/open-assets.ts rules; stored as
 * src/db/asset-colors.ts packs them), computed once, when the transaction is indexed, from the
 * colors the index already holds for the outputs its inputs spend. Which confirmed transactions
 * carry a marker is part of the one derivation (derive-tx.ts `assetMarker`), for both modes:
 * - a block's transactions carrying a marker are colored in its apply transaction, after its
 *   `txs` rows are written (a transaction spending an earlier one of the same block sees its
 *   colors), and their rows are deleted with the block's tx_num range when it is undone;
 * - the bulk path only lists the transactions carrying a marker (`bulk_asset_candidates`, in the
 *   batch's transaction, with the script their first input spends) and the bulk finish colors
 *   them in chain order, once the indexes exist;
 * - a mempool transaction carrying a marker gets its colors in `mempool_txs.assets` when it is
 *   added (inputs: confirmed colors, or those of the mempool transaction it spends).
 * Transactions without a marker have no record, which reads as uncolored: only candidates cost
 * anything (a look at each output's first byte otherwise).
 * @module
 */
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { decodeTx } from '../../src/bitcoin/tx.js';
import { colorOutputs, hasAssetMarker, type InputAssets } from '../../src/bitcoin/open-assets.js';
import { decodeAssetColors, encodeAssetColors } from '../../src/db/asset-colors.js';
import { decodeIns, decodeOutTags } from '../../src/db/packed.js';
import { txNum, txNumPosition } from '../../src/db/tx-num.js';
import type { BlockRows } from './derive.js';
import { txRowAt, txRowsByTxids, type TxRow } from '../../src/db/tx-reads.js';

type Trx = Transaction<Database>;

/** `OA` and version 1.0: the start of every marker's payload. */
const MARKER_TAG = Buffer.from([0x4f, 0x41, 0x01, 0x00]);

/** What an input brings: the color of output `vout` in a stored record, if any. */
function inputColor(colors: Buffer | null | undefined, vout: number): InputAssets {
  if (!colors) return undefined;
  const c = decodeAssetColors(colors)[vout];
  return c && c.assetId ? { assetId: c.assetId, quantity: c.quantity } : undefined;
}

/**
 * The candidates of blocks derived on the per-block path, as colorConfirmed takes them: their
 * tx_nums, and the script each one's first input spends (the derivation resolved it).
 */
export function assetCandidates(
  blocks: readonly { rows: Pick<BlockRows, 'assetCandidates' | 'assetFirstScripts'>; height: number }[],
): [bigint[], Map<bigint, Uint8Array>] {
  const nums: bigint[] = [];
  const scripts = new Map<bigint, Uint8Array>();
  for (const { rows, height } of blocks)
    for (const pos of rows.assetCandidates) {
      const n = txNum(height, pos);
      nums.push(n);
      const s = rows.assetFirstScripts.get(pos);
      if (s !== undefined) scripts.set(n, s);
    }
  return [nums, scripts];
}

/**
 * Colors the confirmed transactions `txNums` (their `txs` rows written) in chain order and
 * records the colored ones in `asset_txs`; returns how many were colored. Idempotent. Each
 * one's outputs are read through their tags (a marker's script is kept whole), its first
 * input's script from `firstInputScripts` (no `txs` row keeps one): the per-block path's
 * derivation resolved it, a bulk batch or the bulk finish recorded it in `bulk_asset_candidates`.
 */
export async function colorConfirmed(
  trx: Trx,
  txNums: readonly bigint[],
  firstInputScripts: ReadonlyMap<bigint, Uint8Array>,
): Promise<number> {
  let colored = 0;
  for (const n of [...txNums].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (txNumPosition(n) === 0) continue;
    // (through the seam: the bulk finish may have folded the rows into parts already)
    const row = (await sql<TxRow>`SELECT * FROM ${txRowAt(sql`${n.toString()}::int8`)} t`.execute(trx)).rows[0];
    if (!row) continue;
    const ins = decodeIns(row.ins);
    if (ins.length === 0) continue;
    const prevNums = [...new Set(ins.map((i) => i.txNum))];
    const prev = await sql<{ tx_num: bigint; colors: Buffer }>`
      SELECT tx_num, colors FROM asset_txs WHERE tx_num = ANY(${prevNums.map(String)}::int8[])`.execute(trx);
    const byNum = new Map(prev.rows.map((r) => [r.tx_num, r.colors]));
    const colors = colorOutputs({
      coinbase: false,
      inputs: ins.map((i) => inputColor(byNum.get(i.txNum), i.vout)),
      firstInputScript: firstInputScripts.get(n) ?? null,
      outputs: decodeOutTags(row.outs).map((o) => ({ script: o.tag.script ?? NO_SCRIPT })),
    });
    if (!colors) continue;
    await sql`INSERT INTO asset_txs (tx_num, colors) VALUES (${n.toString()}::int8, ${encodeAssetColors(colors)})
              ON CONFLICT (tx_num) DO UPDATE SET colors = EXCLUDED.colors`.execute(trx);
    colored++;
  }
  return colored;
}

/** (an output that is no marker: what coloring reads of it is its place) */
const NO_SCRIPT = new Uint8Array(0);

/** Deletes the colors of the confirmed transactions in [lo, hi) (a block undone). */
export async function deleteAssetColors(trx: Trx, lo: bigint, hi: bigint): Promise<void> {
  await sql`DELETE FROM asset_txs WHERE tx_num >= ${lo.toString()}::int8 AND tx_num < ${hi.toString()}::int8`.execute(trx);
}

/**
 * Colors mempool transactions just stored (their `mempool_txs` rows written), a parent before
 * its children; those carrying no valid marker keep `assets` null.
 */
export async function colorMempool(trx: Trx, txs: readonly { txid: Uint8Array; raw: Uint8Array }[]): Promise<void> {
  const key = (b: Uint8Array) => Buffer.from(b).toString('hex');
  // (only a transaction whose bytes hold the marker's tag can carry one: the others are not decoded again)
  let pending = txs
    .filter((t) => Buffer.from(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength).includes(MARKER_TAG))
    .map((t) => ({ txid: t.txid, tx: decodeTx(t.raw) }))
    .filter((t) => hasAssetMarker(t.tx.outputs));
  while (pending.length > 0) {
    const waiting = new Set(pending.map((p) => key(p.txid)));
    const ready = pending.filter((p) => !p.tx.inputs.some((i) => waiting.has(key(i.prevTxid))));
    const now = ready.length > 0 ? ready : pending; // (a cycle cannot happen; never loop on one)
    for (const p of now) await colorMempoolTx(trx, p.txid, p.tx);
    pending = pending.filter((p) => !now.includes(p));
  }
}

async function colorMempoolTx(trx: Trx, txid: Uint8Array, tx: ReturnType<typeof decodeTx>): Promise<void> {
  const key = (b: Uint8Array) => Buffer.from(b).toString('hex');
  const parents = [...new Set(tx.inputs.map((i) => key(i.prevTxid)))].map((h) => Buffer.from(h, 'hex'));
  const [confirmed, mempool] = await Promise.all([
    // (a confirmed output a mempool transaction spends is unspent: its script is in utxos)
    sql<{ txid: Buffer; first_script: Buffer | null; colors: Buffer | null }>`
      SELECT t.txid, (SELECT u.script FROM utxos u WHERE u.tx_num = t.tx_num AND u.vout = ${tx.inputs[0]!.vout}) AS first_script, a.colors
        FROM ${txRowsByTxids(parents)} t LEFT JOIN asset_txs a ON a.tx_num = t.tx_num`.execute(trx),
    sql<{
      txid: Buffer;
      raw: Buffer;
      assets: Buffer | null;
    }>`SELECT txid, raw, assets FROM mempool_txs WHERE txid = ANY(${parents}::bytea[])`.execute(trx),
  ]);
  // each parent's output scripts (for the issuance's asset ID) and stored colors
  const prevScript = new Map<string, (vout: number) => Uint8Array | undefined>();
  const prevColors = new Map<string, Buffer | null>();
  const firstIn = tx.inputs[0]!;
  for (const r of confirmed.rows) {
    prevScript.set(key(r.txid), (v) => (v === firstIn.vout ? (r.first_script ?? undefined) : undefined));
    prevColors.set(key(r.txid), r.colors);
  }
  for (const r of mempool.rows) {
    const outs = decodeTx(r.raw).outputs;
    prevScript.set(key(r.txid), (v) => outs[v]?.script);
    prevColors.set(key(r.txid), r.assets);
  }
  const colors = colorOutputs({
    coinbase: false,
    inputs: tx.inputs.map((i) => inputColor(prevColors.get(key(i.prevTxid)), i.vout)),
    firstInputScript: prevScript.get(key(firstIn.prevTxid))?.(firstIn.vout) ?? null,
    outputs: tx.outputs,
  });
  if (colors) await sql`UPDATE mempool_txs SET assets = ${encodeAssetColors(colors)} WHERE txid = ${Buffer.from(txid)}`.execute(trx);
}
