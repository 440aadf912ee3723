/**
 * Per-address reads for the REST API: balance, whether the address is known, and keyset pages
 * of history and unspent outputs (mempool part first, then the chain newest first). Pages are
 * index seeks: history by (addr_key, first_tx_num) chunks, unspent by (addr_key, tx_num, vout),
 * so any depth costs the same. Addresses are given by their addr_key (src/db/address-key.ts).
 * @module
 */
import { txRowAt, unspentAt } from '../../src/db/tx-reads.js';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { hashesToHex } from '../../src/bitcoin/hash.js';
import { sqlFirstTxNum } from '../../src/db/tx-num.js';
import { SQL_HISTORY, sqlEntryAt } from '../../src/db/history-entries.js';
import { HISTORY_ROWS, sqlHistoryPageEntries, sqlHistorySkip } from '../../src/db/history-reads.js';
import { sqlBalanceOf } from '../../src/db/balance-reads.js';
import { TIP_COLUMNS } from './chain.js';

/** Microseconds since the epoch of a timestamptz, as Postgres computes it (exact, for cursors). */
const FIRST_SEEN_US = sql<bigint>`(extract(epoch FROM mt.first_seen) * 1000000)::int8`;

export type BalanceParts = {
  /** Sum of confirmed unspent outputs (`sqlBalanceOf`), 0 when absent. */
  confirmed: bigint;
  /** Net change of the mempool: received − sent over the address's mempool transactions. */
  mempool: bigint;
  tipHeight: number;
  /** The tip's hash (null while nothing is indexed). */
  tipHash: Buffer | null;
};

type BalancePartsRow = { confirmed: bigint | null; mempool: bigint | null; tip_height: number | null; tip_hash: Buffer | null };

/** The columns of one address's balance parts; `key` is its addr_key (a parameter or a column). */
const balancePartsColumns = (key: RawBuilder<string>) => sql`
  ${sqlBalanceOf(key, 'balance')} AS confirmed,
  (SELECT sum(received - sent)::int8 FROM mempool_addresses WHERE addr_key = ${key}) AS mempool,
  ${TIP_COLUMNS}`;

