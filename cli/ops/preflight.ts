/**
 * Start-up checks that need the file system (loadConfig is pure and checks only values): the
 * cookie file can be read, the data directory can be written when something embedded will live
 * there, redis-server exists when a child must be started. Problems are returned as sentences
 * naming the variable to fix; warnings (a cookie not written yet) do not stop the start.
 * @module
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { Config } from '../../src/config.js';
import { redisTarget } from '../../src/net/redis.js';

export type PreflightResult = { problems: string[]; warnings: string[] };

/** The roles a process runs, as the checks need them. */
export type PreflightRoles = ReadonlySet<'indexer' | 'api' | 'streams' | 'worker' | 'electrum'>;

function canAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** Nearest existing ancestor of `path` (itself when it exists). */
function existingAncestor(path: string): string {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

function onPath(binary: string, env: Record<string, string | undefined>): boolean {
  const dirs = [...(env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin', '/usr/sbin'];
  return dirs.some((d) => d && existsSync(join(d, binary)));
}

/** Checks the configuration against the machine for the given roles. */
export function preflight(config: Config, roles: PreflightRoles, env: Record<string, string | undefined> = process.env): PreflightResult {
  const problems: string[] = [];
  const warnings: string[] = [];
  const needsNode = roles.has('indexer') || roles.has('api') || roles.has('electrum');
  const needsRedis = roles.has('api') || roles.has('streams') || roles.has('worker');

  if (roles.has('electrum')) {
    for (const [name, file] of [
      ['ELECTRUM_TLS_CERT', config.electrumTlsCert],
      ['ELECTRUM_TLS_KEY', config.electrumTlsKey],
    ] as const) {
      if (file && !canAccess(file, constants.R_OK)) problems.push(`${name} ${file} cannot be read by this user`);
    }
  }

  const cookie = config.bitcoindCookieFile;
  if (cookie && needsNode) {
    if (existsSync(cookie)) {
      if (statSync(cookie).isDirectory())
        problems.push(`BITCOIND_COOKIE_FILE ${cookie} is a directory: give the path of the .cookie file itself`);
      else if (!canAccess(cookie, constants.R_OK)) {
        problems.push(
          `BITCOIND_COOKIE_FILE ${cookie} is not readable by this user (uid ${process.getuid?.() ?? '?'}): start bitcoind with -rpccookieperms=group (or all), or run Blockwire as bitcoind's user`,
        );
      }
    } else if (!existsSync(dirname(cookie))) {
      problems.push(
        `BITCOIND_COOKIE_FILE ${cookie}: directory ${dirname(cookie)} does not exist (bitcoind writes .cookie in its data directory, per network: ~/.bitcoin/signet/.cookie)`,
      );
    } else {
      warnings.push(`BITCOIND_COOKIE_FILE ${cookie} does not exist yet: waiting for bitcoind to write it`);
    }
  }

  const embedsSomething = !config.databaseUrl || (needsRedis && !redisTarget(config)) || (needsNode && !config.bitcoindRpcUrl);
  if (embedsSomething) {
    const base = existingAncestor(config.dataDir);
    if (!canAccess(base, constants.W_OK)) {
      const what = [
        !config.databaseUrl && 'PostgreSQL (DATABASE_URL unset)',
        needsRedis && !redisTarget(config) && 'Redis (REDIS_URL unset)',
        needsNode && !config.bitcoindRpcUrl && 'the devnode (BITCOIND_RPC_URL unset)',
      ]
        .filter(Boolean)
        .join(', ');
      problems.push(
        `BLOCKWIRE_DATA_DIR ${resolve(config.dataDir)} is not writable (${base}), and ${what} would keep its data there: set BLOCKWIRE_DATA_DIR or configure the service`,
      );
    }
  }

  if (needsRedis && !redisTarget(config) && !onPath('redis-server', env)) {
    problems.push(
      'REDIS_URL is unset and redis-server is not installed: set REDIS_URL=redis://host:6379, or install redis-server (scripts/setup.sh does on Debian)',
    );
  }
  return { problems, warnings };
}
