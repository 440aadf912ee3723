/**
 * Configuration: the one place that knows environment variable names. `loadConfig(env)` is pure:
 * it validates, applies defaults and returns a frozen object, or throws a ConfigError listing
 * every bad variable. Each entry of `settings` documents one variable; docs/configuration.md is
 * generated from this table (`blockwire config --markdown`).
 * @module
 */
import { AppError } from './errors.js';
import { NETWORK_NAMES, type NetworkName } from './bitcoin/network.js';

/** The networks Blockwire knows (src/bitcoin/network.ts holds their parameters). */
export const NETWORKS = NETWORK_NAMES;
export type { NetworkName };

export const ROLES = ['all', 'indexer', 'api', 'streams', 'worker', 'electrum'] as const;
export type Role = (typeof ROLES)[number];

/** The fewest blocks whose spent outputs the undo store keeps: Core keeps at least 288 blocks when pruned. */
export const UNDO_BLOCKS_MIN = 288;

type Parser<T> = (raw: string) => T;

type Setting<T> = {
  /** Environment variable name. */
  env: string;
  /** Default when unset; `undefined` means optional with no default. */
  default: T | undefined;
  /** One sentence for the configuration table. */
  doc: string;
  parse: Parser<T>;
};

const str: Parser<string> = (raw) => raw;
const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> =>
  (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be an integer, got '${raw}'`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
    return n;
  };
const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  throw new Error(`must be a boolean (1/0, true/false), got '${raw}'`);
};
const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw) => {
    if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}, got '${raw}'`);
    return raw as T;
  };
const url =
  (protocols: string[]): Parser<string> =>
  (raw) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new Error(`must be a URL, got '${raw}'`);
    }
    if (!protocols.includes(u.protocol)) throw new Error(`must use ${protocols.join(' or ')}, got '${u.protocol}'`);
    return raw;
  };

/** Comma-separated URLs of the given protocols; empty for none. */
const urls =
  (protocols: string[]): Parser<string[]> =>
  (raw) =>
    raw
      .split(',')
      .map((u) => u.trim())
      .filter((u) => u !== '')
      .map(url(protocols));

/** `host:port` pairs, comma-separated; empty for none. */
const hostPorts: Parser<string[]> = (raw) =>
  raw
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '')
    .map((h) => {
      const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(h);
      if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new Error(`'${h}' is not host:port`);
      return h;
    });

/** A decimal number in [min, max] with at most 3 decimals (fee rates in sat/vB). */
const decimal =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    if (!/^\d+(\.\d{1,3})?$/.test(raw.trim())) throw new Error(`must be a decimal number with at most 3 decimals, got '${raw}'`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
    return n;
  };

/** Browser origins (`scheme://host[:port]`, comma-separated) or `*`; empty for none. */
const origins: Parser<string[]> = (raw) => {
  const list = raw
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (list.includes('*')) {
    if (list.length > 1) throw new Error(`'*' allows every origin and cannot be combined with others, got '${raw}'`);
    return ['*'];
  }
  for (const o of list) {
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      u = undefined;
    }
    if (!u || !['http:', 'https:'].includes(u.protocol) || u.origin !== o)
      throw new Error(`'${o}' is not an origin (scheme://host[:port], no path or trailing slash)`);
  }
  return list;
};

/** A Redis key prefix: BullMQ forbids ':' in it. */
const redisPrefix: Parser<string> = (raw) => {
  if (!/^[A-Za-z0-9_{}.-]{1,64}$/.test(raw)) throw new Error(`must be 1-64 characters of A-Z a-z 0-9 _ - . { } (no ':'), got '${raw}'`);
  return raw;
};

function setting<T>(env: string, def: T | undefined, doc: string, parse: Parser<T>): Setting<T> {
  return { env, default: def, doc, parse };
}

