/**
 * Statistics of addresses and scripts, as Esplora's `chain_stats` and `mempool_stats`: outputs
 * funded (count, sum), outputs spent (count, sum) and transactions, for the chain and the mempool
 * separately, read in one REPEATABLE READ snapshot (the caller's) with the tip they describe.
 *
 * A target is an address key (every output the index counts in the address's balance: its own
 * script and, for P2PKH, the P2PK outputs of the same key; bare multisig outputs count for
 * nobody, their transactions are in the history and so in `tx_count`) or one exact script (its
 * SHA-256: only outputs of that script, only transactions funding or spending it; a P2PK or bare
 * multisig script through its alias, read as src/db/queries/script-hash.ts reads it).
 *
 * Chain part: the outputs still unspent come from `balances` (an address) or `utxos` (a script;
 * a bare multisig script's carry no key: found through the transactions of its key's history);
 * the outputs ever funded from the outputs of the target's history transactions (each read by
 * primary key, decoded here); spent = funded − unspent, since an output leaves the unspent set
 * only when a block spends it. The cost grows with the target's history, never with the chain.
 * Mempool part: `mempool_outputs` (funded), `mempool_spends` joined with the outputs they spend
 * (spent), `mempool_addresses` (transactions).
 * @module
 */
import { txRowsAtNums, unspentAt } from '../../src/db/tx-reads.js';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { decodeOutTags } from '../../src/db/packed.js';
import { tagIsScript, tagPaysKey, tagPrefix } from '../../src/db/out-tags.js';
import { readHistoryEntries, sqlHistoryCount } from '../../src/db/history-reads.js';
import {
  readHistoriesIn,
  readScriptTotals,
  resolveScriptRefs,
  type ResolvedScriptRef,
  type ScriptRef,
} from '../../src/db/queries/script-hash.js';
import { balanceOfSql } from '../../src/db/balance-reads.js';
import { getIndexTip } from './chain.js';

/** Esplora's per-part statistics (sats). */
export type TxoStats = {
  funded_txo_count: number;
  funded_txo_sum: number;
  spent_txo_count: number;
  spent_txo_sum: number;
  tx_count: number;
};
export type TargetStats = { chain: TxoStats; mempool: TxoStats };
/** An address key, or one script (a ScriptRef: its SHA-256 and the key it falls under, aliases followed). */
export type StatsTarget = { key: string; sha?: undefined } | ScriptRef;
export type StatsAnswer = { stats: TargetStats[]; tip: { height: number; hash: Buffer | null } };

type Trx = Transaction<Database>;

/** What a target's statistics are made of besides its funded chain outputs. */
type Parts = {
  unspent: { count: number; sum: bigint };
  mempoolFunded: { count: number; sum: bigint };
  mempoolSpent: { count: number; sum: bigint };
  chainTxs: number;
  mempoolTxs: number;
};

type AddressPartsRow = {
  i: number;
  unspent_count: string;
  unspent_sum: string;
  chain_txs: string;
  m_funded_count: string;
  m_funded_sum: string;
  m_spent_count: string;
  m_spent_sum: string;
  m_txs: string;
};

