import { describe, expect, it } from 'vitest';
import { mkdtemp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { preflight } from '../../../cli/ops/preflight.js';
import { configurationDoc, maskValue } from '../../../cli/config.js';
import { projectRoot } from '../../support/fixtures.js';

const ALL = new Set(['indexer', 'api', 'streams', 'worker'] as const);

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('configuration cross-field checks', () => {
  it('refuses ZMQ, a cookie file or REST=on without an RPC URL, naming each', () => {
    const p = problemsOf({ BITCOIND_ZMQ_URL: 'tcp://127.0.0.1:28332', BITCOIND_COOKIE_FILE: '/x/.cookie', BITCOIND_REST: 'on' });
    expect(p).toHaveLength(3);
    expect(p[0]).toMatch(/^BITCOIND_COOKIE_FILE is set but BITCOIND_RPC_URL is not/);
    expect(p[1]).toMatch(/^BITCOIND_ZMQ_URL is set but BITCOIND_RPC_URL is not/);
    expect(p[2]).toMatch(/^BITCOIND_REST=on needs BITCOIND_RPC_URL/);
  });

  it('refuses an RPC URL without credentials unless a cookie file is given', () => {
    expect(problemsOf({ BITCOIND_RPC_URL: 'http://127.0.0.1:8332' })[0]).toMatch(/has no user:password and BITCOIND_COOKIE_FILE is unset/);
    expect(problemsOf({ BITCOIND_RPC_URL: 'http://127.0.0.1:8332', BITCOIND_COOKIE_FILE: '/home/bitcoin/.bitcoin/.cookie' })).toEqual([]);
    expect(problemsOf({ BITCOIND_RPC_URL: 'http://u:p@127.0.0.1:8332' })).toEqual([]);
  });

  it('refuses two stamping wallets, clashing ports and a bad Redis prefix, with the parse errors in the same list', () => {
    const p = problemsOf({
      STAMP_WALLET_WIF: 'x',
      STAMP_WALLET_DESCRIPTOR: 'wpkh(x)',
      PORT: '9000',
      BLOCKWIRE_METRICS_PORT: '9000',
      BLOCKWIRE_REDIS_PREFIX: 'a:b',
      LOG_LEVEL: 'loud',
    });
    expect(p).toContain('STAMP_WALLET_WIF and STAMP_WALLET_DESCRIPTOR are both set: set only one');
    expect(p).toContain('BLOCKWIRE_METRICS_PORT equals PORT (9000): the API serves /metrics itself; use another port or unset it');
    expect(p.some((x) => x.startsWith('BLOCKWIRE_REDIS_PREFIX must be 1-64 characters'))).toBe(true);
    expect(p.some((x) => x.startsWith('LOG_LEVEL must be one of'))).toBe(true);
  });

  it('TX_PARTS is auto by default, else a boolean; anything else is refused', () => {
    expect(loadConfig({}).txParts).toBe('auto');
    expect(loadConfig({ TX_PARTS: 'AUTO' }).txParts).toBe('auto');
    expect(loadConfig({ TX_PARTS: '1' }).txParts).toBe(true);
    expect(loadConfig({ TX_PARTS: 'off' }).txParts).toBe(false);
    expect(problemsOf({ TX_PARTS: 'sometimes' })).toEqual(["TX_PARTS must be auto or a boolean (1/0, true/false), got 'sometimes'"]);
  });

  it('accepts a Redis Cluster hash-tag prefix and defaults to bw', () => {
    expect(loadConfig({}).redisPrefix).toBe('bw');
    expect(loadConfig({ BLOCKWIRE_REDIS_PREFIX: '{bw}' }).redisPrefix).toBe('{bw}');
  });
});

describe('preflight (file checks at start)', () => {
  it('a cookie file in a missing directory or that is a directory is a problem; one not written yet is a warning', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bw-preflight-'));
    const base = { BITCOIND_RPC_URL: 'http://127.0.0.1:8332', DATABASE_URL: 'postgres://u:p@h/db', REDIS_URL: 'redis://h:6379' };
    const missingDir = preflight(loadConfig({ ...base, BITCOIND_COOKIE_FILE: join(dir, 'nope', '.cookie') }), ALL);
    expect(missingDir.problems[0]).toContain(`directory ${join(dir, 'nope')} does not exist`);
    await mkdir(join(dir, 'adir'));
    expect(preflight(loadConfig({ ...base, BITCOIND_COOKIE_FILE: join(dir, 'adir') }), ALL).problems[0]).toContain('is a directory');
    const notYet = preflight(loadConfig({ ...base, BITCOIND_COOKIE_FILE: join(dir, '.cookie') }), ALL);
    expect(notYet).toEqual({
      problems: [],
      warnings: [`BITCOIND_COOKIE_FILE ${join(dir, '.cookie')} does not exist yet: waiting for bitcoind to write it`],
    });
    await writeFile(join(dir, '.cookie'), '__cookie__:abc');
    expect(preflight(loadConfig({ ...base, BITCOIND_COOKIE_FILE: join(dir, '.cookie') }), ALL)).toEqual({ problems: [], warnings: [] });
    // A worker never talks to the node: its cookie is not checked.
    expect(
      preflight(loadConfig({ ...base, BITCOIND_COOKIE_FILE: join(dir, 'nope', '.cookie') }), new Set(['worker'] as const)).problems,
    ).toEqual([]);
  });

  it('needs redis-server only when a role needs Redis and REDIS_URL is unset', () => {
    const env = { PATH: '/nonexistent' };
    const cfg = loadConfig({ DATABASE_URL: 'postgres://u:p@h/db', BITCOIND_RPC_URL: 'http://u:p@h:1' });
    const hasSystemRedis = preflight(cfg, ALL, env).problems.length === 0;
    // /usr/bin is always searched: on a machine with redis-server there, it is found.
    expect(preflight(cfg, new Set(['indexer'] as const), env).problems).toEqual([]);
    if (!hasSystemRedis) expect(preflight(cfg, ALL, env).problems[0]).toMatch(/^REDIS_URL is unset and redis-server is not installed/);
  });
});

describe('docs/configuration.md', () => {
  it('is the output of `blockwire config --markdown` (regenerate: ./bin/blockwire.js config --markdown > docs/configuration.md)', async () => {
    const committed = await readFile(join(projectRoot, 'docs', 'configuration.md'), 'utf8');
    expect(committed, 'docs/configuration.md is stale: run ./bin/blockwire.js config --markdown > docs/configuration.md').toBe(
      configurationDoc(),
    );
  });

  it('masks passwords in URLs and secret settings when printing values', () => {
    expect(maskValue('DATABASE_URL', 'postgres://bw:s3cret@db:5432/bw')).toBe('postgres://bw:********@db:5432/bw');
    expect(maskValue('STAMP_WALLET_WIF', 'cVt4o7BGAig1UXywgGSmARhxMdzP5qvQsxKkSsc1XEkw3tDTQFpy')).toBe('********');
    expect(maskValue('PORT', '3000')).toBe('3000');
    expect(maskValue('DATABASE_READ_URL', 'postgres://bw:s3cret@r1:5432/bw,postgres://bw:other@r2:5432/bw')).toBe(
      'postgres://bw:********@r1:5432/bw,postgres://bw:********@r2:5432/bw',
    );
  });
});
