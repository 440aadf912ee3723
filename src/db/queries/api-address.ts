/**
 * Per-address reads for the REST API: balance, whether the address is known, and keyset pages
 * of history and unspent outputs (mempool part first, then the chain newest first). Pages are
 * index seeks: history by (addr_key, first_tx_num) chunks, unspent by (addr_key, tx_num, vout),
 * so any depth costs the same. Addresses are given by their addr_key (src/db/address-key.ts).
 * @module
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../schema.js';

/** Microseconds since the epoch of a timestamptz, as Postgres computes it (exact, for cursors). */
const FIRST_SEEN_US = sql<bigint>`(extract(epoch FROM mt.first_seen) * 1000000)::int8`;

export type BalanceParts = {
  /** Sum of confirmed unspent outputs (balances table), 0 when absent. */
  confirmed: bigint;
  /** Net change of the mempool: received − sent over the address's mempool transactions. */
  mempool: bigint;
  known: boolean;
  tipHeight: number;
};

type BalancePartsRow = { confirmed: bigint | null; mempool: bigint | null; known: boolean; tip_height: number };

/** The columns of one address's balance parts; `key` is its addr_key (a parameter or a column). */
const balancePartsColumns = (key: RawBuilder<string>) => sql`
  (SELECT balance FROM balances WHERE addr_key = ${key}) AS confirmed,
  (SELECT sum(received - sent)::int8 FROM mempool_addresses WHERE addr_key = ${key}) AS mempool,
  (EXISTS (SELECT 1 FROM history WHERE addr_key = ${key})
    OR EXISTS (SELECT 1 FROM mempool_addresses WHERE addr_key = ${key})) AS known,
  (SELECT height FROM chain_tip WHERE id = 1) AS tip_height`;

const toBalanceParts = (row: BalancePartsRow): BalanceParts => ({ confirmed: row.confirmed ?? 0n, mempool: row.mempool ?? 0n, known: row.known, tipHeight: row.tip_height });

/** The pieces of the min_conf=0 balance in one round trip, and whether the address is known. */
export async function getBalanceParts(db: Kysely<Database>, addrKey: string): Promise<BalanceParts> {
  const r = await sql<BalancePartsRow>`SELECT ${balancePartsColumns(sql`${addrKey}`)}`.execute(db);
  return toBalanceParts(r.rows[0]!);
}

/** getBalanceParts for many addresses in one round trip, in the order of `addrKeys`. */
export async function getBalancePartsMany(db: Kysely<Database>, addrKeys: readonly string[]): Promise<BalanceParts[]> {
  const r = await sql<BalancePartsRow & { i: number }>`
    SELECT q.i::int4 AS i, ${balancePartsColumns(sql.ref('q.k'))}
    FROM unnest(${addrKeys}::uuid[]) WITH ORDINALITY AS q(k, i)`.execute(db);
  const out = new Array<BalanceParts>(addrKeys.length);
  for (const row of r.rows) out[row.i - 1] = toBalanceParts(row);
  return out;
}

/**
 * Confirmed outputs of the address that a min_conf ≥ 1 balance leaves out: those spent by a
 * mempool transaction (any depth) and the unspent ones at tx_num ≥ `fromTxNum` (too recent).
 */
export async function getBalanceExclusions(db: Kysely<Database>, addrKey: string, fromTxNum: bigint): Promise<bigint> {
  const r = await sql<{ spent: bigint | null; recent: bigint | null }>`
    SELECT (SELECT sum(u.value)::int8
              FROM mempool_addresses ma
              JOIN mempool_spends s ON s.txid = ma.txid
              JOIN utxos u ON u.txid = s.prev_txid AND u.vout = s.prev_vout
             WHERE ma.addr_key = ${addrKey} AND u.addr_key = ${addrKey}) AS spent,
           (SELECT sum(u.value)::int8 FROM utxos u
             WHERE u.addr_key = ${addrKey} AND u.tx_num >= ${fromTxNum}
               AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)) AS recent`.execute(db);
  const row = r.rows[0]!;
  return (row.spent ?? 0n) + (row.recent ?? 0n);
}

/** Does any confirmed or mempool transaction touch the address? */
export async function addressKnown(db: Kysely<Database>, addrKey: string): Promise<boolean> {
  const r = await sql<{ known: boolean }>`
    SELECT (EXISTS (SELECT 1 FROM history WHERE addr_key = ${addrKey})
            OR EXISTS (SELECT 1 FROM mempool_addresses WHERE addr_key = ${addrKey})) AS known`.execute(db);
  return r.rows[0]!.known;
}

