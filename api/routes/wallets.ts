/**
 * Wallets (docs/wallets.md): a key's output descriptors, tracked without a rescan since every
 * address is already indexed. POST /wallets {descriptors | xpub, gap_limit?} → the wallet with
 * its checksummed descriptors; GET /wallets, GET/DELETE /wallets/{id}; reads /balance,
 * /history (merged, newest first, the wallet's amounts per entry, paged), /unspentoutputs
 * (with derivation paths), /addresses (?used=, ?change=); POST /wallets/{id}/next-address
 * {change?, reserve?}. A key sees only its own wallets (another key's id answers 404).
 * Amounts are JSON numbers (satoshis).
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  descriptorForExtendedKey,
  DescriptorError,
  expandDescriptor,
  formatDescriptor,
  parseDescriptor,
  withChecksum,
  type Descriptor,
} from '../../src/bitcoin/descriptor.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { txNumHeight } from '../../src/db/tx-num.js';
import {
  createWallet,
  deleteWallet,
  findWallet,
  listWalletAddresses,
  listWalletHistory,
  listWallets,
  listWalletUnspent,
  nextAddress,
  walletBalances,
  walletChains,
  type WalletRow,
} from '../queries/wallets.js';
import { ServiceError } from '../../src/errors.js';
import { DeriveBudget, walletTooLarge, type DeriveOptions } from '../../src/db/wallet-derive-pool.js';
import { requestDeadline } from '../request-deadline.js';
import { isoTime } from '../../src/time.js';
import { decodeCursor, encodeCursor, type Cursor } from '../cursor.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';
import { assertNotSyncing } from './addresses.js';
import { newId } from './hooks.js';
import { batchPerTick } from '../cache/tick-batch.js';
import { keyCheckPassed } from '../key-check.js';
import { cutPage, unspentPage } from '../wallet-pages.js';

/** Gap limit when the body gives none (BIP44's), and the largest accepted. */
const DEFAULT_GAP_LIMIT = 20;
const MAX_GAP_LIMIT = 1000;

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^wal_[0-9a-f]{20}$' } } } as const;
const pageQuery = (def: number, max: number) =>
  ({
    type: 'object',
    additionalProperties: false,
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: max, default: def, description: `items per page (default ${def}, max ${max})` },
      cursor: { type: 'string', maxLength: 200, description: 'opaque cursor from the previous page\'s Link rel="next" header' },
    },
  }) as const;

const walletView = {
  type: 'object',
  required: ['id', 'descriptors', 'gap_limit', 'created_at', 'chains'],
  properties: {
    id: { type: 'string' },
    descriptors: {
      type: 'array',
      items: { type: 'string' },
      description: 'as tracked, normalized and checksummed as Bitcoin Core prints them',
    },
    gap_limit: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
    chains: {
      type: 'array',
      items: {
        type: 'object',
        required: ['descriptor', 'change', 'addresses', 'last_used_index'],
        properties: {
          descriptor: { type: 'string', description: 'single-path descriptor (a multipath one is two chains)' },
          change: { type: 'boolean' },
          addresses: { type: 'integer', description: 'addresses derived so far (last used or reserved index + 1 + gap limit)' },
          last_used_index: { type: ['integer', 'null'], description: 'highest index used by a transaction or reserved' },
        },
      },
    },
  },
} as const;

type Chain = { descriptor: string; change: boolean };

/**
 * The chains a list of descriptors stands for: a multipath `<a;b>` descriptor is its receive
 * (first) and change (second) branches; a single-path one is change when the step before its
 * `*` is 1 (BIP44's change chain), else receive.
 */
