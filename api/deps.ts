/**
 * What the API needs from the rest of Blockwire, as one deps object for `buildApi`, and the
 * small interfaces it calls: the node (broadcast, tip) and the stamping service (stamp/ plugs
 * one in). Also the fastify type augmentation every route file relies on (`request.apiKey`,
 * the route `config.scope` / `config.auth` flags).
 * @module
 */
import type { StampService } from '../src/stamp-service.js';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Redis } from 'ioredis';
import type { RateLimiter } from '../src/auth/rate-limit.js';
import type { NetworkName } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { ChainChanges } from '../src/db/chain-changes.js';
import type { Logger } from '../src/log.js';
import type { ApiKeyPrincipal, Scope } from '../src/auth/keys.js';
import type { HookUrlPolicy } from '../src/net/hook-url.js';
import type { Keyring } from '../src/auth/secret-box.js';

/**
 * The node calls the API makes. src/rpc's client satisfies it; errors it throws for a node
 * answer carry Core's numeric `code` (RpcError), anything else counts as "node unreachable".
 */
export interface NodeClient {
  /** `sendrawtransaction <hex>` → txid. */
  sendRawTransaction(hex: string): Promise<string>;
  /** `getblockchaininfo` (only the fields used here). */
  getBlockchainInfo(): Promise<{ chain: string; blocks: number; bestblockhash: string; initialblockdownload?: boolean }>;
  /** `getrawtransaction <txid> 0 <blockhash>` → the serialized transaction (no -txindex needed with the block). */
  getRawTransaction?(txid: string, blockhash?: string): Promise<Uint8Array>;
  /** `getblock <hash> 0` → the serialized block. */
  getBlockRaw?(hash: string): Promise<Uint8Array>;
  /** Several calls in one HTTP request (JSON-RPC batch); each result or its RpcError in order. */
  batch?<T = unknown>(calls: { method: string; params?: unknown[] }[]): Promise<(T | Error)[]>;
}

/** Tunables with their defaults in src/config.ts (API_* variables). */
export type ApiSettings = {
  /** Largest JSON body in bytes (413 above). */
  bodyLimit: number;
  /** Largest body of POST /transactions (a raw transaction as hex). */
  txBodyLimit: number;
  /** Deepest nesting of arrays and objects in a JSON body (400 above, before parsing). */
  bodyMaxDepth: number;
  /** Most array elements and object members in a JSON body, counted over all of it (400 above). */
  bodyMaxItems: number;
  /** Per-request time limit in ms (503 ERR_REQUEST_TIMEOUT). */
  requestTimeoutMs: number;
  /** Requests per key per window when the key has no limit of its own. */
  rateLimit: number;
  rateWindowMs: number;
  /** Share of a window's remaining requests this process grants per key while Redis does not answer. */
  rateFallbackShare: number;
  /** Invalid keys one client address may present per rate window before it is refused (429) without a lookup. */
  authFailureLimit: number;
  /** Most live subscriptions, and hooks, per key (409 ERR_LIMIT_REACHED above). */
  maxSubscriptionsPerKey: number;
  maxHooksPerKey: number;
  /** Most live wallets per key (409 ERR_LIMIT_REACHED above). */
  maxWalletsPerKey: number;
  /** Most BIP32 child keys one wallet request may derive (422 ERR_WALLET_TOO_LARGE above). */
  walletMaxDerivations: number;
  /** Redis key prefix for rate-limit counters. */
  redisPrefix: string;
  /** Address routes answer 503 ERR_INDEX_SYNCING while the index is more blocks than this behind the node. */
  maxLagBlocks: number;
  /** Browser origins given CORS headers (`*` for any); empty: none. */
  corsOrigins: readonly string[];
  /** Bytes of history chunks held for paging (api/cache/history-chunk-cache.ts); 0: none. */
  historyCacheBytes: number;
  /** Bytes of confirmed transactions held as built (api/cache/held-transactions.ts); 0: none. */
  txCacheBytes: number;
  /** Requests per rate window one client address may make to the Esplora dialect without a key; 0: a key is required. */
  esploraAnonymousRateLimit: number;
};

export const defaultApiSettings: ApiSettings = {
  bodyLimit: 64 * 1024,
  txBodyLimit: 2 * 1024 * 1024,
  bodyMaxDepth: 32,
  bodyMaxItems: 10_000,
  requestTimeoutMs: 10_000,
  rateLimit: 6000,
  rateWindowMs: 60_000,
  rateFallbackShare: 1,
  authFailureLimit: 600,
  maxSubscriptionsPerKey: 10_000,
  maxHooksPerKey: 100,
  maxWalletsPerKey: 100,
  walletMaxDerivations: 20_000,
  redisPrefix: 'bw',
  maxLagBlocks: 6,
  corsOrigins: [],
  historyCacheBytes: 64 * 1024 * 1024,
  txCacheBytes: 16 * 1024 * 1024,
  esploraAnonymousRateLimit: 0,
};

