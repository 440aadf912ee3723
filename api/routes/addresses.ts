/**
 * GET /addresses/{address}/balance, /history and /unspentoutputs: mempool included with 0
 * confirmations unless `min_conf` ≥ 1; history newest first, mempool first. Lists as the dialect
 * reads them: /v1 pages history and unspent outputs by `limit` and an opaque cursor in a
 * `Link: <…>; rel="next"` header, bodies staying bare arrays; Coinstack's dialect gives them
 * whole, cut by skip/limit/confirmed or amount (../whole-lists.ts), and counts a coinbase output
 * only once mature. The address is checked (encoding,
 * checksum, network) before any query; a valid address no transaction touches has balance 0
 * and empty lists, like any address whose coins are all spent.
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { addressKey } from '../../src/db/address-key.js';
import { firstTxNum, txNumHeight } from '../../src/db/tx-num.js';
import {
  getBalanceExclusions,
  getBalanceParts,
  getBalancePartsMany,
  getImmatureCoinbase,
  listHistoryPages,
  readHistoryChunk,
  type HistoryPageRequest,
  listUnspentPage,
} from '../queries/address.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { parseAddressParam } from '../address-codec.js';
import { decodeCursor, encodeCursor, type Cursor } from '../cursor.js';
import { ServiceError } from '../../src/errors.js';
import { addressParams, balanceSchema, historySchema, unspentSchema } from '../schemas.js';
import type { ApiInstance, ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';
import type { Dialect } from '../dialect.js';
import { addAssetColors, historyCut, immatureCoinbases, streamHistory, streamUnspent, unspentOutputs, atoi } from '../whole-lists.js';
import { batchPerTick } from '../cache/tick-batch.js';
import { keyCheckPassed } from '../key-check.js';
import { setTipHeaders, withTipHeaders } from '../tip.js';
import { HistoryChunkCache } from '../cache/history-chunk-cache.js';
import { perApp } from '../cache/per-app.js';

const MAX_TX_NUM = (1n << 62n) - 1n;

type AddressParams = { Params: { address: string } };

/** Route schema of a paged address list. */
function pagedSchema(summary: string, body: Record<string, unknown>, querystring: object) {
  return {
    summary,
    description:
      'Newest first. Paged by `limit` and `cursor`; the next page\'s URL is in the `Link: <…>; rel="next"` header (absent on the last page).',
    tags: ['addresses'],
    params: addressParams,
    querystring,
    response: { 200: withTipHeaders({ ...body, headers: { Link: { type: 'string', description: '<url>; rel="next"' } } }) },
  };
}

/** Cuts `items` (fetched up to limit + 1) to the page; the cursor of its last item when more follow. */
function cutPage<T>(items: T[], limit: number, cursorOf: (last: T) => Cursor): Cursor | undefined {
  if (items.length <= limit) return undefined;
  items.length = limit;
  return cursorOf(items[limit - 1]!);
}
type PageQuery = { Querystring: { limit: number; cursor?: string; min_conf: number } };

/**
 * Where a page's mempool part starts: null when the page has none (min_conf ≥ 1, or the cursor is
 * already in the chain part), undefined for its start, else the cursor's mempool position.
 */
function mempoolAfter(q: PageQuery['Querystring'], cursor: Cursor | undefined): Extract<Cursor, { phase: 'm' }> | undefined | null {
  if (q.min_conf !== 0 || (cursor && cursor.phase !== 'm')) return null;
  return cursor?.phase === 'm' ? cursor : undefined;
}

/** The addr_key of a path address, or a 400 (invalid / wrong network) before any database access. */
export function resolveAddress(deps: ResolvedApiDeps, address: string): string {
  const r = parseAddressParam(address, deps.network);
  if ('problem' in r) {
    throw new ServiceError(r.problem === 'wrong_network' ? 'ERR_WRONG_NETWORK' : 'ERR_INVALID_ADDRESS', { message: r.message });
  }
  return addressKey(r.script);
}

/** 503 ERR_INDEX_SYNCING while the index is too far behind the node for answers to be right. */
export async function assertNotSyncing(deps: ResolvedApiDeps): Promise<void> {
  if (await deps.isSyncing?.()) throw new ServiceError('ERR_INDEX_SYNCING');
}

/** Exclusive tx_num bound of "at least minConf confirmations" at tip height `tip`. */
function confBound(tip: number, minConf: number): bigint {
  if (minConf <= 1) return MAX_TX_NUM;
  const h = tip - minConf + 2;
  return h <= 0 ? 0n : firstTxNum(h);
}

function setNextLink(request: FastifyRequest, reply: FastifyReply, q: PageQuery['Querystring'], next: Cursor | undefined): void {
  if (!next) return;
  const path = request.url.split('?')[0]!;
  const params = new URLSearchParams({ limit: String(q.limit) });
  if (q.min_conf) params.set('min_conf', String(q.min_conf));
  params.set('cursor', encodeCursor(next));
  reply.header('Link', `<${path}?${params.toString()}>; rel="next"`);
}

