/**
 * Support for kill -9 tests: a seeded PRNG (the seed is logged so a failure can be replayed
 * with BLOCKWIRE_CRASH_SEED), the crash child (test/support/chain-crash-child.ts) bundled once
 * with esbuild for a fast start (tsx when esbuild is missing), spawning and killing it, and
 * the invariants an index must hold at every block boundary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { projectRoot } from './fixtures.js';
import { waitFor } from './wait.js';
import { txRowsFrom } from '../../src/db/tx-reads.js';

/** mulberry32: small, fast, seedable. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run (BLOCKWIRE_CRASH_SEED or random), written to stderr. */
export function crashSeed(label: string): number {
  const seed = process.env.BLOCKWIRE_CRASH_SEED ? Number(process.env.BLOCKWIRE_CRASH_SEED) : Math.floor(Math.random() * 2 ** 31);
  process.stderr.write(`${label}: seed ${seed} (replay with BLOCKWIRE_CRASH_SEED=${seed})\n`);
  return seed;
}

let bundled: Promise<string[]> | null = null;

/** The command line that starts the crash child. */
export function crashChildCommand(): Promise<string[]> {
  bundled ??= (async () => {
    const entry = join(projectRoot, 'test', 'support', 'chain-crash-child.ts');
    try {
      const esbuild = await import('esbuild');
      const dir = join(projectRoot, 'node_modules', '.cache', 'blockwire');
      await mkdir(dir, { recursive: true });
      const out = join(dir, `crash-child-${process.pid}.mjs`);
      await esbuild.build({
        entryPoints: [entry],
        bundle: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        outfile: out,
        target: 'node20',
        logLevel: 'silent',
      });
      if (existsSync(out)) return [out];
    } catch {
      // esbuild is a dependency of tsx and vite; without it, run the sources through tsx.
    }
    return ['--import', 'tsx', entry];
  })();
  return bundled;
}

export interface Child {
  proc: ChildProcess;
  /** Resolves when the child has loaded its modules and waits for `go()`. */
  loaded: Promise<boolean>;
  /** Lets the child start the indexer. */
  go(): void;
  /** Resolves when the child printed `ready` (false if it exited first). */
  ready: Promise<boolean>;
  exited: Promise<number | null>;
  output: string[];
}

const alive = new Set<ChildProcess>();

/** Kills every crash child still running and removes the bundle (afterAll). */
export async function cleanupChildren(): Promise<void> {
  for (const p of alive) p.kill('SIGKILL');
  alive.clear();
  const cmd = bundled ? await bundled : [];
  if (cmd.length === 1) await rm(cmd[0]!, { force: true });
  bundled = null;
}

/** Spawns the crash child with `env` added to this process's environment; call `go()` to start it. */
export async function spawnChild(env: Record<string, string>): Promise<Child> {
  const args = await crashChildCommand();
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  alive.add(proc);
  proc.once('exit', () => alive.delete(proc));
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let onLoaded: (ok: boolean) => void = () => {};
  let onReady: (ok: boolean) => void = () => {};
  const loaded = new Promise<boolean>((resolve) => (onLoaded = resolve));
  const ready = new Promise<boolean>((resolve) => (onReady = resolve));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    output.push(line);
    if (line.includes('"loaded"')) onLoaded(true);
    if (line.includes('"ready"')) onReady(true);
  });
  proc.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stdin!.on('error', () => {});
  void exited.then(() => {
    onLoaded(false);
    onReady(false);
  });
  return { proc, loaded, ready, exited, output, go: () => proc.stdin!.write('go\n') };
}

/** Spawns the crash child and starts it at once. */
export async function startChild(env: Record<string, string>): Promise<Child> {
  const c = await spawnChild(env);
  if (await c.loaded) c.go();
  return c;
}

/** application_name of the crash child's pool; its lock and bulk sessions have their own. */
export const CHILD_APP = 'blockwire-crash-child';
const CHILD_SESSIONS = [CHILD_APP, 'blockwire-indexer-lock', 'blockwire-indexer-bulk'];

/** SIGKILL and wait for the exit. */
export async function killChild(c: Child): Promise<void> {
  c.proc.kill('SIGKILL');
  await c.exited;
}

/**
 * Waits until Postgres has no session of a killed child left: a backend finishes the statement
 * it was running when its client died (a COMMIT it received still commits), so the index is
 * only at rest once those sessions are gone.
 */
