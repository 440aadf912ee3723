/**
 * Who spent each output of a transaction, confirmed or in the mempool, in one statement (one
 * snapshot): a confirmed transaction's confirmed spenders come from the spends GIN index
 * (src/db/spent-groups.ts: the transactions spending any output of the
 * 16-transaction group of the one asked for, whose input references are then decoded here), its
 * mempool spenders from `mempool_spends`. Undone blocks take their transactions, and so their
 * spends, with them; nothing else is kept.
 * @module
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { decodeIns, outCount } from '../../src/db/packed.js';
import { txRowsByTxid, txRowsSpending } from '../../src/db/tx-reads.js';
import { decodeTx } from '../../src/bitcoin/tx.js';
import { equalBytes } from '../../src/bitcoin/hash.js';
import { txNumHeight } from '../../src/db/tx-num.js';
import { sqlSpentGroupOf } from '../../src/db/spent-groups.js';

/** One output's spender: the transaction and its input, and its block when confirmed. */
export type Spend = { txid: Buffer; vin: number; block: { height: number; hash: Buffer; time: number } | null };

export type Outspends = {
  /** The transaction's outputs in order: null when no block or mempool transaction spends it. */
  spends: (Spend | null)[];
  /** The indexed tip the answer was read at. */
  tip: { height: number; hash: Buffer | null };
};

type Row = {
  part: number;
  n: bigint | null;
  txid: Buffer | null;
  data: Buffer | null;
  hash: Buffer | null;
  time: number | null;
  vout: number | null;
};

/**
 * The spends of every output of `txid` (internal byte order), or undefined when neither a block
 * nor the mempool holds it. For BIP30's duplicate coinbases the latest one is meant.
 */
export async function getOutspends(db: Kysely<Database>, txid: Buffer): Promise<Outspends | undefined> {
  const r = await outspendsStatement(txid).execute(db);
  return assemble(r.rows, txid);
}

/**
 * The statement of getOutspends (exported for the test of its plan). The spenders' join has no
 * condition on their tx_num (a spender always comes after what it spends, and `assemble` keeps
 * only the inputs naming the transaction): a range on `txs_pkey` would let a generic plan scan
 * it instead of the GIN index.
 */
export function outspendsStatement(txid: Buffer) {
  return sql<Row>`
    WITH t AS MATERIALIZED (SELECT x.tx_num, x.outs FROM ${txRowsByTxid(txid)} x ORDER BY x.tx_num DESC LIMIT 1)
    (SELECT 0 AS part, t.tx_num AS n, NULL::bytea AS txid, t.outs AS data, NULL::bytea AS hash, NULL::int4 AS time, NULL::int4 AS vout FROM t)
    UNION ALL
    (SELECT 1, s.tx_num, s.txid, s.ins, b.hash, b.time, NULL
       FROM t
       JOIN LATERAL ${txRowsSpending(sqlSpentGroupOf('t.tx_num'))} s ON true
       JOIN blocks b ON b.height = (s.tx_num >> 20)::int4)
    UNION ALL
    (SELECT 2, NULL, NULL, m.raw, NULL, NULL, NULL FROM mempool_txs m WHERE m.txid = ${txid})
    UNION ALL
    (SELECT 3, NULL, m.txid, m.raw, NULL, NULL, s.prev_vout
       FROM mempool_spends s JOIN mempool_txs m ON m.txid = s.txid WHERE s.prev_txid = ${txid})
    UNION ALL
    (SELECT 4, height, NULL, NULL, hash, NULL, NULL FROM chain_tip WHERE id = 1)`;
}

function assemble(rows: readonly Row[], txid: Buffer): Outspends | undefined {
  let target: Row | undefined;
  let mempoolTarget: Row | undefined;
  let tip: Outspends['tip'] = { height: -1, hash: null };
  const candidates: Row[] = [];
  const mempoolSpenders: Row[] = [];
  for (const row of rows) {
    if (row.part === 0) target = row;
    else if (row.part === 1) candidates.push(row);
    else if (row.part === 2) mempoolTarget = row;
    else if (row.part === 3) mempoolSpenders.push(row);
    else tip = { height: Number(row.n), hash: row.hash };
  }
  let outputs: number;
  if (target) outputs = outCount(target.data!);
  else if (mempoolTarget) outputs = decodeTx(mempoolTarget.data!).outputs.length;
  else return undefined;
  const spends: (Spend | null)[] = new Array<Spend | null>(outputs).fill(null);
  if (target) {
    const n = target.n!;
    for (const c of candidates) {
      decodeIns(c.data!).forEach((ref, vin) => {
        if (ref.txNum === n && ref.vout < outputs)
          spends[ref.vout] = { txid: c.txid!, vin, block: { height: txNumHeight(c.n!), hash: c.hash!, time: c.time! } };
      });
    }
  }
  for (const m of mempoolSpenders) {
    const vout = m.vout!;
    // (a confirmed spend wins: the mempool tables lose a mined or conflicted transaction in the block's own commit)
    if (vout >= outputs || spends[vout] !== null) continue;
    const vin = decodeTx(m.data!).inputs.findIndex((i) => i.vout === vout && equalBytes(i.prevTxid, txid));
    if (vin >= 0) spends[vout] = { txid: m.txid!, vin, block: null };
  }
  return { spends, tip };
}
