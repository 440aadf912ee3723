/**
 * The floor of bench/live: PostgreSQL's own write cost for the rows one live block writes, measured
 * on the index the live step has just written. The newest block's rows (its `blocks`, `txs`,
 * `block_undo`, new `utxos`, `history` chunks and the `balances` rows it changed, the spent
 * outputs it deleted) are read back as binary COPY; then, per sample, the writer undoes the
 * block and the same rows are written again by the cheapest means PostgreSQL has, in one
 * transaction with fsync and synchronous commit as configured: binary COPY into each table (same
 * tables, same indexes), the spent outputs and the changed balances deleted by key, the tip
 * moved and one outbox row. Beside it, in the same state of the index, the writer's own apply
 * (`applyBlock`): the two differ only by the statements. Two states: right after a CHECKPOINT
 * (every page touched is logged whole) and with the pages already logged since the last one
 * (the undo touched them). After the samples the index holds the block again.
 * @module
 */
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { decodeBlock } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { BitcoindClient } from '../src/rpc/bitcoind.js';
import { decodeIns } from '../src/db/packed.js';
import { txNumOf } from '../src/db/tx-num.js';
import { createDb } from '../src/db/connect.js';
import { applyBlock, undoBlock } from '../indexer/writer/apply.js';
import { copyIn } from '../indexer/writer/copy-binary.js';
import { createNodeSource } from '../indexer/chain-source.js';
import { pct, round } from './harness.js';

/** Medians over the samples of one write: its transaction's wall time, PostgreSQL CPU, WAL. */
export interface WriteCost {
  ms: number;
  postgresCpuMs: number;
  walMb: number;
  /** The floor only: wall ms of its steps (spent: the delete by key of the spent outputs; commit: the WAL flush). */
  steps?: Record<string, number>;
}

export interface FloorResult {
  height: number;
  txs: number;
  samples: number;
  /** Rows written per sample, by table (balances: rows deleted and re-copied; utxos_spent: deleted by key). */
  rows: Record<string, number>;
  /**
   * `checkpoint`: each write right after a CHECKPOINT (every page it touches logged whole, as for
   * a block arriving after the checkpoint interval); `logged`: the pages already logged since the
   * last checkpoint (the undo touched them), as for blocks following each other closely.
   */
  floor: { checkpoint: WriteCost; logged: WriteCost };
  /** The writer's applyBlock of the same block in the same two states. */
  writer: { checkpoint: WriteCost; logged: WriteCost };
}

/** What the floor needs of the bench's PostgreSQL. */
export interface FloorProbe {
  cpuMs(): number;
  url(db: string): string;
}

async function copyOut(client: pg.Client, select: string): Promise<Buffer> {
  const stream = client.query(copyTo(`COPY (${select}) TO STDOUT (FORMAT binary)`));
  const parts: Buffer[] = [];
  for await (const p of stream) parts.push(p as Buffer);
  return Buffer.concat(parts);
}

/**
 * Measures the floor and the writer's apply on the index's newest block, `samples` times in each
 * state (alternating, writer first). The indexer must not be running (the floor undoes the block).
 */