export async function waitChildSessionsGone(db: Kysely<Database>): Promise<void> {
  const gone = async () => {
    const r = await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = ANY(${CHILD_SESSIONS}::text[])`.execute(
      db,
    );
    return r.rows[0]!.n === '0';
  };
  try {
    await waitFor('the sessions of a killed child to end', gone, 10_000, 20);
  } catch {
    const left = await sql<{ application_name: string; state: string; wait_event: string | null; query: string }>`
      SELECT application_name, state, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE datname = current_database()`.execute(
      db,
    );
    const { execFileSync } = await import('node:child_process');
    const ps = execFileSync('ps', ['-o', 'pid,ppid,etime,args', '-C', 'node'])
      .toString()
      .split('\n')
      .filter((l) => l.includes('crash-child'));
    throw new Error(`sessions of a killed child are still open after 10 s: ${JSON.stringify(left.rows)}\n${ps.join('\n')}`);
  }
}

/**
 * Invariants of an index at a block boundary: the tip is the highest stored block, every block
 * has all its transactions, block events net to the stored chain, and (outside a bulk sync)
 * balances equal the sums of unspent outputs.
 */
export async function checkBoundary(db0: Kysely<Database>): Promise<{ height: number; bulk: boolean }> {
  await waitChildSessionsGone(db0);
  // One snapshot for every query below.
  return db0
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute((db) => boundaryIn(db));
}

async function boundaryIn(db: Kysely<Database>): Promise<{ height: number; bulk: boolean }> {
  const tip = (await sql<{ height: number; hash: Buffer | null }>`SELECT height, hash FROM chain_tip WHERE id = 1`.execute(db)).rows[0]!;
  const top = (await sql<{ height: number; hash: Buffer }>`SELECT height, hash FROM blocks ORDER BY height DESC LIMIT 1`.execute(db))
    .rows[0];
  const count = Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM blocks`.execute(db)).rows[0]!.n);
  if (tip.height !== (top?.height ?? -1) || count !== tip.height + 1)
    throw new Error(`tip ${tip.height} but blocks top ${top?.height} count ${count}`);
  if (top && hashToHex(top.hash) !== hashToHex(tip.hash!)) throw new Error(`tip hash differs from the top block's at ${tip.height}`);
  const txs = (
    await sql<{
      a: string;
      b: string;
    }>`SELECT (SELECT coalesce(sum(tx_count), 0)::text FROM blocks) AS a, (SELECT count(*)::text FROM ${txRowsFrom(0n, null)} t) AS b`.execute(
      db,
    )
  ).rows[0]!;
  if (txs.a !== txs.b) throw new Error(`blocks hold ${txs.a} transactions, txs has ${txs.b}`);
  const ev = (
    await sql<{ c: string; d: string }>`
    SELECT count(*) FILTER (WHERE type = 'block.connected')::text AS c, count(*) FILTER (WHERE type = 'block.disconnected')::text AS d FROM outbox`.execute(
      db,
    )
  ).rows[0]!;
  if (Number(ev.c) - Number(ev.d) !== tip.height + 1)
    throw new Error(`block events net ${Number(ev.c) - Number(ev.d)} for ${tip.height + 1} blocks`);
  const state = (await sql<{ value: { active?: boolean } }>`SELECT value FROM sync_state WHERE key = 'bulk'`.execute(db)).rows[0]?.value;
  const bulk = state?.active === true;
  if (!bulk) {
    const bad = (
      await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM (SELECT addr_key, sum(value)::int8 AS s, count(*)::int4 AS c FROM utxos WHERE addr_key IS NOT NULL GROUP BY addr_key) u
      FULL JOIN balances b USING (addr_key) WHERE u.s IS DISTINCT FROM b.balance OR u.c IS DISTINCT FROM b.utxo_count`.execute(db)
    ).rows[0]!.n;
    if (bad !== '0') throw new Error(`${bad} balances differ from their unspent outputs`);
  }
  return { height: tip.height, bulk };
}

/** Replays the outbox's block events on a stack: must end on `finalChain` with no event out of place. */
export async function checkBlockEvents(db: Kysely<Database>, finalChain: readonly string[]): Promise<void> {
  const rows = await sql<{ type: string; height: number; block_hash: Buffer }>`
    SELECT type, height, block_hash FROM outbox WHERE type IN ('block.connected', 'block.disconnected') ORDER BY seq`.execute(db);
  const stack: string[] = [];
  for (const r of rows.rows) {
    const h = hashToHex(r.block_hash);
    if (r.type === 'block.connected') {
      if (r.height !== stack.length) throw new Error(`block.connected ${h} at ${r.height} on a chain of ${stack.length}`);
      stack.push(h);
    } else {
      if (stack[stack.length - 1] !== h || r.height !== stack.length - 1)
        throw new Error(`block.disconnected ${h} at ${r.height} is not the tip`);
      stack.pop();
    }
  }
  if (stack.length !== finalChain.length || stack.some((h, i) => h !== finalChain[i]))
    throw new Error('block events do not end on the final chain');
}