function chainsOf(descriptors: readonly Descriptor[]): Chain[] {
  const out: Chain[] = [];
  for (const d of descriptors) {
    if (d.branches > 2)
      throw new ServiceError('ERR_INVALID_DESCRIPTOR', { message: 'a multipath descriptor of a wallet has two paths: <receive;change>' });
    const expanded = expandDescriptor(d);
    if (expanded.length === 2) out.push({ descriptor: expanded[0]!, change: false }, { descriptor: expanded[1]!, change: true });
    else {
      const steps = d.keys[0]!.steps;
      out.push({ descriptor: expanded[0]!, change: steps[steps.length - 1] === 1 });
    }
  }
  if (new Set(out.map((c) => c.descriptor)).size !== out.length)
    throw new ServiceError('ERR_INVALID_DESCRIPTOR', { message: 'the same descriptor path is given twice' });
  return out;
}

/** Child keys per address summed over the chains of `descriptors` (a multipath descriptor is two chains). */
function chainCost(descriptors: readonly Descriptor[]): number {
  return descriptors.reduce((n, d) => n + d.keys.length * Math.min(d.branches, 2), 0);
}

/**
 * Runs `work` with the request's derivation options: in the pool under its key's turn, within
 * API_WALLET_MAX_DERIVATIONS, and abandoned (the thread terminated) when the request times out
 * (503 ERR_REQUEST_TIMEOUT) or its client goes away.
 */
async function deriving<T>(
  deps: ResolvedApiDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  work: (opts: DeriveOptions) => Promise<T>,
): Promise<T> {
  const deadline = requestDeadline(reply, deps.settings.requestTimeoutMs);
  try {
    return await work({
      owner: `key:${request.apiKey.id}`,
      budget: new DeriveBudget(deps.settings.walletMaxDerivations),
      signal: deadline.signal,
    });
  } catch (err) {
    throw deadline.explain(err);
  } finally {
    deadline.done();
  }
}

async function ownWallet(deps: ResolvedApiDeps, request: FastifyRequest<{ Params: { id: string } }>): Promise<WalletRow> {
  const w = await findWallet(deps.db, request.apiKey.id, request.params.id);
  if (!w) throw new ServiceError('ERR_WALLET_NOT_FOUND');
  return w;
}

async function toView(deps: ResolvedApiDeps, w: WalletRow) {
  const chains = await walletChains(deps.db, w.id);
  return {
    id: w.id,
    descriptors: w.descriptors,
    gap_limit: w.gap_limit,
    created_at: isoTime(w.created_at),
    chains: chains.map((c) => ({
      descriptor: c.descriptor,
      change: c.change,
      addresses: c.derived,
      last_used_index: c.used_max < 0 ? null : c.used_max,
    })),
  };
}

function setNext(request: FastifyRequest, reply: FastifyReply, limit: number, cursor: string | undefined): void {
  if (cursor === undefined) return;
  const path = request.url.split('?')[0]!;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(request.query as Record<string, unknown>))
    if (k !== 'cursor' && k !== 'limit' && v !== undefined) params.set(k, String(v));
  params.set('limit', String(limit));
  params.set('cursor', cursor);
  reply.header('Link', `<${path}?${params.toString()}>; rel="next"`);
}

async function tipHeight(deps: ResolvedApiDeps): Promise<number> {
  const r = await deps.db.selectFrom('chain_tip').select('height').where('id', '=', 1).executeTakeFirst();
  return r?.height ?? -1;
}

const confirmationsAt = (tip: number, txNum: bigint | null) => (txNum === null ? 0 : Math.max(1, tip - txNumHeight(txNum) + 1));

/** Address-list cursor: the last (chain, index) answered. */
const encodeAfter = (chain: number, idx: number) => Buffer.from(`a.${chain}.${idx}`).toString('base64url');
function decodeAfter(raw: string): { chain: number; idx: number } {
  const m = /^a\.(\d{1,5})\.(\d{1,10})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!m || Number(m[2]) > 0x7fffffff) throw new ServiceError('ERR_INVALID_CURSOR');
  return { chain: Number(m[1]), idx: Number(m[2]) };
}

type CreateBody = { descriptors?: string[]; xpub?: string; gap_limit?: number };
type IdRequest = { Params: { id: string } };
type PageRequest = IdRequest & { Querystring: { limit: number; cursor?: string } };

