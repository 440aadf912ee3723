/**
 * What to tell a user whose dependency failed at start: the setting, the target (credentials
 * hidden) and the likely fix, instead of `fetch failed` or `connect ECONNREFUSED`. Each check
 * returns a DependencyError (a FatalError) or, for a node that may still be starting, says so.
 * @module
 */
import { FatalError } from '../../src/errors.js';

export type Dependency = 'node' | 'database' | 'redis';

const SETTING: Record<Dependency, string> = { node: 'BITCOIND_RPC_URL', database: 'DATABASE_URL', redis: 'REDIS_URL' };

/** A URL without its password, for messages and logs. */
function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return raw;
  }
}

/** The first string `code` along an error's cause chain (ECONNREFUSED, HPE_INVALID_CONSTANT, 28P01…). */
function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && !code.startsWith('ERR_RPC')) return code;
    const m = /\b(E[A-Z]{4,}|HPE_[A-Z_]+)\b/.exec((e as Error).message ?? '');
    if (m) return m[1];
  }
  return undefined;
}

/** A failure of one dependency, its message naming the setting, the target and the likely fix. */
export class DependencyError extends FatalError {
  constructor(
    readonly dependency: Dependency,
    readonly setting: string,
    readonly target: string,
    readonly problem: string,
    readonly fix: string,
    cause?: unknown,
  ) {
    super('ERR_DEPENDENCY', `${setting} ${target}: ${problem}. ${fix}`, cause === undefined ? undefined : { cause });
    this.name = 'DependencyError';
  }
}

/** Why a connection failed, in words, from its code; undefined when the code says nothing known. */
function transportProblem(code: string | undefined, hostPort: string): string | undefined {
  switch (code) {
    case 'ECONNREFUSED':
      return `nothing listens at ${hostPort} (connection refused)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host of ${hostPort} cannot be resolved (${code})`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${hostPort} cannot be reached (${code})`;
    case 'ETIMEDOUT':
    case 'TimeoutError':
      return `${hostPort} did not answer in time`;
    case 'ECONNRESET':
      return `${hostPort} closed the connection (ECONNRESET)`;
    default:
      return undefined;
  }
}

function hostPortOf(url: string): string {
  try {
    const u = new URL(url);
    return u.host;
  } catch {
    return url;
  }
}

/**
 * Explains a failure to reach a dependency. `transient` is true when waiting may help (nothing
 * listens yet: a node still starting), false when the configuration itself is wrong.
 */
export function explainDependencyFailure(
  dependency: Dependency,
  url: string,
  err: unknown,
): { error: DependencyError; transient: boolean } {
  const setting = SETTING[dependency];
  const target = redactUrl(url);
  const hostPort = hostPortOf(url);
  const code = errorCode(err) ?? ((err as Error)?.name === 'TimeoutError' ? 'TimeoutError' : undefined);
  const message = err instanceof Error ? err.message : String(err);
  const make = (problem: string, fix: string, transient = false) => ({
    error: new DependencyError(dependency, setting, target, problem, fix, err),
    transient,
  });

  if (dependency === 'node') {
    if (code?.startsWith('HPE_') || /without JSON|unexpected reply/.test(message)) {
      return make(
        `what answers at ${hostPort} is not bitcoind's JSON-RPC (${code ?? 'not JSON-RPC'}); a ZMQ port (28332…) answers this way`,
        "Point BITCOIND_RPC_URL at bitcoind's -rpcport (8332 main, 18332 test, 38332 signet, 18443 regtest) and BITCOIND_ZMQ_URL at its -zmqpub… port.",
      );
    }
    if ((err as { code?: unknown })?.code === 'ERR_RPC_AUTH' || /rejected the credentials/.test(message)) {
      return make(
        'bitcoind rejected the credentials',
        'Give rpcuser:rpcpassword in the URL (http://user:password@host:port) or the path of its .cookie in BITCOIND_COOKIE_FILE.',
      );
    }
    const problem = transportProblem(code, hostPort) ?? message;
    return make(
      problem,
      'Is bitcoind running with -server, and is this its -rpcport? Unset BITCOIND_RPC_URL to use the built-in regtest stand-in instead.',
      code === 'ECONNREFUSED' || code === 'TimeoutError' || code === 'ETIMEDOUT',
    );
  }
  if (dependency === 'database') {
    switch (code) {
      case '28P01':
      case '28000':
        return make(
          'PostgreSQL rejected the user or password',
          'Correct the user and password in DATABASE_URL (postgres://user:password@host:port/database).',
        );
      case '3D000':
        return make(
          `the database does not exist (${message})`,
          'Create it (createdb NAME, or CREATE DATABASE) or name an existing one in DATABASE_URL.',
        );
    }
    const problem = transportProblem(code, hostPort) ?? message;
    return make(
      problem,
      'Is PostgreSQL running there and listening on that port? Unset DATABASE_URL to use the embedded PostgreSQL instead.',
    );
  }
  if (/NOAUTH|WRONGPASS|invalid password/i.test(message)) {
    return make(
      'Redis refused the password',
      'Give the password in the URL (redis://:password@host:port) or unset REDIS_URL to start a redis-server child.',
    );
  }
  const problem = transportProblem(code, hostPort) ?? message;
  return make(
    problem,
    'Is redis-server running there and listening on that port? Unset REDIS_URL to have Blockwire start a redis-server child instead.',
  );
}
