/**
 * The Coinstack dialect, served at the bare paths: answers as coinstackd does (restserver.go,
 * coinstack/client/model.go), so that Coinstack's SDKs work unmodified. Errors as `CoinStackError`
 * JSON with numeric codes (coinstack-errors.ts); the key as an `APIKey` header (any case),
 * `?apikey=`, or an HMAC signature (../signed-request.ts); request bodies read as JSON whatever
 * their Content-Type (coinstackd binds JSON without looking at it, and the Java SDK sends none);
 * a path no route serves is gin's plain-text 404. Shapes in the key order of coinstackd's Go
 * structs; every difference from /v1 is listed in docs/coinstack.md.
 * @module
 */
import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../../src/errors.js';
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { isoFromUnix, isoTime } from '../../src/time.js';
import { describeOutput } from '../address-codec.js';
import { checkBodyDigest } from '../signed-request.js';
import { SESSION_HEADER } from '../socket-sessions.js';
import { heldTransactions, loadIndexedTx, toHex, type IndexedTx } from '../transaction-view.js';
import { findBlockByHash, listBlockTxids } from '../queries/chain.js';
import type { BlockAnswer, Credentials, Dialect, TransactionAnswer } from '../dialect.js';
import type { NetworkName } from '../../src/config.js';
import { sendCoinstackError } from './coinstack-errors.js';
import { specStampAnswer } from '../routes/stamps.js';
import { coinstackMetadata } from './coinstack-assets.js';
import { readAtTip } from '../tip.js';

/** Query parameters coinstackd turns into headers before authenticating (browser SDK). */
const AUTH_QUERY = ['apikey', 'auth', 'md5', 'content-type'] as const;

/** The key or signature a request presents, in coinstackd's order: `APIKey` first, then HMAC. */
function coinstackCredentials(request: FastifyRequest): Credentials {
  const q = request.query as Record<string, unknown> | undefined;
  const fromQuery = (name: string) => (typeof q?.[name] === 'string' ? (q[name] as string) : undefined);
  const session = request.headers[SESSION_HEADER];
  if (typeof session === 'string') return { kind: 'session', token: session };
  const token = fromQuery('apikey') ?? request.headers['apikey'];
  if (token !== undefined && token !== '') return { kind: 'token', key: token };
  const authorization = fromQuery('auth') ?? request.headers.authorization;
  if (authorization) return { kind: 'hmac', authorization };
  return { kind: 'none' };
}

const HASH_RE = /^[0-9a-fA-F]{64}$/;

/** Query parameters coinstackd reads with strconv.Atoi: any string; the route parses it. */
const atoiQuery = (names: string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((n) => [n, { type: 'string', maxLength: 40 }])),
});

/** coinstackd's Transaction (model.go), from the index's view of the transaction. */
function coinstackTransaction(tx: IndexedTx, network: NetworkName) {
  const inputs = tx.coinbase
    ? []
    : tx.inputs.map((i) => {
        const first = i.prevout ? describeOutput(i.prevout.script, network).addresses[0] : undefined;
        return {
          transaction_hash: hashToHex(i.prevTxid),
          output_index: i.vout,
          address: first === undefined ? null : [first],
          value: i.prevout ? i.prevout.value.toString() : '0',
        };
      });
  const addresses: string[] = [];
  const outputs = tx.outputs.map((o, index) => {
    const { addresses: own, data } = describeOutput(o.script, network);
    addresses.push(...own);
    const metadata = tx.assets?.[index];
    return {
      index,
      ...(own.length > 0 ? { address: own } : {}),
      value: o.value.toString(),
      script: toHex(o.script),
      // (a data output is never spent: it is in no unspent set to be spent from)
      used: data === undefined && tx.used(index),
      ...(metadata ? { metadata: coinstackMetadata(metadata) } : {}),
    };
  });
  return {
    transaction_hash: hashToHex(tx.txid),
    block_hash: tx.block ? [{ block_hash: hashToHex(tx.block.hash), block_height: tx.block.height }] : [],
    coinbase: tx.coinbase,
    is_deleted: false,
    inputs,
    outputs,
    // (coinstackd gives a mempool transaction the time of the request)
    time: tx.block ? isoFromUnix(tx.block.time) : isoTime(new Date()),
    addresses,
  };
}