const toBalanceParts = (row: BalancePartsRow): BalanceParts => ({
  confirmed: row.confirmed ?? 0n,
  mempool: row.mempool ?? 0n,
  tipHeight: row.tip_height ?? -1,
  tipHash: row.tip_hash,
});

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
              JOIN LATERAL (${unspentAt(sql.ref('s.prev_txid'), sql.ref('s.prev_vout'))}) u ON true
             WHERE ma.addr_key = ${addrKey} AND u.addr_key = ${addrKey}) AS spent,
           (SELECT sum(u.value)::int8 FROM utxos u
             WHERE u.addr_key = ${addrKey} AND u.tx_num >= ${fromTxNum}
               AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)) AS recent`.execute(db);
  const row = r.rows[0]!;
  return (row.spent ?? 0n) + (row.recent ?? 0n);
}

export type MempoolCursor = { firstSeenUs: bigint; txid: Buffer; vout?: number };

/** Every entry of a history chunk, its first (`first_tx_num`) included: 8 bytes each, ascending. */
const ENTRIES = sql<Buffer>`${sql.raw(SQL_HISTORY.entries())}`;

/**
 * A confirmed history entry of a page: its tx_num, txid (null only if `txs` lacks the row, which
 * one statement's snapshot rules out in a sound index) and place in its chunk (`first` and `index`
 * −1 for an entry of the address's bucket, which has none).
 */
export type HistoryPageEntry = { n: bigint; txid: Buffer | null; first: bigint; index: number };

/** Bytes per entry of HistoryEntries' positions: tx_num (int8), chunk first_tx_num (int8), index (int4), big-endian. */
const POSITION_BYTES = 20;
/** The txid Postgres packs for an entry whose `txs` row is missing (no transaction hashes to zero). */
const ABSENT_TXID = Buffer.alloc(32);
const ABSENT_TXID_SQL = sql.raw(`'\\x${ABSENT_TXID.toString('hex')}'::bytea`);
const ABSENT_HEX = ABSENT_TXID.toString('hex');

/**
 * The confirmed entries of a history page, newest first, as Postgres packs them: one row for
 * the whole page instead of one per entry (a 25-entry page cost the API ~3 µs per row parsed).
 */
export class HistoryEntries {
  readonly count: number;
  constructor(
    /** 32 bytes per entry, internal byte order; all zero where `txs` lacks the row. */
    readonly txids: Buffer,
    private readonly positions: Buffer,
  ) {
    this.count = positions.length / POSITION_BYTES;
  }

  /** The `k`-th entry (0 = newest). */
  at(k: number): HistoryPageEntry {
    const o = k * POSITION_BYTES;
    const txid = this.txids.subarray(k * 32, k * 32 + 32);
    return {
      n: this.positions.readBigInt64BE(o),
      first: this.positions.readBigInt64BE(o + 8),
      index: this.positions.readInt32BE(o + 16),
      txid: txid.equals(ABSENT_TXID) ? null : txid,
    };
  }

  /** Display hex of the txids of the first `count` entries, leaving out those whose `txs` row is missing. */
  txidsHex(count: number): string[] {
    return hashesToHex(this.txids.subarray(0, count * 32)).filter((hex) => hex !== ABSENT_HEX);
  }

  /** Every entry (tests, small pages). */
  all(): HistoryPageEntry[] {
    return Array.from({ length: this.count }, (_, k) => this.at(k));
  }
}

export type HistoryPage = {
  mempool: { txid: Buffer; firstSeenUs: bigint }[];
  chain: HistoryEntries;
  /** True when `chain` is the request's `held` one (its chunk was still that version). */
  fromHeld: boolean;
  /** The indexed tip the statement saw (-1, null while nothing is indexed). */
  tip: { height: number; hash: Buffer | null };
};

/**
 * A history row's version (a row of HISTORY_ROWS): its xmin (every insert or update gives the new
 * row version the writing transaction's id; a row moved from `history_recent` into `history` is
 * a new one) and the server's start time, which changes with any restore, point-in-time recovery
 * or failover, the events after which transaction ids can be handed out again.
 */
const ROW_VERSION = sql<string>`(row_xmin || '@' || (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::int8::text)`;
const ROWS = sql.raw(HISTORY_ROWS);

/**
 * A history chunk as one statement read it: its row version (ROW_VERSION), all its entries (8
 * bytes each, ascending) and their txids (32 bytes each, same order; all zero where `txs` lacks the row).
 */
export type HistoryChunk = { version: string; entries: Buffer; txids: Buffer };

/** The 8-byte big-endian entry at 0-based `i` of chunk bytes `e`, as int8. */
const ENTRY_AT = sqlEntryAt;

/**
 * Pages of addresses' history, one per request, in one round trip (requests arriving together
 * share it: api/cache/tick-batch.ts). A page holds the address's mempool transactions newest first
 * (after `mempoolAfter`; none when it is null), then its confirmed entries newest first below
 * `before` (and, with `minConf` > 1, below the first tx_num without that many confirmations),
 * with their txids, at most `limit` of each. The entries are cut out of the history chunks by
 * Postgres, newest chunk first, so only the chunks the page reaches are read; `at` (a cursor's
 * chunk and index) lets the cursor's chunk be entered at the cursor instead of at its end.
 */
export async function listHistoryPages(db: Kysely<Database>, requests: readonly HistoryPageRequest[]): Promise<HistoryPage[]> {
  const r = await historyPagesQuery(requests).execute(db);
  const pages = new Array<HistoryPage>(requests.length);
  for (const x of r.rows) {
    const mempool: { txid: Buffer; firstSeenUs: bigint }[] = [];
    if (x.mempool_txids && x.mempool_fs) {
      for (let j = 0; j < x.mempool_fs.length / 8; j++)
        mempool.push({ txid: x.mempool_txids.subarray(j * 32, j * 32 + 32), firstSeenUs: x.mempool_fs.readBigInt64BE(j * 8) });
    }
    const held = requests[x.k - 1]!.held;
    const chain = x.held && held ? held.chain : new HistoryEntries(x.txids ?? Buffer.alloc(0), x.positions ?? Buffer.alloc(0));
    pages[x.k - 1] = { mempool, chain, fromHeld: x.held && held !== undefined, tip: { height: x.tip_height ?? -1, hash: x.tip_hash } };
  }
  return pages;
}

/** One page of one address's history (listHistoryPages for a single request). */
export async function listHistoryPage(db: Kysely<Database>, addrKey: string, opts: HistoryPageOptions): Promise<HistoryPage> {
  return (await listHistoryPages(db, [{ ...opts, addrKey }]))[0]!;
}

export type HistoryPageOptions = {
  mempoolAfter: MempoolCursor | undefined | null;
  before: bigint;
  at?: { first: bigint; index: number } | undefined;
  minConf: number;
  limit: number;
};
export type HistoryPageRequest = HistoryPageOptions & {
  addrKey: string;
  /**
   * The page's confirmed entries as a chunk the caller holds gives them (api/cache/history-chunk-cache.ts),
   * and the version of chunk `at.first` they were read from: the statement only checks that the
   * chunk's row is still that version, and the page's chain part is `chain`; when it is not, the
   * page is cut as without it.
   */
  held?: { version: string; chain: HistoryEntries } | undefined;
};

/**
 * A request's confirmed entries below its bound `b.v`, newest first, entered at its cursor's place
 * (built once: the fragment's parts are the same for every statement).
 */
const PAGE_ENTRIES = sqlHistoryPageEntries({ key: 'q.addr', bound: 'b.v', limit: 'q.lim', atFirst: 'q.at_first', atIndex: 'q.at_index' });

/** The statement of listHistoryPages (exported for the test that checks its plan keeps the order). */
export function historyPagesQuery(requests: readonly HistoryPageRequest[]) {
  // The mempool part of a request: 0 none, 1 from the newest, 2 after (m_fs, m_txid).
  const mempoolMode = (r: HistoryPageRequest) => (r.mempoolAfter === null ? 0 : r.mempoolAfter ? 2 : 1);
  // Each part's rows are packed into one row per request, newest first (a page's aggregates share
  // one ORDER BY, so Postgres sorts its rows once): txids 32 bytes each, first-seen times and
  // positions as HistoryEntries reads them.
  // (a statement without mempool part when no request has one: ~15 µs less for Postgres)
  const mempoolPart = requests.some((r) => r.mempoolAfter !== null)
    ? sql`CROSS JOIN LATERAL (
        SELECT string_agg(x.txid, ''::bytea ORDER BY x.fs DESC, x.txid DESC) AS txids,
               string_agg(int8send(x.fs), ''::bytea ORDER BY x.fs DESC, x.txid DESC) AS fs
          FROM (SELECT ma.txid, ${FIRST_SEEN_US} AS fs
                  FROM mempool_addresses ma JOIN mempool_txs mt ON mt.txid = ma.txid
                 WHERE q.mempool > 0 AND ma.addr_key = q.addr
                   AND (q.mempool = 1 OR (${FIRST_SEEN_US}, ma.txid) < (q.m_fs, q.m_txid))
                 ORDER BY fs DESC, ma.txid DESC
                 LIMIT q.lim) x) m`
    : sql`CROSS JOIN (SELECT NULL::bytea AS txids, NULL::bytea AS fs) m`;
  // A held page: the statement checks only that chunk at_first is still the version the caller
  // read (its entries and their txids then come from the caller; see HistoryPageRequest.held).
  // (OFFSET 0 keeps the planner from pulling the subquery up: it would evaluate the check once
  // per use; parts no request needs are left out, as the mempool part is)
  const heldPart = requests.some((r) => r.held && r.at)
    ? sql`CROSS JOIN LATERAL (SELECT q.h_version IS NOT NULL AND EXISTS (SELECT 1 FROM ${ROWS} h WHERE addr_key = q.addr AND first_tx_num = q.at_first AND ${ROW_VERSION} = q.h_version) AS hit
                                OFFSET 0) hc`
    : sql`CROSS JOIN (SELECT false AS hit) hc`;
  return sql<{
    k: number;
    held: boolean;
    mempool_txids: Buffer | null;
    mempool_fs: Buffer | null;
    positions: Buffer | null;
    txids: Buffer | null;
    tip_height: number | null;
    tip_hash: Buffer | null;
  }>`
    SELECT q.k::int4 AS k, hc.hit AS held, m.txids AS mempool_txids, m.fs AS mempool_fs, h.positions, h.txids, ${TIP_COLUMNS}
      FROM unnest(${requests.map((r) => r.addrKey)}::uuid[], ${requests.map((r) => r.before.toString())}::int8[],
                  ${requests.map((r) => r.at?.first.toString() ?? null)}::int8[], ${requests.map((r) => r.at?.index ?? null)}::int4[],
                  ${requests.map((r) => r.minConf)}::int4[], ${requests.map((r) => r.limit)}::int4[], ${requests.map(mempoolMode)}::int4[],
                  ${requests.map((r) => r.mempoolAfter?.firstSeenUs.toString() ?? null)}::int8[], ${requests.map((r) => r.mempoolAfter?.txid ?? null)}::bytea[],
                  ${requests.map((r) => (r.held && r.at ? r.held.version : null))}::text[])
           WITH ORDINALITY AS q(addr, before, at_first, at_index, min_conf, lim, mempool, m_fs, m_txid, h_version, k)
      ${heldPart}
      ${mempoolPart}
      CROSS JOIN LATERAL (
        SELECT string_agg(int8send(p.n) || int8send(p.f) || int4send(p.i), ''::bytea ORDER BY p.n DESC) AS positions,
               string_agg(coalesce(t.txid, ${ABSENT_TXID_SQL}), ''::bytea ORDER BY p.n DESC) AS txids
          FROM (SELECT CASE WHEN q.min_conf > 1 THEN least(q.before, ${sqlFirstTxNum(sql`(SELECT height FROM chain_tip WHERE id = 1) - q.min_conf + 2`)})
                            ELSE q.before END AS v
                 WHERE NOT hc.hit) b
          CROSS JOIN LATERAL (${PAGE_ENTRIES}) p
          LEFT JOIN LATERAL ${txRowAt(sql.ref('p.n'))} t ON true) h`;
}

/**
 * Chunk `first` of the address as one statement reads it, for the API to hold
 * (api/cache/history-chunk-cache.ts): its row version, every entry and every entry's txid.
 */
export async function readHistoryChunk(db: Kysely<Database>, addrKey: string, first: bigint): Promise<HistoryChunk | undefined> {
  const r = await sql<{ version: string; e: Buffer; txids: Buffer }>`
    SELECT x.v AS version, x.e,
           (SELECT string_agg(coalesce(t.txid, ${ABSENT_TXID_SQL}), ''::bytea ORDER BY g.i)
              FROM generate_series(0, length(x.e) / 8 - 1) AS g(i)
              LEFT JOIN LATERAL ${txRowAt(ENTRY_AT('x.e', 'g.i'))} t ON true) AS txids
      -- (OFFSET 0: pulled up, the chunk would be read out of TOAST again for every entry)
      FROM (SELECT ${ROW_VERSION} AS v, ${ENTRIES} AS e FROM ${ROWS} h WHERE addr_key = ${addrKey} AND first_tx_num = ${first} OFFSET 0) x`.execute(
    db,
  );
  const row = r.rows[0];
  return row ? { version: row.version, entries: row.e, txids: row.txids } : undefined;
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
): Promise<{ mempool: UnspentRow[]; confirmed: UnspentRow[]; tipHeight: number; tipHash: Buffer | null }> {
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
  const r = await sql<{
    part: number;
    txid: Buffer;
    vout: number;
    value: bigint;
    script: Buffer;
    tx_num: bigint | null;
    fs: bigint | null;
  }>`
    ${mempoolPart}
    (SELECT 1 AS part, u.txid, u.vout, u.value, u.script, u.tx_num, NULL::int8 AS fs
       FROM utxos u
      WHERE u.addr_key = ${addrKey}
        AND (u.tx_num, u.vout) < (${before.txNum}, ${before.vout})
        ${minConf > 1 ? sql`AND u.tx_num < ${sqlFirstTxNum(sql`(SELECT height FROM chain_tip WHERE id = 1) - ${minConf} + 2`)}` : sql``}
        AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)
      ORDER BY u.tx_num DESC, u.vout DESC
      LIMIT ${limit})
    UNION ALL
    -- the tip rides in the txid (its hash) and vout (its height) columns of a row of its own
    (SELECT 2, hash, height, NULL, NULL, NULL, NULL FROM chain_tip WHERE id = 1)`.execute(db);
  const mempool: UnspentRow[] = [];
  const confirmed: UnspentRow[] = [];
  let tipHeight = -1;
  let tipHash: Buffer | null = null;
  for (const x of r.rows) {
    if (x.part === 2) {
      tipHeight = x.vout;
      tipHash = x.txid;
    } else if (x.part === 0) mempool.push({ txid: x.txid, vout: x.vout, value: x.value, script: x.script, firstSeenUs: x.fs! });
    else confirmed.push({ txid: x.txid, vout: x.vout, value: x.value, script: x.script, txNum: x.tx_num! });
  }
  mempool.sort((a, b) =>
    a.firstSeenUs === b.firstSeenUs ? Buffer.compare(b.txid, a.txid) || b.vout - a.vout : a.firstSeenUs! < b.firstSeenUs! ? 1 : -1,
  );
  confirmed.sort((a, b) => (a.txNum === b.txNum ? b.vout - a.vout : a.txNum! < b.txNum! ? 1 : -1));
  return { mempool, confirmed, tipHeight, tipHash };
}

/**
 * Where an address's confirmed history is entered to skip its `skip` newest entries: the tx_num
 * bound (exclusive) below which the rest lies, or null when there are no more than `skip`. Chunk
 * sizes come from their lengths (no chunk is read whole but the one the skip ends in).
 */
export async function seekHistory(db: Kysely<Database>, addrKey: string, skip: number): Promise<bigint | null> {
  if (skip === 0) return MAX_TX_NUM_BOUND;
  const r = await sql<{ n: bigint | null }>`SELECT ${sqlHistorySkip(sql`${addrKey}::uuid`, sql`${skip}`)} AS n`.execute(db);
  return r.rows[0]?.n ?? null;
}

/** Larger than every tx_num: the bound of a list that starts at the newest entry. */
export const MAX_TX_NUM_BOUND = (1n << 62n) - 1n;

/**
 * Sum of the address's unspent coinbase outputs among `coinbaseTxNums` (the coinbases of the
 * blocks whose outputs are not mature yet), those spent by a mempool transaction left out.
 */
export async function getImmatureCoinbase(db: Kysely<Database>, addrKey: string, coinbaseTxNums: readonly bigint[]): Promise<bigint> {
  if (coinbaseTxNums.length === 0) return 0n;
  const r = await sql<{ sum: bigint | null }>`
    SELECT sum(u.value)::int8 AS sum FROM utxos u
     WHERE u.addr_key = ${addrKey} AND u.tx_num = ANY(${coinbaseTxNums.map(String)}::int8[])
       AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)`.execute(db);
  return r.rows[0]?.sum ?? 0n;
}