/** The Parts of address keys, one row each, in one statement. */
async function addressParts(trx: Trx, keys: readonly string[]): Promise<Parts[]> {
  if (keys.length === 0) return [];
  const r = await sql<AddressPartsRow>`
    SELECT q.i::int4 AS i,
           ${sql.raw(balanceOfSql('q.k', 'utxo_count'))}::text AS unspent_count,
           ${sql.raw(balanceOfSql('q.k', 'balance'))}::text AS unspent_sum,
           ${sqlHistoryCount(sql.ref('q.k'))}::text AS chain_txs,
           mf.n::text AS m_funded_count, mf.v::text AS m_funded_sum, ms.n::text AS m_spent_count, ms.v::text AS m_spent_sum,
           (SELECT count(*) FROM mempool_addresses ma WHERE ma.addr_key = q.k)::text AS m_txs
      FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i)
      CROSS JOIN LATERAL (SELECT count(*) AS n, coalesce(sum(o.value), 0) AS v FROM mempool_outputs o WHERE o.addr_key = q.k) mf
      CROSS JOIN LATERAL (SELECT count(*) AS n, coalesce(sum(coalesce(u.value, o.value)), 0) AS v
                            FROM mempool_spends sp
                            LEFT JOIN LATERAL (${unspentAt(sql.ref('sp.prev_txid'), sql.ref('sp.prev_vout'))}) u ON true
                            LEFT JOIN mempool_outputs o ON o.txid = sp.prev_txid AND o.vout = sp.prev_vout
                           WHERE sp.txid IN (SELECT ma.txid FROM mempool_addresses ma WHERE ma.addr_key = q.k)
                             AND coalesce(u.addr_key, o.addr_key) = q.k) ms`.execute(trx);
  const out = new Array<Parts>(keys.length);
  for (const row of r.rows) {
    out[row.i - 1] = {
      unspent: { count: Number(row.unspent_count), sum: BigInt(row.unspent_sum) },
      mempoolFunded: { count: Number(row.m_funded_count), sum: BigInt(row.m_funded_sum) },
      mempoolSpent: { count: Number(row.m_spent_count), sum: BigInt(row.m_spent_sum) },
      chainTxs: Number(row.chain_txs),
      mempoolTxs: Number(row.m_txs),
    };
  }
  return out;
}

/**
 * The Parts of scripts (aliases resolved): their outputs as the exact per-script reads find them
 * (a bare multisig output carries no key: found through its key's history), transactions those
 * funding or spending exactly the script.
 */
async function scriptParts(trx: Trx, refs: readonly ResolvedScriptRef[]): Promise<Parts[]> {
  if (refs.length === 0) return [];
  const histories = await readHistoriesIn(trx, refs, Number.MAX_SAFE_INTEGER);
  const out: Parts[] = [];
  for (const [j, ref] of refs.entries()) {
    const h = histories[j]!;
    const t = await readScriptTotals(trx, ref);
    out.push({ ...t, chainTxs: h.kind === 'ok' ? h.confirmed.length : 0, mempoolTxs: h.kind === 'ok' ? h.mempool.length : 0 });
  }
  return out;
}

/** The statistics of `targets`, in their order, read inside the snapshot (REPEATABLE READ) the caller holds. */
export async function readStatsIn(trx: Trx, targets: readonly StatsTarget[]): Promise<StatsAnswer> {
  const tip = await getIndexTip(trx);
  if (targets.length === 0) return { stats: [], tip };
  const addrIdx = targets.flatMap((t, i) => (t.sha === undefined ? [i] : []));
  const scriptIdx = targets.flatMap((t, i) => (t.sha === undefined ? [] : [i]));
  const scripts = await resolveScriptRefs(
    trx,
    scriptIdx.map((i) => targets[i] as ScriptRef),
  );
  const parts = new Array<Parts>(targets.length);
  (
    await addressParts(
      trx,
      addrIdx.map((i) => targets[i]!.key),
    )
  ).forEach((p, j) => (parts[addrIdx[j]!] = p));
  (await scriptParts(trx, scripts)).forEach((p, j) => (parts[scriptIdx[j]!] = p));
  // (the key whose history holds each target's transactions: a script's after its alias)
  const keys = targets.map((t) => t.key);
  scriptIdx.forEach((i, j) => (keys[i] = scripts[j]!.key));

  // The outputs of every history transaction of the targets' keys.
  const entries = await readHistoryEntries(trx, keys);
  const nums = [...new Set(entries.flat())];
  const outs = new Map<bigint, Buffer>();
  if (nums.length > 0) {
    const r = await sql<{
      tx_num: bigint;
      outs: Buffer;
    }>`SELECT t.tx_num, t.outs FROM ${txRowsAtNums(nums)} t`.execute(trx);
    for (const row of r.rows) outs.set(row.tx_num, row.outs);
  }

  const stats = targets.map((t, i): TargetStats => {
    let count = 0;
    let sum = 0n;
    // (a script's own outputs; an address's: those counting in its balance, its own script's
    // and, for P2PKH, the P2PK outputs of its key)
    const sha = t.sha ? tagPrefix(t.sha) : null;
    const key = tagPrefix(t.key);
    for (const n of entries[i]!) {
      const packed = outs.get(n);
      if (!packed) continue;
      for (const o of decodeOutTags(packed)) {
        if (sha !== null ? tagIsScript(o.tag, sha) : tagPaysKey(o.tag) === key) {
          count++;
          sum += o.value;
        }
      }
    }
    const p = parts[i]!;
    return {
      chain: {
        funded_txo_count: count,
        funded_txo_sum: Number(sum),
        spent_txo_count: count - p.unspent.count,
        spent_txo_sum: Number(sum - p.unspent.sum),
        tx_count: p.chainTxs,
      },
      mempool: {
        funded_txo_count: p.mempoolFunded.count,
        funded_txo_sum: Number(p.mempoolFunded.sum),
        spent_txo_count: p.mempoolSpent.count,
        spent_txo_sum: Number(p.mempoolSpent.sum),
        tx_count: p.mempoolTxs,
      },
    };
  });
  return { stats, tip };
}