/** coinstackd's Block (model.go): `children` left out at the tip, as its `omitempty` does. */
const coinstackBlock: BlockAnswer = {
  schema: {},
  async load(deps, hash) {
    const { value: read, tip } = await readAtTip(deps.readDb, async (trx) => {
      const block = await findBlockByHash(trx, hash);
      return block && { block, txids: await listBlockTxids(trx, block.height) };
    });
    if (!read) return undefined;
    const { block, txids } = read;
    const answer = {
      block_hash: hashToHex(block.hash),
      height: block.height,
      confirmation_time: isoFromUnix(block.time),
      parent: hashToHex(block.prev_hash),
      ...(block.next_hash ? { children: [hashToHex(block.next_hash)] } : {}),
      transaction_list: txids.map((t) => hashToHex(t)),
    };
    return { answer, tip };
  },
};

const coinstackTransactionAnswer: TransactionAnswer = {
  schema: {},
  async load(deps, txid) {
    const r = await loadIndexedTx(deps.readDb, txid, deps.node, heldTransactions(deps));
    return r && { answer: coinstackTransaction(r.tx, deps.network), tip: r.tip };
  },
};

export const coinstackDialect: Dialect = {
  name: 'coinstack',
  prefix: '',
  described: false,
  install(scope, json) {
    // Any Content-Type (or none) is read as JSON, with the API's JSON parser, once a signed
    // request's body matched its Content-MD5.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
      try {
        checkBodyDigest(request, body as Buffer);
      } catch (err) {
        done(err as Error, undefined);
        return;
      }
      json(request, (body as Buffer).toString('utf8'), done);
    });
    // The credentials in the query are the request's headers, not parameters of the route.
    scope.addHook('preValidation', async (request) => {
      const q = request.query as Record<string, unknown> | undefined;
      if (q) for (const name of AUTH_QUERY) delete q[name];
    });
    scope.setNotFoundHandler((_request, reply) => reply.code(404).type('text/plain').send('404 page not found'));
  },
  sendError: sendCoinstackError,
  credentials: coinstackCredentials,
  routes: {
    hashParams: { type: 'object', required: ['hash'], properties: { hash: { type: 'string' } } },
    parseHash(raw, notFound) {
      if (!HASH_RE.test(raw)) throw new ServiceError(notFound);
      return Buffer.from(hexToHash(raw));
    },
    wantsHex: (request) => (request.query as Record<string, unknown> | undefined)?.format === 'hex',
    addressQuery: { history: atoiQuery(['skip', 'limit', 'confirmed']), unspent: atoiQuery(['amount']) },
    listing: 'whole',
    matureCoinbaseOnly: true,
    broadcastBody: { type: 'object', required: ['tx'], properties: { tx: { type: 'string', pattern: '^[0-9a-fA-F]*$' } } },
    subscriptionBody: {
      type: 'object',
      additionalProperties: false,
      required: ['address'],
      properties: { address: { type: 'string', maxLength: 100 }, action: { type: ['string', 'null'], maxLength: 40 } },
    },
    response: () => undefined,
  },
  answers: { block: coinstackBlock, transaction: coinstackTransactionAnswer, stamp: specStampAnswer },
  shapes: {
    unspent: (u) => ({
      // internal byte order, as coinstackd's reverseEndianness writes it (both SDKs reverse it back)
      transaction_hash: toHex(u.txid),
      index: u.vout,
      value: u.value.toString(),
      script: toHex(u.script),
      confirmations: u.confirmations,
      ...(u.assets ? { metadata: coinstackMetadata(u.assets) } : {}),
    }),
    broadcast: () => ({ status: 'successful' }),
    subscription: (s) => ({ id: s.id, address: s.address, action: s.hook_id }),
    deleted: (reply) => reply.code(200).send({ status: 'successful' }),
  },
};