/** The held chunks of an app (one cache for its /v1 and bare routes, which register separately). */
const heldChunks = perApp((deps): HistoryChunkCache | undefined => {
  const bytes = deps.settings.historyCacheBytes;
  const load = (a: string, f: bigint) => readHistoryChunk(deps.readDb, a, f);
  const onLoadError = (err: unknown) => deps.log.warn({ err }, 'history chunk not read for the cache');
  const changes = deps.chainChanges;
  return bytes > 0 ? new HistoryChunkCache({ maxBytes: bytes, load, onLoadError, ...(changes ? { changes } : {}) }) : undefined;
});

export const addressRoutes: RouteModule = (app, deps, dialect) => {
  const { routes } = dialect;
  // Balance requests arriving together share one query (api/cache/tick-batch.ts).
  const balanceParts = batchPerTick(async (keys: string[]) =>
    keys.length === 1 ? [await getBalanceParts(deps.readDb, keys[0]!)] : getBalancePartsMany(deps.readDb, keys),
  );
  // So do history pages (one statement for one page or many), with the chunks paging reads held.
  const chunks = heldChunks(deps);
  if (chunks) app.addHook('onClose', () => chunks.settled());
  const historyPages = batchPerTick((requests: HistoryPageRequest[]) =>
    listHistoryPages(deps.readDb, requests).catch((err: unknown) => {
      chunks?.clear(); // the database may come back as another one (a restore): its chunks are not ours
      throw err;
    }),
  );
  app.get<AddressParams & { Querystring: { min_conf?: number } }>(
    '/addresses/:address/balance',
    {
      config: { keyCheck: 'alongside' },
      schema: {
        summary: "Balance: the sum of the address's unspent outputs (mempool included unless min_conf ≥ 1)",
        tags: ['addresses'],
        params: addressParams,
        ...(routes.addressQuery.balance ? { querystring: routes.addressQuery.balance } : {}),
        response: routes.response(withTipHeaders(balanceSchema)),
      },
    },
    async (request, reply) => {
      const addrKey = resolveAddress(deps, request.params.address);
      await assertNotSyncing(deps);
      const minConf = request.query.min_conf ?? 0;
      const parts = await balanceParts(addrKey);
      setTipHeaders(reply, { height: parts.tipHeight, hash: parts.tipHash });
      let balance =
        minConf === 0
          ? parts.confirmed + parts.mempool
          : parts.confirmed - (await getBalanceExclusions(deps.readDb, addrKey, confBound(parts.tipHeight, minConf)));
      if (routes.matureCoinbaseOnly) balance -= await getImmatureCoinbase(deps.readDb, addrKey, immatureCoinbases(parts.tipHeight));
      await keyCheckPassed(request);
      return { balance: Number(balance) };
    },
  );

  if (routes.listing === 'whole') {
    wholeLists(app, deps, dialect);
    return;
  }

  app.get<AddressParams & PageQuery>(
    '/addresses/:address/history',
    {
      config: { keyCheck: 'alongside' },
      schema: pagedSchema(
        'Transaction hashes of the address, newest first (mempool first), paged',
        historySchema,
        routes.addressQuery.history,
      ),
    },
    async (request, reply) => {
      const addrKey = resolveAddress(deps, request.params.address);
      const q = request.query;
      const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor, 'h');
      await assertNotSyncing(deps);
      const bound = cursor?.phase === 'c' ? cursor : undefined;
      const at = bound?.chunk;
      // A page deep inside one chunk may come from the chunk the process holds (checked by the
      // statement); otherwise the statement cuts it and the chunk is read for the next pages.
      const reusable = chunks !== undefined && at !== undefined && q.min_conf <= 1 && at.index > q.limit;
      const held = reusable ? chunks.page(addrKey, at.first, at.index, bound!.txNum, q.limit + 1) : undefined;
      // (read before the statement is sent: a change committed after this moves it)
      const generation = chunks?.chainGeneration;
      // With chain notifications, a held page the chain has not changed under needs no statement
      // (api/cache/history-chunk-cache.ts); only chain-part pages are held: a cursor in the chain
      // part has no mempool part.
      const unchangedTip = held && (await chunks!.unchanged(held, generation));
      const page =
        (held && unchangedTip && { mempool: [], chain: held.chain, fromHeld: true, tip: unchangedTip }) ||
        (await historyPages({
          addrKey,
          mempoolAfter: mempoolAfter(q, cursor),
          before: bound ? bound.txNum : MAX_TX_NUM,
          at,
          minConf: q.min_conf,
          limit: q.limit + 1,
          held,
        }));
      chunks?.answered(generation, page.tip, page.fromHeld ? { addrKey, first: at!.first, version: held!.version } : undefined);
      // (read the chunk when it is not held or the statement found a newer version; a cursor
      // that names no entry of a held chunk gets no read)
      if (reusable && !page.fromHeld && (held !== undefined || !chunks.holds(addrKey, at.first))) chunks.want(addrKey, at.first);
      deps.metrics?.countHistoryPage(page.fromHeld ? 'held' : 'cut');
      // The page: mempool entries, then chain entries, `q.limit` in all; one more means a next page.
      const inMempool = Math.min(page.mempool.length, q.limit);
      const inChain = Math.min(page.chain.count, q.limit - inMempool);
      const more = page.mempool.length + page.chain.count > q.limit;
      await keyCheckPassed(request);
      if (more) {
        let next: Cursor;
        if (inChain > 0) {
          const last = page.chain.at(inChain - 1);
          // (an entry of the address's bucket has no chunk to name: first < 0)
          next = {
            kind: 'h',
            phase: 'c',
            txNum: last.n,
            vout: 0,
            ...(last.first >= 0n ? { chunk: { first: last.first, index: last.index } } : {}),
          };
        } else {
          const last = page.mempool[inMempool - 1]!;
          next = { kind: 'h', phase: 'm', firstSeenUs: last.firstSeenUs, txid: last.txid, vout: 0 };
        }
        setNextLink(request, reply, q, next);
      }
      // (entries and txids come from one statement's snapshot: every chain entry has its txid)
      const out = [...page.mempool.slice(0, inMempool).map((m) => hashToHex(m.txid)), ...page.chain.txidsHex(inChain)];
      setTipHeaders(reply, page.tip);
      // Hex needs no escaping: the body is written here, not by the serializer (schema: historySchema).
      return reply.type('application/json; charset=utf-8').send(out.length === 0 ? '[]' : `["${out.join('","')}"]`);
    },
  );

  app.get<AddressParams & PageQuery>(
    '/addresses/:address/unspentoutputs',
    {
      config: { keyCheck: 'alongside' },
      schema: pagedSchema(
        'Outputs of the address spent by no block or mempool transaction (mempool outputs with 0 confirmations), paged',
        unspentSchema,
        routes.addressQuery.unspent,
      ),
    },
    async (request, reply) => {
      const addrKey = resolveAddress(deps, request.params.address);
      const q = request.query;
      const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor, 'u');
      await assertNotSyncing(deps);
      const want = q.limit + 1;
      const page = await listUnspentPage(deps.readDb, addrKey, {
        mempoolAfter: mempoolAfter(q, cursor),
        before: cursor?.phase === 'c' ? { txNum: cursor.txNum, vout: cursor.vout } : { txNum: MAX_TX_NUM, vout: 0 },
        minConf: q.min_conf,
        limit: want,
      });
      const tip = page.tipHeight;
      setTipHeaders(reply, { height: tip, hash: page.tipHash });
      const items = [...page.mempool, ...page.confirmed].slice(0, want);
      const next = cutPage(items, q.limit, (last) =>
        last.txNum !== undefined
          ? { kind: 'u', phase: 'c', txNum: last.txNum, vout: last.vout }
          : { kind: 'u', phase: 'm', firstSeenUs: last.firstSeenUs!, txid: last.txid, vout: last.vout },
      );
      await keyCheckPassed(request);
      setNextLink(request, reply, q, next);
      return items.map((i) =>
        dialect.shapes.unspent({
          txid: i.txid,
          vout: i.vout,
          value: i.value,
          script: i.script,
          // (a block applied after the tip was read still counts one confirmation)
          confirmations: i.txNum === undefined ? 0 : Math.max(1, tip - txNumHeight(i.txNum) + 1),
        }),
      );
    },
  );
};