/** Every setting, keyed by its name in the Config object. */
export const settings = {
  network: setting<NetworkName | undefined>(
    'BITCOIN_NETWORK',
    undefined,
    'Network of the node (main, test, testnet4, signet, regtest); detected from the node when unset.',
    oneOf(NETWORKS),
  ),
  bitcoindRpcUrl: setting<string | undefined>(
    'BITCOIND_RPC_URL',
    undefined,
    'Bitcoin Core JSON-RPC URL with credentials, `http://user:password@host:port`. When unset (and no cookie file), `blockwire start` runs a regtest node itself: Bitcoin Core when installed, else its built-in stand-in (BLOCKWIRE_QUICKSTART_NODE).',
    url(['http:', 'https:']),
  ),
  bitcoindCookieFile: setting<string | undefined>(
    'BITCOIND_COOKIE_FILE',
    undefined,
    "Path to bitcoind's `.cookie` file, used for RPC credentials instead of a user and password in the URL.",
    str,
  ),
  bitcoindZmqUrl: setting<string | undefined>(
    'BITCOIND_ZMQ_URL',
    undefined,
    'ZMQ endpoint of the node (`tcp://host:port`) publishing `sequence`, `hashblock` and `rawtx`; a wake-up hint only.',
    url(['tcp:']),
  ),
  bitcoindRest: setting<'auto' | 'on' | 'off'>(
    'BITCOIND_REST',
    'auto',
    "Fetch blocks over the node's REST interface (`-rest=1`): auto probes it, on requires it, off uses RPC only.",
    oneOf(['auto', 'on', 'off'] as const),
  ),
  databaseUrl: setting<string | undefined>(
    'DATABASE_URL',
    undefined,
    'PostgreSQL URL. When unset, an embedded PostgreSQL is started with its data under BLOCKWIRE_DATA_DIR.',
    url(['postgres:', 'postgresql:']),
  ),
  databaseReadUrls: setting<string[]>(
    'DATABASE_READ_URL',
    [],
    "PostgreSQL streaming replicas the API reads chain data from (blocks, transactions, addresses, mempool), comma-separated; writes, keys and their revocations stay on DATABASE_URL. A replica more than API_MAX_LAG_BLOCKS behind the primary's index, or unreachable, is skipped (docs/scaling.md). Empty: every read goes to DATABASE_URL.",
    urls(['postgres:', 'postgresql:']),
  ),
  serverSecretKeys: setting<string | undefined>(
    'BLOCKWIRE_SERVER_SECRET_KEYS',
    undefined,
    'Server keys that seal the secrets of HMAC signing keys at rest, `<id>:<32 bytes base64>` separated by commas; the first seals, all open (rotation: docs/coinstack.md). When unset, the file `server-keys` under BLOCKWIRE_DATA_DIR, created by the first `keys create --secret`.',
    str,
  ),
  dataDir: setting<string>(
    'BLOCKWIRE_DATA_DIR',
    '.blockwire',
    "Directory for embedded PostgreSQL, the embedded Redis and the quick start's node (the regtest bitcoind's datadir or the devnode chain).",
    str,
  ),
  devnodeRpcPort: setting<number>(
    'BLOCKWIRE_DEVNODE_RPC_PORT',
    19443,
    "RPC/REST port of the built-in regtest stand-in (devnode) when no bitcoind is configured; 0 = a free port. Not Core's 18443, so that it never meets a real regtest node; the quick start takes a free port when this default is busy.",
    int(0, 65535),
  ),
  devnodeZmqPort: setting<number>(
    'BLOCKWIRE_DEVNODE_ZMQ_PORT',
    29443,
    'ZMQ port of the devnode; 0 = a free port. Not the usual 28332 of a real node; the quick start takes a free port when this default is busy.',
    int(0, 65535),
  ),
  devnodeMineEvery: setting<number>(
    'BLOCKWIRE_DEVNODE_MINE_EVERY',
    5,
    "Seconds between the blocks the quick start's node (the devnode or a regtest bitcoind it runs) mines with sample payments (0 = mine only on request).",
    int(0, 86_400),
  ),
  quickStartNode: setting<'auto' | 'bitcoind' | 'devnode'>(
    'BLOCKWIRE_QUICKSTART_NODE',
    'auto',
    'The node `blockwire start` runs when none is configured (BITCOIND_RPC_URL and BITCOIND_COOKIE_FILE unset): `bitcoind` a real regtest Bitcoin Core (BITCOIND_BIN, else the first `bitcoind` on the PATH; its datadir under BLOCKWIRE_DATA_DIR), `devnode` the built-in stand-in, `auto` bitcoind when one is found, else the devnode.',
    oneOf(['auto', 'bitcoind', 'devnode'] as const),
  ),
  bitcoindBin: setting<string | undefined>(
    'BITCOIND_BIN',
    undefined,
    'The `bitcoind` executable the quick start runs (BLOCKWIRE_QUICKSTART_NODE); when unset, the first `bitcoind` on the PATH.',
    str,
  ),
  redisUrl: setting<string | undefined>(
    'REDIS_URL',
    undefined,
    'Redis URL (`redis://host:port`). When unset, a `redis-server` child is started on a free port.',
    url(['redis:', 'rediss:']),
  ),
  redisSentinels: setting<string[]>(
    'REDIS_SENTINELS',
    [],
    'Redis Sentinel addresses, `host:port` comma-separated: every Redis user (queues, stream feed, rate limits) asks them for the primary of REDIS_SENTINEL_NAME and follows a failover. Takes the place of REDIS_URL (docs/scaling.md).',
    hostPorts,
  ),
  redisSentinelName: setting<string>(
    'REDIS_SENTINEL_NAME',
    'mymaster',
    'Name of the primary the Sentinels of REDIS_SENTINELS monitor (`sentinel monitor <name> …`).',
    str,
  ),
  host: setting<string>('HOST', '127.0.0.1', 'Address the HTTP API and stream listen on.', str),
  port: setting<number>(
    'PORT',
    3000,
    'Port of the HTTP API and WebSocket stream. With nothing configured (the quick start) a free port is taken when 3000 is busy; a PORT you set that is busy stops the start, named.',
    int(0, 65535),
  ),
  logLevel: setting<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>(
    'LOG_LEVEL',
    'info',
    'Log level.',
    oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
  ),
  logFormat: setting<'auto' | 'json' | 'pretty'>(
    'LOG_FORMAT',
    'auto',
    'Log line format: `json` (one JSON object a line, level names as strings), `pretty` (human, one line each), `auto` = pretty when stdout is a terminal, JSON otherwise.',
    oneOf(['auto', 'json', 'pretty'] as const),
  ),
  allowPrivateHooks: setting<boolean>(
    'BLOCKWIRE_ALLOW_PRIVATE_HOOKS',
    false,
    'Allow webhook URLs that resolve to private, loopback or link-local addresses (tests and closed networks only). The quick start (DATABASE_URL unset, NODE_ENV not production) allows them unless this is set.',
    bool,
  ),
  pollIntervalMs: setting<number>(
    'POLL_INTERVAL_MS',
    2000,
    "Interval of the indexer's fallback poll of the node, in milliseconds.",
    int(50, 600_000),
  ),
  indexerMaxReorgDepth: setting<number>(
    'INDEXER_MAX_REORG_DEPTH',
    1000,
    'Deepest reorg the indexer undoes on its own; a deeper one stops it with ERR_REORG_TOO_DEEP.',
    int(1, 1_000_000),
  ),
  indexerUndoBlocks: setting<number>(
    'INDEXER_UNDO_BLOCKS',
    UNDO_BLOCKS_MIN,
    `How many of the newest blocks keep their spent outputs in the undo store (block_undo), from which a reorg restores them; at least ${UNDO_BLOCKS_MIN} (Core's pruning floor). A block deeper than that, or loaded by the bulk path, is undone with the outputs it spent as the node gives them (/rest/spenttxouts, else getblock 3).`,
    int(UNDO_BLOCKS_MIN, 1_000_000),
  ),
  indexerTxidCacheTxs: setting<number>(
    'INDEXER_TXID_CACHE_TXS',
    4_000_000,
    'How many of the newest applied transactions the indexer remembers (txid to tx_num, about 32 bytes each), so that a block spending their outputs deletes them without looking the txids up in txs; 0 turns it off.',
    int(0, 100_000_000),
  ),
  indexerBulkThreshold: setting<number>(
    'INDEXER_BULK_THRESHOLD',
    1000,
    'Blocks behind the node at which the indexer takes the bulk path (COPY, indexes built after) instead of block by block.',
    int(1, 100_000_000),
  ),
  indexerBulkNearTip: setting<number>(
    'INDEXER_BULK_NEAR_TIP',
    12,
    "The bulk path stops this many blocks below the node's tip and hands over to the per-block path.",
    int(0, 100_000),
  ),
  indexerBulkBatchTxs: setting<number>(
    'INDEXER_BULK_BATCH_TXS',
    500_000,
    'Transactions per bulk-sync Postgres transaction; each commit is a checkpoint to resume from after a crash.',
    int(1, 100_000_000),
  ),
  importMemoryMb: setting<number>(
    'IMPORT_MEMORY_MB',
    4096,
    'Memory budget of the initial sync in bulk (`blockwire import` and the indexer\'s bulk path), in MiB. Its in-memory set of unspent outputs gets what the process and two batches of INDEXER_BULK_BATCH_TXS leave; when that is full, the oldest outputs are dropped from memory and read back from PostgreSQL when spent (slower, same index: docs/sync.md "Memory").',
    int(1, 1_048_576),
  ),
  historyBusy: setting<number>(
    'HISTORY_BUSY',
    100,
    'History buckets (docs/schema.md `history_buckets`): an address with at most this many confirmed transactions keeps its history as 13-byte records in hash buckets, about half the space of the chunk rows the others keep; 0 keeps every address in chunk rows. Applied when the indexer or `blockwire import` starts on an empty index that has not been switched; an index with blocks keeps the layout it has (`blockwire history-buckets --busy N` switches one from 0: docs/operations.md "Upgrading").',
    int(0, 1_000_000),
  ),
  txParts: setting<boolean | 'auto'>(
    'TX_PARTS',
    'auto',
    'Transaction parts (docs/schema.md `tx_parts`): the history fold also moves the transactions of the blocks it folds into rows of 64 with their txids in hash buckets, about a third less space than `txs` (the 2,000-block bench: 0.58 × the raw blocks against 0.75; 0.49 × at 20,000 blocks). auto: on for an empty index, an index with blocks keeps what it has; 1 switches one with blocks on (its next fold moves every transaction below the fold into parts, in one transaction: hours on mainnet, during which no block is applied); 0 stops adding to them (the parts written stay and are read). Needs history buckets on (HISTORY_BUSY > 0). Applied when the indexer or `blockwire import` starts.',
    (raw) => {
      if (raw.trim().toLowerCase() === 'auto') return 'auto';
      try {
        return bool(raw);
      } catch {
        throw new Error(`must be auto or a boolean (1/0, true/false), got '${raw}'`);
      }
    },
  ),
  indexerPrefetch: setting<number>(
    'INDEXER_PREFETCH',
    8,
    "Block requests open at once to the node while catching up (0: nothing is read ahead). The next turn's blocks (INDEXER_CATCHUP_BLOCKS, at least this many) are read ahead while a turn writes, this many requests at a time.",
    int(0, 64),
  ),
  indexerCatchupBlocks: setting<number>(
    'INDEXER_CATCHUP_BLOCKS',
    50,
    "Most blocks the indexer applies in one PostgreSQL transaction while it is behind the node on the per-block path (each block's rows and events as when applied alone; a transaction also stops taking blocks once it holds 4,000 transactions). 1 commits every block on its own; at the tip every block is its own transaction.",
    int(1, 1000),
  ),
  indexerReorgGraceMs: setting<number>(
    'INDEXER_REORG_GRACE_MS',
    60_000,
    "How long a transaction taken out of the chain by a reorg may stay out of the node's mempool before watched addresses get tx.dropped (tx.replaced comes at once when the new chain confirms a double spend).",
    int(0, 86_400_000),
  ),
  indexerStandby: setting<boolean>(
    'INDEXER_STANDBY',
    false,
    'A second indexer on the same database waits for the writer lock (trying every second) and takes over when the active one stops or dies, instead of refusing to start (ERR_INDEXER_LOCKED). A standby writes nothing, not even the heartbeat.',
    bool,
  ),
  mempoolCheckMs: setting<number>(
    'MEMPOOL_CHECK_MS',
    5_000,
    "With ZMQ: how often the idle indexer compares the node's mempool size and fees (getmempoolinfo) with the index's; the same difference twice means notifications were lost, and the mempool is reconciled.",
    int(2_000, 3_600_000),
  ),
  mempoolResyncMs: setting<number>(
    'MEMPOOL_RESYNC_MS',
    300_000,
    'Interval of the full mempool reconcile against getrawmempool when ZMQ is configured (without ZMQ it runs every poll).',
    int(1000, 86_400_000),
  ),
  nodeEnv: setting<'development' | 'production' | 'test'>(
    'NODE_ENV',
    'development',
    'Deployment mode; `production` refuses BLOCKWIRE_ALLOW_PRIVATE_HOOKS.',
    oneOf(['development', 'production', 'test'] as const),
  ),
  streamPort: setting<number>(
    'BLOCKWIRE_STREAM_PORT',
    3001,
    'Port of the WebSocket stream when the streams role runs on its own (all-in-one serves it on PORT).',
    int(0, 65535),
  ),
  eventRetentionSeconds: setting<number>(
    'BLOCKWIRE_EVENT_RETENTION_SECONDS',
    604_800,
    'How long events stay in the outbox for stream resumes (`?after=`); older cursors get "cursor expired". Default 7 days.',
    int(60),
  ),
  deliveryLogDays: setting<number>(
    'BLOCKWIRE_DELIVERY_LOG_DAYS',
    30,
    'Days finished webhook/SNS deliveries (delivered, failed, dead) stay in the delivery log.',
    int(1, 3650),
  ),
  relayBatchSize: setting<number>('BLOCKWIRE_RELAY_BATCH', 500, 'Outbox events the relay reads per batch.', int(1, 10_000)),
  relayPollMs: setting<number>(
    'BLOCKWIRE_RELAY_POLL_MS',
    1000,
    'Safety net: interval at which the relay reads the outbox when nothing told it of new events, in milliseconds. New events wake it as their transaction commits (PostgreSQL NOTIFY); this catches what a lost listening connection missed.',
    int(5, 60_000),
  ),
  wsHeartbeatMs: setting<number>(
    'BLOCKWIRE_WS_HEARTBEAT_MS',
    30_000,
    'WebSocket ping interval; a client that has not answered the previous ping is disconnected.',
    int(100, 600_000),
  ),
  wsMaxConnectionsPerKey: setting<number>(
    'BLOCKWIRE_WS_MAX_CONNECTIONS_PER_KEY',
    100,
    'Most WebSocket streams one API key may hold open on one stream process; an upgrade above it is answered 429 ERR_TOO_MANY_STREAMS.',
    int(1, 1_000_000),
  ),
  wsMaxBufferedBytes: setting<number>(
    'BLOCKWIRE_WS_MAX_BUFFERED_BYTES',
    4 * 1024 * 1024,
    'Unread bytes a stream client may have queued before it is disconnected as a slow consumer (close code 4008).',
    int(1024),
  ),
  webhookTimeoutMs: setting<number>(
    'BLOCKWIRE_WEBHOOK_TIMEOUT_MS',
    10_000,
    'Time limit of one webhook POST (connect, send, answer), in milliseconds.',
    int(100, 120_000),
  ),
  webhookConcurrency: setting<number>(
    'BLOCKWIRE_WEBHOOK_CONCURRENCY',
    64,
    'Deliveries in flight per worker process and transport.',
    int(1, 10_000),
  ),
  webhookKeyShare: setting<number>(
    'BLOCKWIRE_WEBHOOK_KEY_SHARE',
    0.25,
    'Share of BLOCKWIRE_WEBHOOK_CONCURRENCY one API key\'s deliveries may hold in flight (at least 1); a key over it waits without holding a worker slot, so hanging receivers of one key never take every slot (docs/events.md "Fair delivery").',
    decimal(0.001, 1),
  ),
  webhookHookShare: setting<number>(
    'BLOCKWIRE_WEBHOOK_HOOK_SHARE',
    0.125,
    "Share of BLOCKWIRE_WEBHOOK_CONCURRENCY one hook's deliveries may hold in flight (at least 1).",
    decimal(0.001, 1),
  ),
  webhookBreakerFailures: setting<number>(
    'BLOCKWIRE_WEBHOOK_BREAKER_FAILURES',
    5,
    "Failed attempts in a row (timeouts, connection errors, 5xx, 408, 429) that open a hook's circuit breaker: its deliveries pause (kept, not attempted) for BLOCKWIRE_WEBHOOK_BREAKER_OPEN_MS, then one is tried; after the first failure it gets one delivery in flight at a time.",
    int(1, 1000),
  ),
  webhookBreakerOpenMs: setting<number>(
    'BLOCKWIRE_WEBHOOK_BREAKER_OPEN_MS',
    30_000,
    'First pause of an open circuit breaker, in milliseconds; it doubles after each failed probe up to BLOCKWIRE_WEBHOOK_BREAKER_MAX_OPEN_MS.',
    int(100, 86_400_000),
  ),
  webhookBreakerMaxOpenMs: setting<number>(
    'BLOCKWIRE_WEBHOOK_BREAKER_MAX_OPEN_MS',
    600_000,
    'Longest pause of an open circuit breaker, in milliseconds.',
    int(100, 86_400_000),
  ),
  deliveryBatchSize: setting<number>(
    'BLOCKWIRE_DELIVERY_BATCH',
    500,
    'Most new deliveries of one hook from one relay batch carried by one queue job (sent over kept-alive connections, each keeping its own webhook-id, log row and retries); 1 = a job per delivery. At its default, as large as a relay batch: a hook gets one job per relay batch.',
    int(1, 1000),
  ),
  deliveryBatchConcurrency: setting<number>(
    'BLOCKWIRE_DELIVERY_BATCH_CONCURRENCY',
    8,
    "Deliveries of one batch job in flight at once (within BLOCKWIRE_WEBHOOK_CONCURRENCY and the hook's and key's shares; at the defaults, a hook's whole share).",
    int(1, 1000),
  ),
  deliveryOutcomeWindowMs: setting<number>(
    'BLOCKWIRE_DELIVERY_OUTCOME_WINDOW_MS',
    10,
    "How long a delivery attempt's outcome waits at most, in milliseconds, for others to be written with it to the delivery log in one statement (a job ends once its outcomes are written); 0 = only those of the same instant. Larger: fewer PostgreSQL statements per delivery at a high rate.",
    int(0, 1000),
  ),
  deliveryBatchOutcomeWindowMs: setting<number>(
    'BLOCKWIRE_DELIVERY_BATCH_OUTCOME_WINDOW_MS',
    200,
    "The same for the deliveries of batch jobs (a hook's new deliveries of one relay batch, BLOCKWIRE_DELIVERY_BATCH): their outcomes wait at most this long, in milliseconds, and go to the delivery log in statements of up to 500. The hook's share is free as soon as nothing of the batch is in flight; a worker that dies before the outcomes are written sends those deliveries again (same webhook-id) when their job runs again.",
    int(0, 10_000),
  ),
  workerLockMs: setting<number>(
    'BLOCKWIRE_WORKER_LOCK_MS',
    30_000,
    'Delivery job lock; a job whose worker died runs again on another worker after about this long.',
    int(500, 600_000),
  ),
  deliveryRetryBaseMs: setting<number>(
    'BLOCKWIRE_DELIVERY_RETRY_BASE_MS',
    10_000,
    'Nominal delay before the first retry of a failed webhook or SNS delivery, in milliseconds; each later retry doubles it (jittered ±20 %) up to 6 h. The number of attempts before the dead letter does not change with it: from the default they span at least 72 h, from a shorter base less (docs/events.md).',
    int(100, 600_000),
  ),
  deliveryRescueMs: setting<number>(
    'BLOCKWIRE_DELIVERY_RESCUE_MS',
    120_000,
    'A pending delivery this long overdue has its job checked and re-created if Redis lost it.',
    int(100, 86_400_000),
  ),
  snsEndpoint: setting<string | undefined>(
    'BLOCKWIRE_SNS_ENDPOINT',
    undefined,
    "SNS endpoint override (LocalStack, a local test endpoint); AWS's regional endpoint when unset. Credentials come from the AWS SDK's usual sources (AWS_ACCESS_KEY_ID…).",
    url(['http:', 'https:']),
  ),
  apiBodyLimit: setting<number>(
    'API_BODY_LIMIT',
    65536,
    'Largest JSON request body of the REST API in bytes (413 above); POST /transactions allows API_TX_BODY_LIMIT.',
    int(1024, 64 * 1024 * 1024),
  ),
  apiTxBodyLimit: setting<number>(
    'API_TX_BODY_LIMIT',
    2 * 1024 * 1024,
    'Largest body of POST /transactions in bytes (a raw transaction as hex).',
    int(1024, 64 * 1024 * 1024),
  ),
  apiBodyMaxDepth: setting<number>(
    'API_BODY_MAX_DEPTH',
    32,
    'Deepest nesting of arrays and objects in a JSON request body (400 ERR_INVALID_BODY above, refused before the body is parsed).',
    int(1, 1000),
  ),
  apiBodyMaxItems: setting<number>(
    'API_BODY_MAX_ITEMS',
    10_000,
    'Most array elements and object members in a JSON request body, counted over the whole body (400 ERR_INVALID_BODY above, refused before parsing).',
    int(1, 10_000_000),
  ),
  apiRequestTimeoutMs: setting<number>(
    'API_REQUEST_TIMEOUT_MS',
    10_000,
    'Time limit of one REST API request in milliseconds (503 ERR_REQUEST_TIMEOUT after it).',
    int(100, 600_000),
  ),
  apiRateLimit: setting<number>(
    'API_RATE_LIMIT',
    6000,
    'Requests per API key per rate window, for keys without a limit of their own (429 above).',
    int(1),
  ),
  apiRateWindowMs: setting<number>(
    'API_RATE_WINDOW_MS',
    60_000,
    'Length of the per-key rate-limit window in milliseconds.',
    int(1000, 86_400_000),
  ),
  apiRateFallbackShare: setting<number>(
    'API_RATE_FALLBACK_SHARE',
    1,
    "Share of a key's remaining requests in the window one API process may let through while Redis does not answer within 250 ms (slow or down); 429 above. 1 suits one API process: a key never passes its limit; with N API processes set 1/N.",
    decimal(0.001, 1),
  ),
  apiAuthFailureLimit: setting<number>(
    'API_AUTH_FAILURE_LIMIT',
    600,
    "Invalid API keys one client address (the connection's peer: behind a proxy, the proxy) may present per API_RATE_WINDOW_MS, per process (REST requests and stream upgrades counted apart); above it, requests whose key this process has not verified before are answered 429 ERR_RATE_LIMITED without a lookup.",
    int(1, 100_000_000),
  ),
  apiMaxSubscriptionsPerKey: setting<number>(
    'API_MAX_SUBSCRIPTIONS_PER_KEY',
    10_000,
    'Most live subscriptions one API key may hold (409 ERR_LIMIT_REACHED above; a wallet subscription counts as one, whatever its addresses).',
    int(1, 10_000_000),
  ),
  apiMaxSocketsPerKey: setting<number>(
    'API_MAX_SOCKETS_PER_KEY',
    100,
    'Most Coinstack WebSockets (/sock and /websocket together) one API key may hold open on one API process; an upgrade above it is refused with the Coinstack ThroughputExceeded error (400), answered a second late (a client retrying at once retries once a second).',
    int(1, 1_000_000),
  ),
  apiMaxHooksPerKey: setting<number>(
    'API_MAX_HOOKS_PER_KEY',
    100,
    'Most live hooks (webhook URLs, SNS topics) one API key may hold (409 ERR_LIMIT_REACHED above).',
    int(1, 100_000),
  ),
  apiMaxWalletsPerKey: setting<number>(
    'API_MAX_WALLETS_PER_KEY',
    100,
    'Most live wallets one API key may hold (409 ERR_LIMIT_REACHED above); each derives up to its gap limit (at most 1,000) of addresses per chain.',
    int(1, 1_000_000),
  ),
  apiWalletMaxDerivations: setting<number>(
    'API_WALLET_MAX_DERIVATIONS',
    20_000,
    'Most BIP32 child keys one wallet request (creation, next address) may derive: addresses × keys per address (an address of a 16-key multisig counts 16), the gap extension past used addresses included. Creation is checked before any work (descriptors × chains × gap_limit × keys); above it, 422 ERR_WALLET_TOO_LARGE. The default takes an xpub at the largest gap limit (2 × 1,000) and 20 descriptors of 16-key multisig at the default gap (12,800); on one core at about 0.5 ms a key, it is at most about 10 s of a derivation thread (docs/wallets.md "Derivation threads").',
    int(1, 100_000_000),
  ),
  walletDeriveThreads: setting<number>(
    'WALLET_DERIVE_THREADS',
    2,
    'Worker threads deriving wallet addresses (creation, reservations, the indexer\'s gap extension), per process; derivation never runs on the thread that serves requests. Jobs wait round-robin between API keys, the indexer\'s first (docs/wallets.md "Derivation threads").',
    int(1, 64),
  ),
  apiCorsOrigins: setting<string[]>(
    'API_CORS_ORIGINS',
    [],
    'Browser origins allowed to call the REST API (CORS), comma-separated (https://app.example.com), or * for any; empty: no CORS headers, so only same-origin pages can call it.',
    origins,
  ),
  apiHistoryCacheMb: setting<number>(
    'API_HISTORY_CACHE_MB',
    64,
    'Megabytes of history chunks (with their txids: about 40 KB per 1,024-entry chunk) the API holds for clients paging deep into a busy address; every use is checked against the version of the chunk row by the page statement itself. 0 turns it off.',
    int(0, 65536),
  ),
  apiTxCacheMb: setting<number>(
    'API_TX_CACHE_MB',
    16,
    "Megabytes of confirmed transactions the API holds as it built them (inputs with the outputs they spend), so that a transaction looked up again costs one row read instead of a call to the node (its outputs and the outputs its inputs spend: `getrawtransaction <txid> 2 <blockhash>`; without a configured node, a second statement); every use is checked against the transaction's row, read by the lookup itself. 0 turns it off.",
    int(0, 65536),
  ),
  apiMaxLagBlocks: setting<number>(
    'API_MAX_LAG_BLOCKS',
    6,
    "Address routes answer 503 ERR_INDEX_SYNCING while the index is more than this many blocks behind the node; a read replica (DATABASE_READ_URL) more than this many blocks behind the primary's index is skipped (503 ERR_INDEX_SYNCING when every replica is).",
    int(0),
  ),
  esploraAnonymousRateLimit: setting<number>(
    'ESPLORA_ANONYMOUS_RATE_LIMIT',
    0,
    "Requests per API_RATE_WINDOW_MS one client address (the connection's peer: behind a proxy, the proxy) may make to the Esplora dialect (/esplora/…) without an API key, reads and POST /tx; 0 (the default): Esplora requests need a key, in the path (/esplora/{key}/…) or the apiKey header.",
    int(0, 100_000_000),
  ),
  stampWalletWif: setting<string | undefined>(
    'STAMP_WALLET_WIF',
    undefined,
    "Private key (WIF, for the node's network) of the stamping wallet; it spends the coins of the key's P2WPKH and P2PKH addresses. Unset (and no descriptor): stamping is off.",
    str,
  ),
  stampWalletDescriptor: setting<string | undefined>(
    'STAMP_WALLET_DESCRIPTOR',
    undefined,
    'Alternative to STAMP_WALLET_WIF: `wpkh(KEY)` or `pkh(KEY)` where KEY is a WIF or an xprv/tprv with a fixed derivation path (`wpkh(tprv…/84h/1h/0h/0/0)`); change goes to that output type.',
    str,
  ),
  stampBatchWindowMs: setting<number>(
    'STAMP_BATCH_WINDOW_MS',
    1000,
    'Stamps arriving within this many milliseconds share one transaction.',
    int(10, 600_000),
  ),
  stampMaxPerTx: setting<number>(
    'STAMP_MAX_PER_TX',
    1000,
    'Most OP_RETURN outputs (stamps) in one transaction on nodes that relay several (Core >= 30); older nodes get one per transaction.',
    int(1, 2000),
  ),
  stampConfTarget: setting<number>('STAMP_CONF_TARGET', 6, 'Confirmation target in blocks passed to estimatesmartfee.', int(1, 1008)),
  stampFallbackFeeRate: setting<number>(
    'STAMP_FALLBACK_FEE_RATE',
    2,
    'Fee rate in sat/vB when estimatesmartfee has no estimate (a fresh regtest node answers "Insufficient data").',
    decimal(0.1, 10_000),
  ),
  stampMaxFeeRate: setting<number>(
    'STAMP_MAX_FEE_RATE',
    200,
    'Highest fee rate in sat/vB a stamp transaction or fee bump may pay; bumps stop there.',
    decimal(0.1, 100_000),
  ),
  stampMaxTxFee: setting<number>(
    'STAMP_MAX_TX_FEE',
    1_000_000,
    'Highest absolute fee in satoshis of one stamp transaction (including bumps).',
    int(1),
  ),
  stampBumpAfterBlocks: setting<number>(
    'STAMP_BUMP_AFTER_BLOCKS',
    3,
    'A stamp transaction still unconfirmed after this many blocks is fee-bumped by replacement (BIP125).',
    int(1, 1000),
  ),
  stampLeaseMs: setting<number>(
    'STAMP_LEASE_MS',
    60_000,
    "Lifetime of a batch's claim on queued stamps and coins; a crashed batcher's claims expire after it (at most 10 minutes).",
    int(1000, 600_000),
  ),
  stampMaxChain: setting<number>(
    'STAMP_MAX_UNCONFIRMED_CHAIN',
    20,
    "Longest chain of unconfirmed stamp transactions (spending each other's change); Core refuses more than 25.",
    int(1, 24),
  ),
  stampAnswerTimeoutMs: setting<number>(
    'STAMP_ANSWER_TIMEOUT_MS',
    8000,
    'POST /stamps waits this long for the signed transaction to be stored, then answers 503 ERR_STAMP_PENDING (retry with the same Idempotency-Key).',
    int(100, 600_000),
  ),
  stampPollMs: setting<number>(
    'STAMP_POLL_MS',
    2000,
    'Interval of the stamp tracker (confirmations, rebroadcast, fee bumps) in milliseconds.',
    int(50, 600_000),
  ),
  stampTargetCoins: setting<number>(
    'STAMP_TARGET_COINS',
    8,
    "The stamping wallet splits its change until it holds this many coins, so that batches need not wait for one another's change.",
    int(1, 100),
  ),
  redisPrefix: setting<string>(
    'BLOCKWIRE_REDIS_PREFIX',
    'bw',
    "Prefix of Blockwire's Redis keys (BullMQ queues, stream feed, rate limits); one per deployment sharing a Redis. On Redis Cluster use a hash tag, e.g. `{bw}`.",
    redisPrefix,
  ),
  metricsPort: setting<number | undefined>(
    'BLOCKWIRE_METRICS_PORT',
    undefined,
    'Port of the operations listener (GET /metrics, /healthz) of this process, for roles without the API (indexer, streams, worker); unset = none. Listens on HOST.',
    int(0, 65535),
  ),
  apiMetrics: setting<boolean>(
    'API_METRICS',
    true,
    'Serve Prometheus GET /metrics on the API port (no apiKey); turn off when the API port is public and scrape BLOCKWIRE_METRICS_PORT instead.',
    bool,
  ),
  electrumTcpPort: setting<number | undefined>(
    'ELECTRUM_TCP_PORT',
    undefined,
    'Port of the Electrum protocol server over plain TCP (Electrum, Sparrow, BDK wallets; docs/electrum.md); unset = off. The quick start sets 50001.',
    int(0, 65535),
  ),
  electrumTlsPort: setting<number | undefined>(
    'ELECTRUM_TLS_PORT',
    undefined,
    'Port of the Electrum protocol server over TLS; unset = off. The quick start sets 50002.',
    int(0, 65535),
  ),
  electrumHost: setting<string>('ELECTRUM_HOST', '127.0.0.1', 'Address the Electrum server listens on (0.0.0.0 for every interface).', str),
  electrumTlsCert: setting<string | undefined>(
    'ELECTRUM_TLS_CERT',
    undefined,
    'PEM certificate (chain) of the Electrum TLS listener; with ELECTRUM_TLS_KEY. Unset: a self-signed certificate is generated once under BLOCKWIRE_DATA_DIR/electrum-tls/.',
    str,
  ),
  electrumTlsKey: setting<string | undefined>('ELECTRUM_TLS_KEY', undefined, 'PEM private key of ELECTRUM_TLS_CERT.', str),
  electrumBanner: setting<string>(
    'ELECTRUM_BANNER',
    'Welcome to Blockwire (Electrum protocol 1.4 to 1.6).',
    'Text answered by server.banner.',
    str,
  ),
  electrumDonationAddress: setting<string>(
    'ELECTRUM_DONATION_ADDRESS',
    '',
    'Address answered by server.donation_address (empty: none).',
    str,
  ),
  electrumMaxSubscriptions: setting<number>(
    'ELECTRUM_MAX_SUBSCRIPTIONS',
    20_000,
    'Script hashes one Electrum connection may subscribe to; more are refused with an error.',
    int(1, 10_000_000),
  ),
  electrumMaxSubscriptionsTotal: setting<number>(
    'ELECTRUM_MAX_SUBSCRIPTIONS_TOTAL',
    250_000,
    'Script-hash subscriptions of all Electrum connections of this process together (each costs about 1 KB of heap); past it a subscription is refused with error 1 "server subscription budget reached" until others end.',
    int(1, 100_000_000),
  ),
  electrumMaxHistory: setting<number>(
    'ELECTRUM_MAX_HISTORY',
    50_000,
    'Longest history (transactions, confirmed and mempool) answered or subscribed to; longer ones are refused with error code 1 "history too large", as electrs and ElectrumX refuse them (the REST API pages them instead).',
    int(1, 100_000_000),
  ),
  electrumMaxRequestBytes: setting<number>(
    'ELECTRUM_MAX_REQUEST_BYTES',
    2 * 1024 * 1024,
    'Longest Electrum request line in bytes (a batch counts whole); a longer one gets an error and the connection is closed.',
    int(1024, 64 * 1024 * 1024),
  ),
  electrumRateLimit: setting<number>(
    'ELECTRUM_RATE_LIMIT',
    50_000,
    'Requests (each request of a batch counts) one Electrum connection may make per ELECTRUM_RATE_WINDOW_MS; above it requests are answered with error -32000 until the window refills.',
    int(1),
  ),
  electrumRateWindowMs: setting<number>(
    'ELECTRUM_RATE_WINDOW_MS',
    60_000,
    'Length of the Electrum per-connection rate window in milliseconds (the allowance refills continuously).',
    int(1000, 86_400_000),
  ),
  electrumIdleTimeoutMs: setting<number>(
    'ELECTRUM_IDLE_TIMEOUT_MS',
    600_000,
    'An Electrum connection that sends nothing for this long is closed (wallets ping every minute or so).',
    int(1000, 86_400_000),
  ),
  electrumRequestTimeoutMs: setting<number>(
    'ELECTRUM_REQUEST_TIMEOUT_MS',
    10_000,
    'Time limit of one Electrum request in milliseconds: past it (PostgreSQL or the node stalled) the client gets error -32603 "request timed out" rather than no answer.',
    int(100, 600_000),
  ),
  electrumMaxConnections: setting<number>(
    'ELECTRUM_MAX_CONNECTIONS',
    5_000,
    'Open Electrum connections of this process at most (TCP and TLS together, TLS handshakes in progress included); further ones are refused (a plain-TCP client reads error -32000 "server busy").',
    int(1, 1_000_000),
  ),
  electrumMaxConnectionsPerIp: setting<number>(
    'ELECTRUM_MAX_CONNECTIONS_PER_IP',
    50,
    'Open Electrum connections from one client address at most (an IPv6 address counts with its /64); further ones are refused (error -32000 "too many connections from your address"), so one address cannot take every slot. Behind a proxy every client has the proxy\'s address: raise it there.',
    int(1, 1_000_000),
  ),
  electrumRequireApiKey: setting<boolean>(
    'ELECTRUM_REQUIRE_API_KEY',
    false,
    'Private deployments: every Electrum method except server.version/ping/features/banner needs `blockwire.authenticate(api_key)` first (an API key of `blockwire keys`). Wallets that cannot send it (Electrum, Sparrow) need it off.',
    bool,
  ),
  electrumMaxLagBlocks: setting<number>(
    'ELECTRUM_MAX_LAG_BLOCKS',
    1,
    'While the index is more than this many blocks behind the node (initial sync, catching up after downtime), Electrum methods that read the index answer error 1 "still catching up with the node" instead of statuses and histories that are not final; the node\'s tip is read every POLL_INTERVAL_MS.',
    int(0),
  ),
  electrumPollMs: setting<number>(
    'ELECTRUM_POLL_MS',
    100,
    'Interval at which the Electrum server reads new events from the outbox (new tips, reorgs, mempool transactions added and removed).',
    int(5, 60_000),
  ),
  electrumMempoolPollMs: setting<number>(
    'ELECTRUM_MEMPOOL_POLL_MS',
    60_000,
    "Safety net: interval at which the Electrum server compares the mempool transactions of every subscribed script hash with what it last saw. Mempool changes are notified from the outbox's mempool events as they come; this only catches what those could not say.",
    int(50, 3_600_000),
  ),
  shutdownDrainMs: setting<number>(
    'SHUTDOWN_DRAIN_MS',
    0,
    'After SIGTERM, keep serving this long (milliseconds) while GET /healthz on BLOCKWIRE_METRICS_PORT answers 503, so that a load balancer stops sending requests before the API closes.',
    int(0, 120_000),
  ),
  shutdownTimeoutMs: setting<number>(
    'SHUTDOWN_TIMEOUT_MS',
    30_000,
    'After SIGTERM/SIGINT, the longest a graceful stop (finish the block, drain deliveries, close the API) may take before the process exits with code 1.',
    int(1000, 600_000),
  ),
} as const;

