/**
 * Address lists given whole (Coinstack's listing, restserver.go FetchTransactionHistoryPaged and
 * FetchUnspentOutputs): the history cut by `skip`, `limit` and `confirmed`, and every unspent
 * output up to `amount`, with nothing given the whole list. Lists are streamed: read in keyset
 * pages of PAGE entries and written as they come, so memory stays bounded by one page whatever
 * the address (a million-entry history included); `skip` seeks into the history by chunk sizes
 * instead of reading what it skips. Parameters parse as Go's strconv.Atoi would; one that does
 * not parse takes its default, as in coinstackd.
 * @module
 */
import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { Database } from '../src/db/schema.js';
import { firstTxNum, txNumHeight, txNumPosition } from '../src/db/tx-num.js';
import { listHistoryPage, listUnspentPage, MAX_TX_NUM_BOUND, seekHistory, type MempoolCursor, type UnspentRow } from './queries/address.js';
import { ServiceError } from '../src/errors.js';
import { getAssetColors } from './queries/chain.js';
import { decodeAssetColors } from '../src/db/asset-colors.js';
import type { UnspentView } from './dialect.js';

/** Entries read per statement. */
const PAGE = 4096;
/** Confirmations a coinbase output needs before it can be spent (consensus). */
const COINBASE_MATURITY = 100;

/** A query value as Go's strconv.Atoi reads it, or undefined when it does not parse. */
export function atoi(raw: unknown): number | undefined {
  if (typeof raw !== 'string' || !/^[+-]?\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

export type HistoryCut = { skip: number; limit: number | undefined; mempool: boolean; chain: boolean };

/**
 * `skip` (default 0), `limit` (default and below 0: no limit) and `confirmed` (1: confirmed
 * only, 0: mempool only, other: both) of a history request. A negative skip is refused.
 */
export function historyCut(q: { skip?: unknown; limit?: unknown; confirmed?: unknown }): HistoryCut {
  const skip = atoi(q.skip) ?? 0;
  const limit = atoi(q.limit);
  const confirmed = atoi(q.confirmed) ?? -1;
  if (skip < 0) throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'skip count must be greater than zero' });
  return { skip, limit: limit === undefined || limit < 0 ? undefined : limit, mempool: confirmed <= 0, chain: confirmed !== 0 };
}

/** A JSON array written piece by piece from an async source of already-encoded items. */
function jsonArray(items: AsyncIterable<string>): Readable {
  async function* gen() {
    let first = true;
    yield '[';
    for await (const item of items) {
      yield first ? item : `,${item}`;
      first = false;
    }
    yield ']';
  }
  return Readable.from(gen(), { objectMode: false });
}

/** The txids (display hex) of an address's history, mempool part first, both newest first, cut as asked. */
async function* historyTxids(db: Kysely<Database>, addrKey: string, cut: HistoryCut): AsyncGenerator<string> {
  let skip = cut.skip;
  let left = cut.limit ?? Number.POSITIVE_INFINITY;
  if (left === 0) return;
  if (cut.mempool) {
    let after: MempoolCursor | undefined;
    for (;;) {
      const page = await listHistoryPage(db, addrKey, { mempoolAfter: after, before: 0n, minConf: 0, limit: PAGE });
      const part = page.mempool;
      for (const m of part) {
        if (skip > 0) {
          skip--;
          continue;
        }
        yield `"${hashToHex(m.txid)}"`;
        if (--left === 0) return;
      }
      if (part.length < PAGE) break;
      const last = part[part.length - 1]!;
      after = { firstSeenUs: last.firstSeenUs, txid: last.txid };
    }
  }
  if (!cut.chain) return;
  let before = await seekHistory(db, addrKey, skip);
  let at: { first: bigint; index: number } | undefined;
  while (before !== null) {
    const want = Math.min(PAGE, left);
    const page = await listHistoryPage(db, addrKey, { mempoolAfter: null, before, at, minConf: 0, limit: want });
    const n = page.chain.count;
    for (const hex of page.chain.txidsHex(n)) yield `"${hex}"`;
    left -= n;
    if (n < want || left <= 0) return;
    const last = page.chain.at(n - 1);
    before = last.n;
    // (an entry of the address's bucket has no chunk place: first < 0)
    at = last.first >= 0n ? { first: last.first, index: last.index } : undefined;
  }
}

