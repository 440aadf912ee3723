/**
 * The API speaks two dialects over one index: Blockwire's own under `/v1`, and at the bare
 * paths the dialect of the Coinstack server (coinstack/coinstackd), so that Coinstack's own SDKs
 * work unmodified (docs/coinstack.md lists every difference, row by row). This is the one place
 * that decides which dialect a request is in: buildApi registers the route modules once per
 * dialect under its prefix and hands each module the dialect object, and everything that
 * differs between the two (error bodies, how the key is presented, request parsing, shapes of
 * answers and parameters) is a member of that object. Route modules never test the prefix or
 * the dialect's name.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceError } from '../src/errors.js';
import type { SubscriptionRow } from './queries/tenancy-subscriptions.js';
import type { OutputAssets } from '../src/bitcoin/open-assets.js';
import type { ApiInstance, ResolvedApiDeps } from './deps.js';

/**
 * A route module: registers its routes on `app`, once for each dialect that serves it (under
 * the dialect's prefix), answering in that dialect. Add new modules to `routeModules` in
 * api/routes/index.ts.
 */
export type RouteModule<D extends DialectEdge = Dialect> = (app: ApiInstance, deps: ResolvedApiDeps, dialect: D) => void | Promise<void>;

/**
 * How a dialect answers one resource (a block, a transaction): its response schema and its
 * loader, which gives the answer with the indexed tip its index reads were made at (api/tip.ts:
 * one snapshot), or undefined when the index has no such resource.
 */
export type ResourceAnswer = {
  schema: Record<string, unknown>;
  load(deps: ResolvedApiDeps, hash: Buffer): Promise<{ answer: object; tip: Tip } | undefined>;
};
export type BlockAnswer = ResourceAnswer;
export type TransactionAnswer = ResourceAnswer;
/** How a dialect answers GET /stamps/{id}: its response schema, and the answer made of what the stamping role tells. */
export type StampAnswer = { schema: Record<string, unknown>; show(deps: ResolvedApiDeps, stamp: StampRecord): Promise<object> };
import type { StampRecord } from '../src/stamp-service.js';
import type { Tip } from './queries/chain.js';
import type { JsonBodyParser } from './json-body.js';

export type DialectName = 'v1' | 'coinstack' | 'esplora';

/** How a request presents its key: a bearer token, or an HMAC signature over the request. */
export type Credentials =
  | { kind: 'none' }
  | { kind: 'token'; key: string | string[] | undefined }
  | { kind: 'hmac'; authorization: string }
  /** A command of an open socket, which authenticated on its upgrade (api/socket-sessions.ts). */
  | { kind: 'session'; token: string };

/**
 * The edge of a dialect: its prefix, how a request presents its key, how errors and unknown paths
 * are answered. A dialect whose routes are all its own (Esplora's) is no more than this; route
 * modules that read nothing of the dialect (RouteModule<DialectEdge>) serve it too.
 */
export interface DialectEdge {
  readonly name: DialectName;
  /** Path prefix its routes are served under (`/v1`, or `''` for the bare paths). */
  readonly prefix: string;
  /** Whether /openapi.json describes its routes (it describes one dialect: Blockwire's). */
  readonly described: boolean;
  /**
   * Installs what the dialect's scope needs before its routes: request parsing (content types;
   * JSON text goes through `parseJson`, bounded by size and shape), and the not-found answer for
   * paths under its prefix that no route serves.
   */
  install(scope: FastifyInstance, parseJson: JsonBodyParser): void;
  /** Sends `err` as this dialect's error answer (status, headers, body). */
  sendError(reply: FastifyReply, err: ServiceError): FastifyReply;
  /** How `request` presents its key (read in the authentication hook). */
  credentials(request: FastifyRequest): Credentials;
  /**
   * Requests per rate window one client address may make without a key (each address counted as
   * a key of its own); 0 or absent: a key is required.
   */
  anonymousRateLimit?(deps: ResolvedApiDeps): number;
}

/** What a route module shared by /v1 and the Coinstack dialect needs of the dialect it is registered in. */
export interface Dialect extends DialectEdge {
  readonly routes: DialectRoutes;
  /** GET /blocks/{hash}, GET /transactions/{hash} and GET /stamps/{id}: what the dialect loads and shows. */
  readonly answers: { block: BlockAnswer; transaction: TransactionAnswer; stamp: StampAnswer };
  readonly shapes: DialectShapes;
}

/** An unspent output of an address as the index knows it. */
export type UnspentView = {
  txid: Uint8Array;
  vout: number;
  value: bigint;
  script: Uint8Array;
  confirmations: number;
  txNum?: bigint | undefined;
  assets?: OutputAssets | undefined;
};

/** How address lists are read: pages with a cursor in a Link header, or whole lists cut by skip/limit. */
export type Listing = 'cursor' | 'whole';

/** Shapes and parameters of the routes, where the dialects differ. */
export interface DialectRoutes {
  /** Schema of a `{hash}` path parameter. */
  readonly hashParams: object;
  /** The hash a path names (internal byte order); a malformed one throws ServiceError `notFound` or ERR_INVALID_HASH. */
  parseHash(raw: string, notFound: 'ERR_BLOCK_NOT_FOUND' | 'ERR_TX_NOT_FOUND'): Buffer;
  /** Whether the request asks for the raw object as hex text (`?format=hex`). */
  wantsHex(request: FastifyRequest): boolean;
  /** Query schemas of the address routes. */
  readonly addressQuery: { balance?: object; history: object; unspent: object };
  readonly listing: Listing;
  /** Whether coinbase outputs count in balances and unspent lists only once mature (100 confirmations). */
  readonly matureCoinbaseOnly: boolean;
  /** Schema of the POST /transactions body. */
  readonly broadcastBody: object;
  /** Schema of the POST /subscriptions body. */
  readonly subscriptionBody: object;
  /** Response schemas (they also serialize); none where the answer's key order is written by hand. */
  response(schema: object): Record<number, object> | undefined;
}

/** How the dialect writes the resources it does not load itself. */
export interface DialectShapes {
  unspent(u: UnspentView): unknown;
  /** The answer to a broadcast accepted by the node. */
  broadcast(txid: string): unknown;
  subscription(s: SubscriptionRow): unknown;
  /** Answers a deletion that succeeded. */
  deleted(reply: FastifyReply): FastifyReply;
}