type Settings = typeof settings;
/** The validated configuration. */
export type Config = Readonly<{ [K in keyof Settings]: Settings[K] extends Setting<infer T> ? T : never }>;

export class ConfigError extends AppError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super('ERR_CONFIG', `invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parses the environment into a frozen Config, or throws a ConfigError naming every problem. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, s] of Object.entries(settings) as [string, Setting<unknown>][]) {
    const raw = env[s.env];
    if (raw === undefined || raw === '') {
      out[key] = s.default;
      continue;
    }
    try {
      out[key] = s.parse(raw);
    } catch (err) {
      problems.push(`${s.env} ${(err as Error).message}`);
    }
  }
  if (out.allowPrivateHooks === true && out.nodeEnv === 'production') {
    problems.push('BLOCKWIRE_ALLOW_PRIVATE_HOOKS is refused when NODE_ENV=production (it lets webhooks reach private networks)');
  }
  problems.push(...crossFieldProblems(out, env));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as Config;
}

/** Checks between settings (each parsed alone above); pure, no I/O (cli/ops/preflight.ts does the I/O checks). */
function crossFieldProblems(c: Record<string, unknown>, env: Record<string, string | undefined>): string[] {
  const p: string[] = [];
  const rpc = c.bitcoindRpcUrl as string | undefined;
  if (!rpc && c.bitcoindCookieFile)
    p.push(
      'BITCOIND_COOKIE_FILE is set but BITCOIND_RPC_URL is not: set BITCOIND_RPC_URL=http://host:port (the cookie gives only the credentials)',
    );
  if (!rpc && c.bitcoindZmqUrl)
    p.push(
      'BITCOIND_ZMQ_URL is set but BITCOIND_RPC_URL is not: ZMQ only wakes the indexer, blocks come over RPC/REST (without BITCOIND_RPC_URL Blockwire would start its devnode and ignore ZMQ)',
    );
  if (!rpc && c.bitcoindRest === 'on') p.push('BITCOIND_REST=on needs BITCOIND_RPC_URL (REST is served on the RPC port)');
  if (rpc && !c.bitcoindCookieFile) {
    const u = new URL(rpc);
    if (!u.username || !u.password)
      p.push(
        "BITCOIND_RPC_URL has no user:password and BITCOIND_COOKIE_FILE is unset: give credentials in the URL (http://user:password@host:port) or the path of bitcoind's .cookie",
      );
  }
  if (c.stampWalletWif && c.stampWalletDescriptor) p.push('STAMP_WALLET_WIF and STAMP_WALLET_DESCRIPTOR are both set: set only one');
  const port = c.port as number;
  if (c.metricsPort !== undefined && c.metricsPort !== 0 && c.metricsPort === port)
    p.push(`BLOCKWIRE_METRICS_PORT equals PORT (${port}): the API serves /metrics itself; use another port or unset it`);
  if (c.electrumTcpPort !== undefined && c.electrumTcpPort !== 0 && c.electrumTcpPort === c.electrumTlsPort)
    p.push(`ELECTRUM_TCP_PORT equals ELECTRUM_TLS_PORT (${String(c.electrumTcpPort)})`);
  if (Boolean(c.electrumTlsCert) !== Boolean(c.electrumTlsKey))
    p.push('ELECTRUM_TLS_CERT and ELECTRUM_TLS_KEY go together: set both, or neither for a self-signed certificate');
  if (env.BLOCKWIRE_STREAM_PORT !== undefined && env.BLOCKWIRE_STREAM_PORT !== '' && c.streamPort !== 0 && c.streamPort === c.metricsPort)
    p.push(`BLOCKWIRE_STREAM_PORT equals BLOCKWIRE_METRICS_PORT (${String(c.metricsPort)})`);
  return p;
}

/** A configuration for tests: defaults, quiet logs, then the given overrides. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({}), logLevel: 'silent', ...overrides }) as Config;
}

/** The configuration table as Markdown, for docs/configuration.md. */
export function configMarkdown(): string {
  const rows = Object.values(settings).map((s) => {
    const def = s.default === undefined ? '(unset)' : `\`${String(s.default)}\``;
    return `| \`${s.env}\` | ${def} | ${s.doc} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows, ''].join('\n');
}