export async function measureFloor(pgs: FloorProbe, dbName: string, rpcUrl: string, samples: number): Promise<FloorResult> {
  const client = new pg.Client({ connectionString: pgs.url(dbName) });
  await client.connect();
  const db = createDb(pgs.url(dbName), { max: 1 });
  const wal = async () => (await client.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
  const walSince = async (l: string) =>
    Number((await client.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d', [l])).rows[0]!.d) / 1e6;
  try {
    const tip = (await client.query<{ height: number; hash: Buffer }>('SELECT height, hash FROM chain_tip WHERE id = 1')).rows[0]!;
    const h = tip.height;
    const lo = txNumOf(h, 0).toString();
    const hi = txNumOf(h + 1, 0).toString();
    const range = (col: string) => `${col} >= ${lo} AND ${col} < ${hi}`;
    const rpc = new BitcoindClient({ url: rpcUrl });
    const source = createNodeSource({ rpc, restMode: 'off' });
    const block = decodeBlock(await rpc.getBlockRaw(hashToHex(tip.hash)));

    // The block's rows as the writer left them.
    await client.query(`CREATE TEMP TABLE floor_keys AS SELECT DISTINCT addr_key FROM history WHERE ${range('first_tx_num')}`);
    await client.query('CREATE TEMP TABLE floor_after AS SELECT b.* FROM balances b JOIN floor_keys k USING (addr_key)');
    const data = {
      blocks: await copyOut(client, `SELECT * FROM blocks WHERE height = ${h}`),
      txs: await copyOut(client, `SELECT * FROM txs WHERE ${range('tx_num')} ORDER BY tx_num`),
      block_undo: await copyOut(client, `SELECT * FROM block_undo WHERE height = ${h}`),
      utxos: await copyOut(client, `SELECT * FROM utxos WHERE ${range('tx_num')} ORDER BY tx_num, vout`),
      history: await copyOut(
        client,
        `SELECT h.* FROM history h JOIN floor_keys k USING (addr_key) WHERE ${range('h.first_tx_num')} ORDER BY 1, 2`,
      ),
    };
    const ins = await client.query<{ ins: Buffer }>(`SELECT ins FROM txs WHERE ${range('tx_num')}`);
    const spent: [bigint, number][] = [];
    for (const r of ins.rows) for (const i of decodeIns(r.ins)) if (i.txNum < BigInt(lo)) spent.push([i.txNum, i.vout]);
    spent.sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
    const spentNums = spent.map((s) => s[0].toString());
    const spentVouts = spent.map((s) => s[1]);
    const count = async (q: string) => Number((await client.query<{ n: string }>(q)).rows[0]!.n);
    const rows: Record<string, number> = {
      txs: await count(`SELECT count(*) AS n FROM txs WHERE ${range('tx_num')}`),
      utxos: await count(`SELECT count(*) AS n FROM utxos WHERE ${range('tx_num')}`),
      history: await count(`SELECT count(*) AS n FROM history h JOIN floor_keys k USING (addr_key) WHERE ${range('h.first_tx_num')}`),
      utxos_spent: spent.length,
    };

    const undo = async () => {
      const r = await undoBlock(db, h, source);
      if (r.kind !== 'undone') throw new Error(`floor: could not undo block ${h}`);
    };
    const measure = async (checkpoint: boolean, write: () => Promise<void>, prepare?: () => Promise<void>) => {
      await undo();
      await prepare?.();
      if (checkpoint) await client.query('CHECKPOINT');
      const l0 = await wal();
      const c0 = pgs.cpuMs();
      const t0 = performance.now();
      await write();
      const ms = performance.now() - t0;
      return { ms, cpu: pgs.cpuMs() - c0, wal: await walSince(l0), steps };
    };
    let balanceKeys: string[] | null = null;
    let balances: Buffer = Buffer.alloc(0);
    const prepareFloor = async () => {
      // The balances rows this block changed: those whose value differs from the undone state's.
      if (balanceKeys === null) {
        const r = await client.query<{ addr_key: string }>(`
          SELECT k.addr_key FROM floor_keys k LEFT JOIN balances b USING (addr_key) LEFT JOIN floor_after a USING (addr_key)
           WHERE (b.balance, b.utxo_count) IS DISTINCT FROM (a.balance, a.utxo_count) ORDER BY 1`);
        balanceKeys = r.rows.map((x) => x.addr_key);
        await client.query('DELETE FROM floor_after WHERE addr_key <> ALL($1::uuid[])', [balanceKeys]);
        rows.balances = balanceKeys.length;
      }
      balances = await copyOut(client, 'SELECT * FROM floor_after ORDER BY addr_key');
    };
    let steps: Record<string, number> = {};
    const floor = async () => {
      steps = {};
      let t = performance.now();
      const lap = (step: string) => {
        const now = performance.now();
        steps[step] = (steps[step] ?? 0) + now - t;
        t = now;
      };
      await client.query('BEGIN');
      await client.query("SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)");
      await copyIn(client, 'blocks', data.blocks);
      await copyIn(client, 'block_undo', data.block_undo);
      lap('other');
      await copyIn(client, 'txs', data.txs);
      lap('txs');
      await client.query(
        `DELETE FROM utxos u USING unnest($1::int8[], $2::int4[]) AS s(tx_num, vout) WHERE u.tx_num = s.tx_num AND u.vout = s.vout`,
        [spentNums, spentVouts],
      );
      lap('spent');
      await copyIn(client, 'utxos', data.utxos);
      lap('utxos');
      await client.query('DELETE FROM balances WHERE addr_key = ANY($1::uuid[])', [balanceKeys]);
      await copyIn(client, 'balances', balances);
      lap('balances');
      await copyIn(client, 'history', data.history);
      lap('history');
      await client.query(`INSERT INTO outbox (type, block_hash, height) VALUES ('block.connected', $1, $2)`, [tip.hash, h]);
      await client.query('UPDATE chain_tip SET height = $1, hash = $2, updated_at = now() WHERE id = 1', [h, tip.hash]);
      lap('other');
      await client.query('COMMIT');
      lap('commit');
    };
    const writer = async () => {
      const r = await applyBlock(db, block, h);
      if (r.kind !== 'applied') throw new Error(`floor: the writer did not apply block ${h} (${r.kind})`);
    };
    type Sample = { ms: number; cpu: number; wal: number; steps: Record<string, number> };
    const runs = {
      floor: { checkpoint: [] as Sample[], logged: [] as Sample[] },
      writer: { checkpoint: [] as Sample[], logged: [] as Sample[] },
    };
    for (let i = 0; i < samples; i++) {
      for (const mode of ['checkpoint', 'logged'] as const) {
        runs.writer[mode].push({ ...(await measure(mode === 'checkpoint', writer)), steps: {} });
        runs.floor[mode].push(await measure(mode === 'checkpoint', floor, prepareFloor));
      }
    }
    const p50 = (xs: Sample[], f: (x: Sample) => number) => round(pct(xs.map(f), 50), 1);
    const cost = (xs: Sample[]): WriteCost => ({
      ms: p50(xs, (x) => x.ms),
      postgresCpuMs: p50(xs, (x) => x.cpu),
      walMb: p50(xs, (x) => x.wal),
      ...(Object.keys(xs[0]?.steps ?? {}).length > 0
        ? { steps: Object.fromEntries(Object.keys(xs[0]!.steps).map((k) => [k, p50(xs, (x) => x.steps[k] ?? 0)])) }
        : {}),
    });
    return {
      height: h,
      txs: block.txs.length,
      samples,
      rows,
      floor: { checkpoint: cost(runs.floor.checkpoint), logged: cost(runs.floor.logged) },
      writer: { checkpoint: cost(runs.writer.checkpoint), logged: cost(runs.writer.logged) },
    };
  } finally {
    await db.destroy();
    await client.end();
  }
}

/** Samples of each write in each state: a sample costs an undo, a CHECKPOINT and the write. */
export const FLOOR_SAMPLES = 3;

/** The floor as one log line. */
export function floorLine(f: FloorResult): string {
  const c = (x: WriteCost) =>
    `${x.ms} ms, PostgreSQL CPU ${x.postgresCpuMs} ms, WAL ${x.walMb} MB${
      x.steps
        ? ` (ms: ${Object.entries(x.steps)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`
        : ''
    }`;
  return (
    `floor (block ${f.height}, ${f.txs} txs; rows ${JSON.stringify(f.rows)}; p50 of ${f.samples}): ` +
    `after a CHECKPOINT: binary COPY ${c(f.floor.checkpoint)}; writer ${c(f.writer.checkpoint)}; ` +
    `pages already logged: binary COPY ${c(f.floor.logged)}; writer ${c(f.writer.logged)}`
  );
}