export const walletRoutes: RouteModule = (app, deps) => {
  const balances = batchPerTick((requests: { keyId: bigint; id: string }[]) => walletBalances(deps.db, requests));
  app.post<{ Body: CreateBody }>(
    '/wallets',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Track a wallet: output descriptors, or a bare xpub/ypub/zpub',
        description:
          "Descriptors: pkh, wpkh, sh(wpkh), tr (key path), wsh(multi|sortedmulti), sh(wsh(…)), sh(multi|sortedmulti) over extended public keys ending in /0/*, /1/* or /<0;1>/*; a given checksum must be Core's. A bare key maps to the descriptor its prefix implies (xpub/tpub → pkh, ypub/upub → sh(wpkh), zpub/vpub → wpkh) over /<0;1>/*. No rescan: the wallet answers at once from the index.",
        tags: ['wallets'],
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            descriptors: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 4000 } },
            xpub: {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              description: 'a bare extended public key (xpub, ypub, zpub, tpub, upub, vpub)',
            },
            gap_limit: {
              type: 'integer',
              minimum: 1,
              maximum: MAX_GAP_LIMIT,
              default: DEFAULT_GAP_LIMIT,
              description: 'unused addresses kept derived past the last used one, per chain',
            },
          },
        },
        response: { 201: walletView },
      },
    },
    async (request, reply) => {
      const b = request.body;
      if ((b.descriptors === undefined) === (b.xpub === undefined))
        throw new ServiceError('ERR_INVALID_BODY', { message: "body must have exactly one of 'descriptors' and 'xpub'" });
      let parsed: Descriptor[];
      try {
        parsed =
          b.xpub !== undefined
            ? [descriptorForExtendedKey(b.xpub, deps.network)]
            : b.descriptors!.map((d) => parseDescriptor(d, deps.network));
      } catch (err) {
        if (err instanceof DescriptorError) throw new ServiceError('ERR_INVALID_DESCRIPTOR', { message: err.message });
        throw err;
      }
      const chains = chainsOf(parsed);
      // Bounded in CPU before any work: every key of every chain's first gap_limit addresses.
      const gapLimit = b.gap_limit ?? DEFAULT_GAP_LIMIT;
      const cost = chainCost(parsed) * gapLimit;
      const limit = deps.settings.walletMaxDerivations;
      if (cost > limit) throw walletTooLarge(cost, limit);
      await assertNotSyncing(deps);
      const w = await deriving(deps, request, reply, (opts) =>
        createWallet(
          deps.db,
          {
            id: newId('wal'),
            keyId: request.apiKey.id,
            network: deps.network,
            descriptors: parsed.map((d) => withChecksum(formatDescriptor(d))),
            gapLimit,
            chains,
          },
          deps.settings.maxWalletsPerKey,
          opts,
        ),
      );
      return reply.code(201).send(await toView(deps, w));
    },
  );

  app.get(
    '/wallets',
    { schema: { summary: "The key's wallets", tags: ['wallets'], response: { 200: { type: 'array', items: walletView } } } },
    async (request) => {
      const rows = await listWallets(deps.db, request.apiKey.id);
      return Promise.all(rows.map((w) => toView(deps, w)));
    },
  );

  app.get<IdRequest>(
    '/wallets/:id',
    { schema: { summary: 'A wallet', tags: ['wallets'], params: idParams, response: { 200: walletView } } },
    async (request) => toView(deps, await ownWallet(deps, request)),
  );

  app.delete<IdRequest>(
    '/wallets/:id',
    {
      config: { scope: 'write' },
      schema: { summary: 'Stop tracking a wallet (its subscriptions end with it)', tags: ['wallets'], params: idParams },
    },
    async (request, reply) => {
      if (!(await deleteWallet(deps.db, request.apiKey.id, request.params.id))) throw new ServiceError('ERR_WALLET_NOT_FOUND');
      return reply.code(204).send();
    },
  );

  app.get<IdRequest>(
    '/wallets/:id/balance',
    {
      // A read without side effects: a cached key's revocation check runs while the summary is
      // read, and the answer waits for it (api/key-check.ts) — one round trip instead of two.
      config: { keyCheck: 'alongside' },
      schema: {
        summary: "Balance: confirmed, and the mempool's net change (confirmed + unconfirmed = the sum of the unspent outputs)",
        tags: ['wallets'],
        params: idParams,
        response: {
          200: {
            type: 'object',
            required: ['confirmed', 'unconfirmed'],
            properties: { confirmed: { type: 'integer' }, unconfirmed: { type: 'integer' } },
          },
        },
      },
    },
    async (request) => {
      // The wallet's row carries its balance summary, kept by the indexer with the rows
      // (indexer/wallet-balances.ts): one probe whatever the wallet's size, batched per tick.
      const b = await balances({ keyId: request.apiKey.id, id: request.params.id });
      if (!b) throw new ServiceError('ERR_WALLET_NOT_FOUND');
      await assertNotSyncing(deps);
      await keyCheckPassed(request);
      return { confirmed: Number(b.confirmed), unconfirmed: Number(b.unconfirmed) };
    },
  );

  app.get<PageRequest>(
    '/wallets/:id/history',
    {
      schema: {
        summary: "The wallet's transactions, merged, newest first (mempool first), with the wallet's amounts; paged",
        tags: ['wallets'],
        params: idParams,
        querystring: pageQuery(100, 1000),
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['transaction_hash', 'height', 'confirmations', 'received', 'sent', 'net'],
              properties: {
                transaction_hash: { type: 'string' },
                height: { type: ['integer', 'null'], description: 'null while in the mempool' },
                confirmations: { type: 'integer' },
                received: { type: 'integer', description: "sats paid to the wallet's addresses" },
                sent: { type: 'integer', description: "sats spent from the wallet's addresses" },
                net: { type: 'integer', description: 'received − sent' },
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const w = await ownWallet(deps, request);
      const { limit } = request.query;
      const cursor = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor, 'h');
      await assertNotSyncing(deps);
      const [tip, entries] = await Promise.all([
        tipHeight(deps),
        listWalletHistory(deps.db, w.id, {
          mempoolAfter:
            cursor === undefined ? undefined : cursor.phase === 'm' ? { firstSeenUs: cursor.firstSeenUs, txid: cursor.txid } : null,
          before: cursor?.phase === 'c' ? cursor.txNum : null,
          limit: limit + 1,
        }),
      ]);
      const page = cutPage(entries, limit);
      const last = page.last;
      const next: Cursor | undefined =
        last === undefined
          ? undefined
          : last.txNum === null
            ? { kind: 'h', phase: 'm', firstSeenUs: last.firstSeenUs!, txid: last.txid, vout: 0 }
            : { kind: 'h', phase: 'c', txNum: last.txNum, vout: 0 };
      setNext(request, reply, limit, next && encodeCursor(next));
      return page.rows.map((e) => ({
        transaction_hash: hashToHex(e.txid),
        height: e.txNum === null ? null : txNumHeight(e.txNum),
        confirmations: confirmationsAt(tip, e.txNum),
        received: Number(e.received),
        sent: Number(e.sent),
        net: Number(e.received - e.sent),
      }));
    },
  );

  app.get<PageRequest>(
    '/wallets/:id/unspentoutputs',
    {
      schema: {
        summary: "The wallet's unspent outputs (mempool ones with 0 confirmations first), with address and derivation path; paged",
        tags: ['wallets'],
        params: idParams,
        querystring: pageQuery(1000, 10000),
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['transaction_hash', 'index', 'value', 'script', 'confirmations', 'address', 'path', 'change', 'address_index'],
              properties: {
                transaction_hash: { type: 'string' },
                index: { type: 'integer' },
                value: { type: 'integer' },
                script: { type: 'string' },
                confirmations: { type: 'integer' },
                address: { type: 'string' },
                path: {
                  type: 'string',
                  description:
                    'from the master key when the descriptor gives the key origin (m/84h/0h/0h/0/5), else from the extended key (0/5)',
                },
                change: { type: 'boolean' },
                address_index: { type: 'integer' },
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const w = await ownWallet(deps, request);
      const { limit } = request.query;
      const cursor = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor, 'u');
      if (cursor && cursor.phase !== 'c') throw new ServiceError('ERR_INVALID_CURSOR');
      await assertNotSyncing(deps);
      const [tip, chains, read] = await Promise.all([
        tipHeight(deps),
        walletChains(deps.db, w.id),
        listWalletUnspent(deps.db, w.id, { before: cursor ? { txNum: cursor.txNum, vout: cursor.vout } : null, limit: limit + 1 }),
      ]);
      // The first page carries every mempool output (even beyond `limit`), then confirmed ones up to `limit` in all.
      const { rows, next } = unspentPage(read, limit);
      setNext(request, reply, limit, next && encodeCursor({ kind: 'u', phase: 'c', ...next }));
      const change = new Map(chains.map((c) => [c.chain, c.change]));
      return rows.map((u) => ({
        transaction_hash: hashToHex(u.txid),
        index: u.vout,
        value: Number(u.value),
        script: u.script.toString('hex'),
        confirmations: confirmationsAt(tip, u.txNum),
        address: u.address,
        path: u.path,
        change: change.get(u.chain) ?? false,
        address_index: u.idx,
      }));
    },
  );

  app.get<IdRequest & { Querystring: { used?: boolean; change?: boolean; limit: number; cursor?: string } }>(
    '/wallets/:id/addresses',
    {
      schema: {
        summary: "The wallet's derived addresses, used or not; paged",
        tags: ['wallets'],
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            used: { type: 'boolean', description: 'only used (true) or unused (false) addresses' },
            change: { type: 'boolean', description: 'only change (true) or receive (false) addresses' },
            ...pageQuery(1000, 10000).properties,
          },
        },
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              required: ['address', 'path', 'change', 'index', 'used', 'reserved'],
              properties: {
                address: { type: 'string' },
                path: { type: 'string' },
                change: { type: 'boolean' },
                index: { type: 'integer' },
                used: { type: 'boolean' },
                reserved: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const w = await ownWallet(deps, request);
      const q = request.query;
      const after = q.cursor === undefined ? undefined : decodeAfter(q.cursor);
      const [chains, read] = await Promise.all([
        walletChains(deps.db, w.id),
        listWalletAddresses(deps.db, w.id, {
          ...(q.used !== undefined ? { used: q.used } : {}),
          ...(q.change !== undefined ? { change: q.change } : {}),
          ...(after ? { after } : {}),
          limit: q.limit + 1,
        }),
      ]);
      const { rows, last } = cutPage(read, q.limit);
      setNext(request, reply, q.limit, last && encodeAfter(last.chain, last.idx));
      const change = new Map(chains.map((c) => [c.chain, c.change]));
      return rows.map((a) => ({
        address: a.address,
        path: a.path,
        change: change.get(a.chain) ?? false,
        index: a.idx,
        used: a.used,
        reserved: a.reserved,
      }));
    },
  );

  app.post<IdRequest & { Body: { change?: boolean; reserve?: boolean } }>(
    '/wallets/:id/next-address',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'The first unused address of the receive (or change) chain; with reserve, no later call answers it again',
        tags: ['wallets'],
        params: idParams,
        body: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: { change: { type: 'boolean', default: false }, reserve: { type: 'boolean', default: false } },
        },
        response: {
          200: {
            type: 'object',
            required: ['address', 'path', 'index', 'change'],
            properties: { address: { type: 'string' }, path: { type: 'string' }, index: { type: 'integer' }, change: { type: 'boolean' } },
          },
        },
      },
    },
    async (request, reply) => {
      const w = await ownWallet(deps, request);
      const change = request.body?.change ?? false;
      const a = await deriving(deps, request, reply, (opts) =>
        nextAddress(deps.db, w.id, { change, reserve: request.body?.reserve ?? false }, opts),
      );
      const chains = await walletChains(deps.db, w.id);
      return { address: a.address, path: a.path, index: a.idx, change: chains.find((c) => c.chain === a.chain)?.change ?? false };
    },
  );
};