export type MempoolCursor = { firstSeenUs: bigint; txid: Buffer; vout?: number };

/** Every entry of a history chunk, its first (`first_tx_num`) included: 8 bytes each, ascending. */
const ENTRIES = sql<Buffer>`int8send(first_tx_num) || rest`;

/** A confirmed history entry of a page: its tx_num, txid (null only if `txs` lacks the row, which one statement's snapshot rules out in a sound index) and place. */
export type HistoryPageEntry = { n: bigint; txid: Buffer | null; first: bigint; index: number };

/** The 8-byte big-endian entry at 0-based `i` of chunk bytes `e`, as int8. */
const ENTRY_AT = (e: RawBuilder<unknown>, i: RawBuilder<unknown>) => sql<bigint>`('x' || encode(substring(${e} FROM ${i} * 8 + 1 FOR 8), 'hex'))::bit(64)::int8`;

/**
 * One page of an address's history in one round trip: its mempool transactions newest first
 * (after `mempoolAfter`; skipped when null), then its confirmed entries newest first below
 * `before` (and, with `minConf` > 1, below the first tx_num without that many confirmations),
 * with their txids, at most `limit` of each. The entries are cut out of the history chunks by
 * Postgres, newest chunk first, so only the chunks the page reaches are read; `at` (a cursor's
 * chunk and index) lets the cursor's chunk be entered at the cursor instead of at its end.
 */
export async function listHistoryPage(
  db: Kysely<Database>,
  addrKey: string,
  opts: HistoryPageOptions,
): Promise<{ mempool: { txid: Buffer; firstSeenUs: bigint }[]; chain: HistoryPageEntry[] }> {
  const r = await historyPageQuery(addrKey, opts).execute(db);
  const mempool: { txid: Buffer; firstSeenUs: bigint }[] = [];
  const chain: HistoryPageEntry[] = [];
  for (const x of r.rows) {
    if (x.part === 0) mempool.push({ txid: x.txid!, firstSeenUs: x.fs! });
    else chain.push({ n: x.n!, txid: x.txid, first: x.f!, index: x.i! });
  }
  mempool.sort((a, b) => (a.firstSeenUs === b.firstSeenUs ? Buffer.compare(b.txid, a.txid) : a.firstSeenUs < b.firstSeenUs ? 1 : -1));
  chain.sort((a, b) => (a.n < b.n ? 1 : a.n > b.n ? -1 : 0));
  return { mempool, chain };
}

export type HistoryPageOptions = { mempoolAfter: MempoolCursor | undefined | null; before: bigint; at?: { first: bigint; index: number } | undefined; minConf: number; limit: number };

/** The statement of listHistoryPage (exported for the test that checks its plan keeps the order). */
export function historyPageQuery(addrKey: string, opts: HistoryPageOptions) {
  const { mempoolAfter: after, limit } = opts;
  const bound =
    opts.minConf > 1
      ? sql<bigint>`least(${opts.before}::int8, (((SELECT height FROM chain_tip WHERE id = 1) - ${opts.minConf} + 2)::int8 << 20))`
      : sql<bigint>`${opts.before}::int8`;
  const e = sql`c.e`;
  const last = sql`length(c.e) / 8 - 1`;
  // Where to enter a chunk: at the cursor in the cursor's chunk when the entry there is still the
  // bound (compared as bytes: a stale or made-up index finds nothing and the chunk is read whole).
  const startAt = opts.at
    ? sql`CASE WHEN c.f = ${opts.at.first}::int8 AND substring(c.e FROM ${opts.at.index}::int4 * 8 + 1 FOR 8) = int8send(b.v) THEN ${opts.at.index}::int4 - 1 ELSE ${last} END`
    : last;
  const mempoolPart =
    after === null
      ? sql``
      : sql`(SELECT 0 AS part, ma.txid, ${FIRST_SEEN_US} AS fs, NULL::int8 AS n, NULL::int8 AS f, NULL::int4 AS i
           FROM mempool_addresses ma JOIN mempool_txs mt ON mt.txid = ma.txid
          WHERE ma.addr_key = ${addrKey}
            ${after ? sql`AND (${FIRST_SEEN_US}, ma.txid) < (${after.firstSeenUs}, ${after.txid})` : sql``}
          ORDER BY fs DESC, ma.txid DESC
          LIMIT ${limit})
         UNION ALL`;
  return sql<{ part: number; txid: Buffer | null; fs: bigint | null; n: bigint | null; f: bigint | null; i: number | null }>`
    ${mempoolPart}
    (SELECT 1 AS part, t.txid, NULL::int8 AS fs, p.n, p.f, p.i
       FROM (SELECT c.f, s.i, s.n
               FROM (SELECT ${bound} AS v) b,
                    LATERAL (SELECT first_tx_num AS f, ${ENTRIES} AS e FROM history
                              WHERE addr_key = ${addrKey} AND first_tx_num < b.v
                              ORDER BY first_tx_num DESC
                              LIMIT ${limit}) c,
                    LATERAL (SELECT g.i, ${ENTRY_AT(e, sql`g.i`)} AS n FROM generate_series(${startAt}, 0, -1) AS g(i)) s
              WHERE s.n < b.v
              -- no ORDER BY: the nested loop yields chunks newest first (index order) and each
              -- chunk's entries from its end, i.e. newest first; a sort would read every chunk.
              -- (c's LIMIT is exact: each chunk below the bound gives at least one entry.)
              LIMIT ${limit}) p
       LEFT JOIN txs t ON t.tx_num = p.n)`;
}