/** History and unspent outputs given whole (Coinstack's listing), streamed. */
function wholeLists(app: ApiInstance, deps: ResolvedApiDeps, dialect: Dialect): void {
  const { routes } = dialect;
  app.get<AddressParams & { Querystring: Record<string, string | undefined> }>(
    '/addresses/:address/history',
    {
      config: { keyCheck: 'alongside' },
      schema: {
        summary: 'Transaction hashes of the address, mempool first, newest first',
        tags: ['addresses'],
        params: addressParams,
        querystring: routes.addressQuery.history,
      },
    },
    async (request, reply) => {
      const addrKey = resolveAddress(deps, request.params.address);
      const cut = historyCut(request.query);
      await assertNotSyncing(deps);
      await keyCheckPassed(request);
      return reply.type('application/json; charset=utf-8').send(streamHistory(deps.readDb, addrKey, cut));
    },
  );

  app.get<AddressParams & { Querystring: Record<string, string | undefined> }>(
    '/addresses/:address/unspentoutputs',
    {
      config: { keyCheck: 'alongside' },
      schema: {
        summary: 'Unspent outputs of the address, until their values reach amount',
        tags: ['addresses'],
        params: addressParams,
        querystring: routes.addressQuery.unspent,
      },
    },
    async (request, reply) => {
      const addrKey = resolveAddress(deps, request.params.address);
      const amount = BigInt(Math.max(0, atoi(request.query.amount) ?? 0));
      await assertNotSyncing(deps);
      await keyCheckPassed(request);
      const outputs = unspentOutputs(deps.readDb, addrKey, {
        amount,
        matureOnly: routes.matureCoinbaseOnly,
        decorate: (rows) => addAssetColors(deps.readDb, rows),
      });
      return reply.type('application/json; charset=utf-8').send(streamUnspent(outputs, dialect.shapes.unspent));
    },
  );
}