/** The history as a streamed JSON array of txids. */
export function streamHistory(db: Kysely<Database>, addrKey: string, cut: HistoryCut): Readable {
  return jsonArray(historyTxids(db, addrKey, cut));
}

/** The tx_nums of the coinbases that are not mature at tip height `tip`. */
export function immatureCoinbases(tip: number): bigint[] {
  const out: bigint[] = [];
  for (let h = Math.max(0, tip - COINBASE_MATURITY + 2); h <= tip; h++) out.push(firstTxNum(h));
  return out;
}

/**
 * Every unspent output of an address (mempool outputs first, then confirmed newest first; those
 * spent by the mempool and, when `matureOnly`, immature coinbases left out), until their values
 * reach `amount` (0: all), each shaped by `shape` after `decorate` added what it knows.
 */
export async function* unspentOutputs(
  db: Kysely<Database>,
  addrKey: string,
  opts: { amount: bigint; matureOnly: boolean; decorate?: (rows: UnspentView[]) => Promise<void> },
): AsyncGenerator<UnspentView> {
  let sum = 0n;
  // the mempool part first (no confirmed rows asked for), then the confirmed part
  let mempoolAfter: MempoolCursor | undefined | null = undefined;
  let before = { txNum: 0n, vout: 0 };
  for (;;) {
    const page = await listUnspentPage(db, addrKey, { mempoolAfter, before, minConf: 0, limit: PAGE });
    const tip = page.tipHeight;
    const rows: UnspentRow[] = mempoolAfter === null ? page.confirmed : page.mempool;
    const views: UnspentView[] = [];
    for (const r of rows) {
      const confirmations = r.txNum === undefined ? 0 : Math.max(1, tip - txNumHeight(r.txNum) + 1);
      if (opts.matureOnly && r.txNum !== undefined && txNumPosition(r.txNum) === 0 && confirmations < COINBASE_MATURITY) continue;
      views.push({ txid: r.txid, vout: r.vout, value: r.value, script: r.script, confirmations, txNum: r.txNum });
    }
    await opts.decorate?.(views);
    for (const v of views) {
      yield v;
      sum += v.value;
      if (opts.amount > 0n && sum >= opts.amount) return;
    }
    if (rows.length === PAGE) {
      const last = rows[rows.length - 1]!;
      if (mempoolAfter === null) before = { txNum: last.txNum!, vout: last.vout };
      else mempoolAfter = { firstSeenUs: last.firstSeenUs!, txid: last.txid, vout: last.vout };
    } else if (mempoolAfter !== null) {
      mempoolAfter = null;
      before = { txNum: MAX_TX_NUM_BOUND, vout: 0 };
    } else {
      return;
    }
  }
}

/** Every unspent output as a streamed JSON array. */
export function streamUnspent(outputs: AsyncIterable<UnspentView>, shape: (u: UnspentView) => unknown): Readable {
  async function* encoded() {
    for await (const u of outputs) yield JSON.stringify(shape(u));
  }
  return jsonArray(encoded());
}

/** Adds to each unspent output the Open Assets color the index recorded for it, if any. */
export async function addAssetColors(db: Kysely<Database>, rows: UnspentView[]): Promise<void> {
  if (rows.length === 0) return;
  const { byNum, byTxid } = await getAssetColors(db, {
    txNums: rows.flatMap((r) => (r.txNum === undefined ? [] : [r.txNum])),
    txids: rows.filter((r) => r.txNum === undefined).map((r) => Buffer.from(r.txid)),
  });
  for (const r of rows) {
    const colors = r.txNum === undefined ? byTxid.get(Buffer.from(r.txid).toString('hex')) : byNum.get(r.txNum);
    if (colors) r.assets = decodeAssetColors(colors)[r.vout];
  }
}