/** An unspent output of a batch: a mempool one has no tx_num. */
export type BatchUnspent = { txid: Buffer; vout: number; value: bigint; script: Buffer; txNum: bigint | null };

/**
 * The unspent outputs of many addresses in one statement (mempool outputs first, newest first;
 * outputs a mempool transaction spends left out, as GET /addresses/{a}/unspentoutputs lists
 * them): at most `limit + 1` per address, so that the caller can tell a longer list.
 */
export async function readUnspentMany(trx: Trx, keys: readonly string[], limit: number): Promise<BatchUnspent[][]> {
  const out: BatchUnspent[][] = keys.map(() => []);
  if (keys.length === 0) return out;
  const r = await sql<{
    i: number;
    part: number;
    txid: Buffer;
    vout: number;
    value: bigint;
    script: Buffer;
    tx_num: bigint | null;
    fs: bigint | null;
  }>`
    SELECT q.i::int4 AS i, x.* FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i)
     CROSS JOIN LATERAL (
       (SELECT 0 AS part, o.txid, o.vout, o.value, o.script, NULL::int8 AS tx_num, (extract(epoch FROM mt.first_seen) * 1000000)::int8 AS fs
          FROM mempool_outputs o JOIN mempool_txs mt ON mt.txid = o.txid
         WHERE o.addr_key = q.k AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = o.txid AND s.prev_vout = o.vout)
         ORDER BY fs DESC, o.txid DESC, o.vout DESC LIMIT ${limit + 1})
       UNION ALL
       (SELECT 1, u.txid, u.vout, u.value, u.script, u.tx_num, NULL FROM utxos u
         WHERE u.addr_key = q.k AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)
         ORDER BY u.tx_num DESC, u.vout DESC LIMIT ${limit + 1})) x`.execute(trx);
  const rows = r.rows.sort(
    (a, b) =>
      a.i - b.i ||
      a.part - b.part ||
      (a.part === 0 ? cmpDesc(a.fs!, b.fs!) || Buffer.compare(b.txid, a.txid) : cmpDesc(a.tx_num!, b.tx_num!)) ||
      b.vout - a.vout,
  );
  for (const x of rows) {
    const list = out[x.i - 1]!;
    if (list.length <= limit) list.push({ txid: x.txid, vout: x.vout, value: x.value, script: x.script, txNum: x.tx_num });
  }
  return out;
}

const cmpDesc = (a: bigint, b: bigint) => (a < b ? 1 : a > b ? -1 : 0);