export type UnspentRow = { txid: Buffer; vout: number; value: bigint; script: Buffer; txNum?: bigint; firstSeenUs?: bigint };

/**
 * One page of an address's unspent outputs in one round trip: the mempool part (outputs of
 * mempool transactions paying it, newest first, after `mempoolAfter`; skipped when null), then
 * confirmed outputs below the keyset bound `before` (tx_num, vout descending) with at least
 * `minConf` confirmations, both left out when a mempool transaction spends them; and the tip
 * height. Each part returns at most `limit` rows.
 */
export async function listUnspentPage(
  db: Kysely<Database>,
  addrKey: string,
  opts: { mempoolAfter: MempoolCursor | undefined | null; before: { txNum: bigint; vout: number }; minConf: number; limit: number },
): Promise<{ mempool: UnspentRow[]; confirmed: UnspentRow[]; tipHeight: number }> {
  const { mempoolAfter: after, before, minConf, limit } = opts;
  const mempoolPart =
    after === null
      ? sql``
      : sql`(SELECT 0 AS part, o.txid, o.vout, o.value, o.script, NULL::int8 AS tx_num, ${FIRST_SEEN_US} AS fs
           FROM mempool_outputs o JOIN mempool_txs mt ON mt.txid = o.txid
          WHERE o.addr_key = ${addrKey}
            AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = o.txid AND s.prev_vout = o.vout)
            ${after ? sql`AND (${FIRST_SEEN_US}, o.txid, o.vout) < (${after.firstSeenUs}, ${after.txid}, ${after.vout ?? 2147483647})` : sql``}
          ORDER BY fs DESC, o.txid DESC, o.vout DESC
          LIMIT ${limit})
         UNION ALL`;
  const r = await sql<{ part: number; txid: Buffer; vout: number; value: bigint; script: Buffer; tx_num: bigint | null; fs: bigint | null }>`
    ${mempoolPart}
    (SELECT 1 AS part, u.txid, u.vout, u.value, u.script, u.tx_num, NULL::int8 AS fs
       FROM utxos u
      WHERE u.addr_key = ${addrKey}
        AND (u.tx_num, u.vout) < (${before.txNum}, ${before.vout})
        ${minConf > 1 ? sql`AND u.tx_num < (((SELECT height FROM chain_tip WHERE id = 1) - ${minConf} + 2)::int8 << 20)` : sql``}
        AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)
      ORDER BY u.tx_num DESC, u.vout DESC
      LIMIT ${limit})
    UNION ALL
    -- the tip height rides in the vout column of a row of its own
    (SELECT 2, NULL, height, NULL, NULL, NULL, NULL FROM chain_tip WHERE id = 1)`.execute(db);
  const mempool: UnspentRow[] = [];
  const confirmed: UnspentRow[] = [];
  let tipHeight = -1;
  for (const x of r.rows) {
    if (x.part === 2) tipHeight = x.vout;
    else if (x.part === 0) mempool.push({ txid: x.txid, vout: x.vout, value: x.value, script: x.script, firstSeenUs: x.fs! });
    else confirmed.push({ txid: x.txid, vout: x.vout, value: x.value, script: x.script, txNum: x.tx_num! });
  }
  mempool.sort((a, b) => (a.firstSeenUs === b.firstSeenUs ? Buffer.compare(b.txid, a.txid) || b.vout - a.vout : a.firstSeenUs! < b.firstSeenUs! ? 1 : -1));
  confirmed.sort((a, b) => (a.txNum === b.txNum ? b.vout - a.vout : a.txNum! < b.txNum! ? 1 : -1));
  return { mempool, confirmed, tipHeight };
}
