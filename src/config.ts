/**
 * Configuration: the one place that knows environment variable names. `loadConfig(env)` is pure:
 * it validates, applies defaults and returns a frozen object, or throws a ConfigError listing
 * every bad variable. Each entry of `settings` documents one variable; docs/configuration.md is
 * generated from this table (`blockwire config --markdown`).
 * @module
 */
import { AppError } from './errors.js';

export const NETWORKS = ['main', 'test', 'testnet4', 'signet', 'regtest'] as const;
export type NetworkName = (typeof NETWORKS)[number];

export const ROLES = ['all', 'indexer', 'api', 'streams', 'worker'] as const;
export type Role = (typeof ROLES)[number];

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

function setting<T>(env: string, def: T | undefined, doc: string, parse: Parser<T>): Setting<T> {
  return { env, default: def, doc, parse };
}

/** Every setting, keyed by its name in the Config object. */
export const settings = {
  network: setting<NetworkName | undefined>('BITCOIN_NETWORK', undefined, 'Network of the node (main, test, testnet4, signet, regtest); detected from the node when unset.', oneOf(NETWORKS)),
  bitcoindRpcUrl: setting<string | undefined>('BITCOIND_RPC_URL', undefined, 'Bitcoin Core JSON-RPC URL with credentials, `http://user:password@host:port`. When unset (and no cookie file), Blockwire starts its built-in regtest stand-in (devnode).', url(['http:', 'https:'])),
  bitcoindCookieFile: setting<string | undefined>('BITCOIND_COOKIE_FILE', undefined, 'Path to bitcoind\'s `.cookie` file, used for RPC credentials instead of a user and password in the URL.', str),
  bitcoindZmqUrl: setting<string | undefined>('BITCOIND_ZMQ_URL', undefined, 'ZMQ endpoint of the node (`tcp://host:port`) publishing `sequence`, `hashblock` and `rawtx`; a wake-up hint only.', url(['tcp:'])),
  bitcoindRest: setting<'auto' | 'on' | 'off'>('BITCOIND_REST', 'auto', 'Fetch blocks over the node\'s REST interface (`-rest=1`): auto probes it, on requires it, off uses RPC only.', oneOf(['auto', 'on', 'off'] as const)),
  databaseUrl: setting<string | undefined>('DATABASE_URL', undefined, 'PostgreSQL URL. When unset, an embedded PostgreSQL is started with its data under BLOCKWIRE_DATA_DIR.', url(['postgres:', 'postgresql:'])),
  dataDir: setting<string>('BLOCKWIRE_DATA_DIR', '.blockwire', 'Directory for embedded PostgreSQL, the embedded Redis and the devnode chain.', str),
  redisUrl: setting<string | undefined>('REDIS_URL', undefined, 'Redis URL (`redis://host:port`). When unset, a `redis-server` child is started on a free port.', url(['redis:', 'rediss:'])),
  host: setting<string>('HOST', '127.0.0.1', 'Address the HTTP API and stream listen on.', str),
  port: setting<number>('PORT', 3000, 'Port of the HTTP API and WebSocket stream.', int(0, 65535)),
  logLevel: setting<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>('LOG_LEVEL', 'info', 'Log level.', oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const)),
  allowPrivateHooks: setting<boolean>('BLOCKWIRE_ALLOW_PRIVATE_HOOKS', false, 'Allow webhook URLs that resolve to private, loopback or link-local addresses (tests and closed networks only).', bool),
  pollIntervalMs: setting<number>('POLL_INTERVAL_MS', 2000, 'Interval of the indexer\'s fallback poll of the node, in milliseconds.', int(50, 600_000)),
  apiBodyLimit: setting<number>('API_BODY_LIMIT', 65536, 'Largest JSON request body of the REST API in bytes (413 above); POST /transactions allows API_TX_BODY_LIMIT.', int(1024, 64 * 1024 * 1024)),
  apiTxBodyLimit: setting<number>('API_TX_BODY_LIMIT', 2 * 1024 * 1024, 'Largest body of POST /transactions in bytes (a raw transaction as hex).', int(1024, 64 * 1024 * 1024)),
  apiRequestTimeoutMs: setting<number>('API_REQUEST_TIMEOUT_MS', 10_000, 'Time limit of one REST API request in milliseconds (503 ERR_REQUEST_TIMEOUT after it).', int(100, 600_000)),
  apiRateLimit: setting<number>('API_RATE_LIMIT', 6000, 'Requests per API key per rate window, for keys without a limit of their own (429 above).', int(1)),
  apiRateWindowMs: setting<number>('API_RATE_WINDOW_MS', 60_000, 'Length of the per-key rate-limit window in milliseconds.', int(1000, 86_400_000)),
  apiMaxLagBlocks: setting<number>('API_MAX_LAG_BLOCKS', 6, 'Address routes answer 503 ERR_INDEX_SYNCING while the index is more than this many blocks behind the node.', int(0)),
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
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as Config;
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