/** Everything `buildApi` takes. Only `db`, `log` and `network` are required. */
export type ApiDeps = {
  /** The primary: writes, keys, and every read that must see them. */
  db: Kysely<Database>;
  /** Chain reads (blocks, transactions, addresses, mempool): read replicas (api/cache/read-replicas.ts); default `db`. */
  readDb?: Kysely<Database>;
  log: Logger;
  /** The node's network: addresses of another network are refused (ERR_WRONG_NETWORK). */
  network: NetworkName;
  /** Broadcast and node tip; without it POST /transactions answers 503 ERR_NODE_UNAVAILABLE. */
  node?: NodeClient;
  /** Rate limits; without it no limit is applied (tests of other routes, tools). */
  redis?: Redis;
  /**
   * The process's rate limiter on `redis` (default: one made by the API): startApi makes it and
   * lends it to the stream upgrades of the same process, so that REST requests and upgrades of
   * a key share one local allowance while Redis does not answer.
   */
  limiter?: RateLimiter;
  /** The clock of the rate-limit windows, in ms (default Date.now; tests hold it so no window ends mid-test). */
  rateClock?: () => number;
  /**
   * Key verification; default `verifyApiKey(db, key)` (one database lookup per request).
   * startApi passes a cached verifier (src/auth/key-cache.ts) that LISTENs for revocations.
   */
  verifyKey?: (presented: string) => Promise<ApiKeyPrincipal | null>;
  /** The principal of a key the verifier remembers, without any check (lets the rate limit start early). */
  peekKey?: (presented: string) => ApiKeyPrincipal | undefined;
  /**
   * Chain changes of the database chain reads come from (startApi: the key verifier's LISTEN
   * connection, without read replicas): a held transaction is answered without reading its row
   * again while none came (api/cache/held-transactions.ts). Without it every lookup reads its row.
   */
  chainChanges?: ChainChanges;
  /**
   * The server keys that open signing keys' secrets (src/auth/secret-box.ts), read on each signed
   * request (startApi re-reads the keyring file when it changed); without it signed requests fail.
   */
  keyring?: () => Keyring | undefined;
  /**
   * The event log of a key for long polling (GET /v1/events; the streams role's, wired by the
   * command that starts the API); without it that route is not served (404).
   */
  events?: EventLogPoll;
  /** Stamping; without it the stamp routes answer 503 ERR_STAMPING_NOT_CONFIGURED. */
  stamps?: StampService;
  /** The node's tip as last seen (healthz, syncing check); startApi keeps one up to date. */
  nodeTip?: () => NodeTip | undefined;
  /**
   * True while the index is too far behind the node for address answers to be right (initial
   * sync); address routes then answer 503 ERR_INDEX_SYNCING. startApi computes it from its poll
   * and confirms a "syncing" answer against the live index tip, so catching up shows at once.
   */
  isSyncing?: () => boolean | Promise<boolean>;
  /** The stamping wallet's state for /healthz (stamp `Stamper.status`), when stamping runs. */
  stampStatus?: () => Promise<Record<string, unknown>>;
  /** Webhook URL policy of POST /hooks (src/net/hook-url.ts); default: public https only. */
  hookUrls?: HookUrlPolicy;
  settings?: Partial<ApiSettings>;
  /** Prometheus metrics (cli/ops/metrics.ts): request latency is recorded and GET /metrics served. */
  metrics?: ApiMetrics;
};

/** What the API needs of the process's metrics registry (cli/ops/metrics.ts `Metrics`). */
export type ApiMetrics = {
  readonly contentType: string;
  render(): Promise<string>;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Records one history page: from a chunk the API held, or cut by Postgres. */
  countHistoryPage(source: 'held' | 'cut'): void;
};

/** The node's tip as last polled, or the error that prevented it. */
export type NodeTip = { height: number; hash: string; at: Date; initialBlockDownload: boolean } | { error: string; at: Date };

/** The fastify instance routes are registered on. */
export type ApiInstance = FastifyInstance;

/** ApiDeps with settings filled in. */
export type ResolvedApiDeps = Omit<ApiDeps, 'settings' | 'readDb'> & { settings: ApiSettings; readDb: Kysely<Database> };

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The authenticated key. Set by the auth hook on every route that does not opt out with
     * `config: { auth: false }`; reading it on such a route throws.
     */
    apiKey: ApiKeyPrincipal;
  }
  interface FastifySchema {
    /** Leave the route out of /openapi.json. */
    hide?: boolean;
    summary?: string;
    description?: string;
    tags?: string[];
  }
  interface FastifyContextConfig {
    /** Scope the key needs (default `read`). */
    scope?: Scope;
    /** `false` for public routes (health, OpenAPI). Default true. */
    auth?: boolean;
    /** `'alongside'`: a read without side effects whose cached key's revocation check may run while it works (api/key-check.ts). */
    keyCheck?: 'alongside';
  }
}

/**
 * A key's events after an event id, as its stream carries them, waiting up to `waitMs` for the
 * first; with the indexed tip read together with the end of the log the answer covers.
 */
export type EventLogPoll = {
  poll(
    keyId: bigint,
    after: bigint | undefined,
    opts: { waitMs: number; limit: number; signal?: AbortSignal },
  ): Promise<{ events: string[]; next: bigint; tip: { height: number; hash: Uint8Array | null } }>;
};
