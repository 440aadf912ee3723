/**
 * The parts' spends GIN through a bulk sync (indexer/writer/parts-gin.ts): kept while the
 * batches load (built at the begin when it is missing), its pending list merged after each
 * batch on a connection of its own, the rest merged by the finish, which restores the
 * definition's storage parameters; a merge that fails is logged and leaves the rest to the
 * finish. bulk.test.ts holds the GIN's answers equal to the per-block index's.
 */
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createLogger } from '../../../src/log.js';
import { runBulk } from '../../../indexer/writer/bulk.js';
import { keepPartsGin, PartsGinMerger, PENDING_LIMIT_KB } from '../../../indexer/writer/parts-gin.js';
import { createPrefetcher } from '../../../indexer/prefetch.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA } from '../../support/chain-fixture.js';

/** A JSON logger whose lines are kept. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug', format: 'json', destination }) };
}

/** A migrated index with transaction parts on (history buckets on). */
async function partsOn(t: TestDatabase): Promise<TestDatabase> {
  await sql`UPDATE history_bucket_params SET busy = 3 WHERE id = 1`.execute(t.db);
  await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(t.db);
  return t;
}

const options = (t: TestDatabase) =>
  sql<{ o: string[] | null }>`SELECT reloptions AS o FROM pg_class WHERE relname = 'tx_parts_spent_groups'`
    .execute(t.db)
    .then((r) => r.rows.map((x) => x.o));

describeFixtures('the parts GIN through a bulk sync', () => {
  const dbs: TestDatabase[] = [];
  const make = async (name: string) => {
    const t = await partsOn(await createMigratedDatabase(name));
    dbs.push(t);
    return t;
  };
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('is merged after each batch while they load, the rest by the finish, and ends with its definition', async () => {
    const t = await make('pgin');
    const a = loadChainA();
    const blocks = a.main.map((h) => a.blocks.get(h)!);
    const chain = new FixtureChain(blocks);
    chain.setActive(blocks.map((b) => b.hash));
    const { lines, log } = capture();
    const target = blocks.length - 1;
    await runBulk(t.db, { databaseUrl: t.url, log, batchTxs: 100 }, (from) => createPrefetcher(chain, 8).feed(from, target), target);
    const merged = lines.find((l) => l.msg === 'bulk load: spends index pending list merged beside it');
    const batches = lines.filter((l) => l.msg === 'bulk batch written').length;
    expect(merged).toBeDefined();
    expect(merged!.merges as number).toBeGreaterThanOrEqual(1);
    const finished = lines.find((l) => l.msg === 'bulk sync finished: indexes built');
    const steps = Object.keys(finished!.steps as Record<string, number>);
    expect(steps).toContain('tx_parts_spent_groups: pending list');
    expect(steps).toContain('tx_parts_spent_groups: parameters');
    expect(steps).not.toContain('tx_parts_spent_groups');
    // (one merge a batch at most: a batch committed during a merge is merged once it ends)
    expect(batches).toBeGreaterThan(2);
    expect(merged!.merges as number).toBeLessThanOrEqual(batches);
    // Nothing left pending, and the migrations' definition (no storage parameters) again.
    const left = await sql<{ n: number }>`SELECT gin_clean_pending_list('tx_parts_spent_groups') AS n`.execute(t.db);
    expect(Number(left.rows[0]!.n)).toBe(0);
    expect(await options(t)).toEqual([null]);
  });

  it('a missing GIN (dropped by an older begin, or a crash in a finish) is built at the begin and set to load', async () => {
    const t = await make('pginb');
    await sql`DROP INDEX tx_parts_spent_groups`.execute(t.db);
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await keepPartsGin(client);
      await keepPartsGin(client); // (again: a begin that ran twice)
    } finally {
      await client.end();
    }
    expect(await options(t)).toEqual([['fastupdate=on', `gin_pending_list_limit=${PENDING_LIMIT_KB}`]]);
  });

  it('a merge that fails is logged once; later batches merge nothing and the close still returns', async () => {
    const { lines, log } = capture();
    let tries = 0;
    const merger = new PartsGinMerger(async () => {
      tries++;
      throw new Error('no connection');
    }, log);
    merger.kick();
    merger.kick();
    await merger.close();
    merger.kick();
    await merger.close();
    expect(tries).toBe(1);
    expect(merger.merges).toBe(0);
    const warned = lines.filter((l) => l.level === 'warn');
    expect(warned.map((l) => l.msg)).toEqual(['bulk sync: merging the spends index pending list failed; the finish merges it']);
  });

  it('a merge on a real connection that finds nothing pending counts as one', async () => {
    const t = await make('pginm');
    const { lines, log } = capture();
    const merger = new PartsGinMerger(async () => {
      const c = new pg.Client({ connectionString: t.url });
      await c.connect();
      return c;
    }, log);
    merger.kick();
    await merger.close();
    expect(merger.merges).toBe(1);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});
