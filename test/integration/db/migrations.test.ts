import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { assertSchemaCurrent, migrateDown, migrateToLatest, migrateToZero, migrationStatus } from '../../../src/db/migrate.js';
import { migrations } from '../../../migrations/index.js';
import { decodeEntries, encodeEntries } from '../../../src/db/history-entries.js';
import { encodeIns } from '../../../src/db/packed.js';

async function tables(t: TestDatabase): Promise<string[]> {
  const r = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_name NOT LIKE 'schema_migrations%' ORDER BY 1`.execute(t.db);
  return r.rows.map((x) => x.name);
}

describe('migrations', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase('mig');
  });
  afterAll(async () => t.drop());

  it('refuses to serve a database that is behind', async () => {
    await expect(assertSchemaCurrent(t.db)).rejects.toThrow('database schema is behind the code');
  });

  it('goes up, all the way down, and up again to the same tables', async () => {
    const ran = await migrateToLatest(t.db);
    expect(ran).toEqual(Object.keys(migrations).map((m) => `Up ${m}`));
    const first = await tables(t);
    expect(first).toEqual(
      expect.arrayContaining(['blocks', 'txs', 'utxos', 'balances', 'history', 'outbox', 'api_keys', 'subscriptions', 'watched_addresses']),
    );
    await assertSchemaCurrent(t.db);

    await migrateDown(t.db);
    expect((await migrationStatus(t.db)).filter((s) => s.executedAt).length).toBe(Object.keys(migrations).length - 1);
    await migrateToZero(t.db);
    expect(await tables(t)).toEqual([]);

    await migrateToLatest(t.db);
    expect(await tables(t)).toEqual(first);
    const tip = await t.db.selectFrom('chain_tip').selectAll().executeTakeFirstOrThrow();
    expect(tip.height).toBe(-1);
  });

  it('0006_history_rest keeps every history entry, up and down', async () => {
    const m = migrations['0006_history_rest']!;
    await m.down!(t.db); // the table as 0001 made it
    const key = '00000000-0000-4000-8000-000000000001';
    const single = '00000000-0000-4000-8000-000000000002';
    const nums = [5n, 1n << 40n, (1n << 40n) + 7n];
    await sql`INSERT INTO history (addr_key, first_tx_num, last_tx_num, n, entries) VALUES
      (${key}::uuid, ${nums[0]!.toString()}::int8, ${nums[2]!.toString()}::int8, 3, ${encodeEntries(nums)}),
      (${single}::uuid, 9, 9, 1, ${encodeEntries([9n])})`.execute(t.db);
    await m.up(t.db);
    const rows = await sql<{ addr_key: string; first_tx_num: bigint; rest: Buffer }>`SELECT * FROM history ORDER BY addr_key`.execute(t.db);
    expect(rows.rows.map((r) => [r.addr_key, r.first_tx_num, decodeEntries(r.rest)])).toEqual([
      [key, 5n, nums.slice(1)],
      [single, 9n, []],
    ]);
    await m.down!(t.db);
    const back = await sql<{
      addr_key: string;
      first_tx_num: bigint;
      last_tx_num: bigint;
      n: number;
      entries: Buffer;
    }>`SELECT * FROM history ORDER BY addr_key`.execute(t.db);
    expect(back.rows.map((r) => [r.addr_key, r.first_tx_num, r.last_tx_num, r.n, decodeEntries(r.entries)])).toEqual([
      [key, 5n, nums[2], 3, nums],
      [single, 9n, 9n, 1, [9n]],
    ]);
    await m.up(t.db);
    await sql`DELETE FROM history`.execute(t.db);
  });

  it('0059_history_buckets: the params row and its checks; down only while the buckets are empty', async () => {
    const m = migrations['0059_history_buckets']!;
    const p = await t.db.selectFrom('history_bucket_params').selectAll().execute();
    expect(p).toEqual([{ id: 1, base: 16, ext: 0, split: 0, busy: 0, records: 0n, folded: 0 }]);
    await expect(sql`UPDATE history_bucket_params SET folded = -1 WHERE id = 1`.execute(t.db)).rejects.toThrow(/check/);
    await expect(sql`INSERT INTO history_bucket_params VALUES (2, 16, 0, 0, 100, 0)`.execute(t.db)).rejects.toThrow(/check/);
    await expect(sql`UPDATE history_bucket_params SET ext = 16 WHERE id = 1`.execute(t.db)).rejects.toThrow(/check/);
    // A split bucket is looked up with ext + 1 bits: they must fit, and split stays below 2^(base + ext).
    await expect(sql`UPDATE history_bucket_params SET ext = 15, split = 1 WHERE id = 1`.execute(t.db)).rejects.toThrow(/check/);
    await expect(sql`UPDATE history_bucket_params SET split = 65536 WHERE id = 1`.execute(t.db)).rejects.toThrow(/check/);
    await sql`UPDATE history_bucket_params SET ext = 14, split = 65535 WHERE id = 1`.execute(t.db);
    await sql`UPDATE history_bucket_params SET ext = 0, split = 0 WHERE id = 1`.execute(t.db);
    // The bucket functions answer as the format module does (history-buckets.test.ts checks them in depth).
    const b = await sql<{ b: number }>`SELECT bw_hist_bucket('ffffffff-0000-4000-8000-000000000000'::uuid, 16, 0, 0) AS b`.execute(t.db);
    expect(b.rows[0]!.b).toBe(0xffff);
    await sql`INSERT INTO history_buckets (bucket, log) VALUES (7, ${Buffer.alloc(13)})`.execute(t.db);
    await expect(m.down!(t.db)).rejects.toThrow(/history_buckets holds records/);
    expect(await tables(t)).toContain('history_buckets');
    await sql`DELETE FROM history_buckets`.execute(t.db);
    await m.down!(t.db);
    expect(await tables(t)).not.toContain('history_buckets');
    await expect(sql`SELECT bw_hist_tx(1)`.execute(t.db)).rejects.toThrow(/does not exist/);
    await m.up(t.db);
    expect(await tables(t)).toEqual(expect.arrayContaining(['history_buckets', 'history_bucket_params']));
    // (0060's column, which 0059's down took with the table)
    await migrations['0060_history_fold']!.up(t.db);
    const fold = migrations['0060_history_fold']!;
    await fold.down!(t.db);
    await expect(sql`SELECT folded FROM history_bucket_params`.execute(t.db)).rejects.toThrow(/does not exist/);
    await fold.up(t.db);
    expect((await sql<{ folded: number }>`SELECT folded FROM history_bucket_params`.execute(t.db)).rows).toEqual([{ folded: 0 }]);
    // An index with buckets on from before 0060 holds the records of every block to its tip:
    // folded starts at tip + 1, or during a bulk sync (its finish folds the loaded blocks) at its start + 1.
    const folded = async () => (await sql<{ folded: number }>`SELECT folded FROM history_bucket_params`.execute(t.db)).rows[0]!.folded;
    const tip = (await sql<{ height: number }>`SELECT height FROM chain_tip WHERE id = 1`.execute(t.db)).rows[0]!.height;
    await sql`UPDATE history_bucket_params SET busy = 3 WHERE id = 1`.execute(t.db);
    await sql`UPDATE chain_tip SET height = 41 WHERE id = 1`.execute(t.db);
    await fold.down!(t.db);
    await fold.up(t.db);
    expect(await folded()).toBe(42);
    await sql`INSERT INTO sync_state (key, value) VALUES ('bulk', '{"active": true, "from": 30, "height": 41}')
              ON CONFLICT (key) DO UPDATE SET value = excluded.value`.execute(t.db);
    await fold.down!(t.db);
    await fold.up(t.db);
    expect(await folded()).toBe(31);
    await sql`DELETE FROM sync_state WHERE key = 'bulk'`.execute(t.db);
    await sql`UPDATE chain_tip SET height = ${tip} WHERE id = 1`.execute(t.db);
    await sql`UPDATE history_bucket_params SET busy = 0, folded = 0 WHERE id = 1`.execute(t.db);
  });

  it('0063_tx_parts_lean: parts written under 0062 find the same spenders through the new GIN; down puts the column back', async () => {
    const m = migrations['0063_tx_parts_lean']!;
    await m.down!(t.db);
    // Two parts as 0062 wrote them: inputs back to back, their groups (tx_num >> 4) listed.
    const ins = [
      encodeIns([
        { txNum: 17n, vout: 0 },
        { txNum: 40n, vout: 3 },
        { txNum: 2n ** 40n, vout: 1 },
      ]),
      encodeIns([{ txNum: 18n, vout: 2 }]),
    ];
    const groups = ['{1,2,68719476736}', '{1}'];
    for (const [i, part] of [7, 9].entries())
      await sql`INSERT INTO tx_parts (part, txids, ends, outs, ins, spent_groups, seen)
        VALUES (${part}, ${Buffer.alloc(32)}, ${Buffer.from([2, 0, 0, ins[i]!.length, 0])}, ''::bytea, ${ins[i]!}, ${groups[i]!}::int8[], NULL)`.execute(
        t.db,
      );
    const spenders = async (where: string) => {
      const out: Record<string, number[]> = {};
      for (const g of [1, 2, 3, 68719476736])
        out[g] = (
          await sql<{
            part: number;
          }>`SELECT part::int4 AS part FROM tx_parts WHERE ${sql.raw(where)} @> ARRAY[${g}::int8] ORDER BY part`.execute(t.db)
        ).rows.map((r) => r.part);
      return out;
    };
    const before = await spenders('spent_groups');
    expect(before).toEqual({ 1: [7, 9], 2: [7], 3: [], 68719476736: [7] });
    await m.up(t.db);
    await expect(sql`SELECT spent_groups FROM tx_parts`.execute(t.db)).rejects.toThrow(/does not exist/);
    expect(await spenders('spent_tx_groups(ins)')).toEqual(before);
    await sql`SET enable_seqscan = off`.execute(t.db);
    const plan = await sql<{ p: string }>`EXPLAIN SELECT part FROM tx_parts WHERE spent_tx_groups(ins) @> ARRAY[1::int8]`.execute(t.db);
    await sql`RESET enable_seqscan`.execute(t.db);
    expect(plan.rows.map((r) => Object.values(r).join('')).join('\n')).toMatch(/tx_parts_spent_groups/);
    const storage = await sql<{ attname: string; attstorage: string }>`
      SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'tx_parts'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(
      t.db,
    );
    expect(storage.rows.map((r) => `${r.attname} ${r.attstorage}`)).toEqual(['part p', 'txids e', 'ends e', 'outs e', 'ins e', 'seen e']);
    await m.down!(t.db);
    const back = await sql<{ g: string }>`SELECT spent_groups::text AS g FROM tx_parts ORDER BY part`.execute(t.db);
    expect(back.rows.map((r) => r.g)).toEqual(groups);
    await sql`DELETE FROM tx_parts`.execute(t.db);
    await m.up(t.db);
  });

  it('refuses a database that is ahead of the code', async () => {
    await sql`INSERT INTO schema_migrations (name, timestamp) VALUES ('9999_future', now()::text)`.execute(t.db);
    await expect(assertSchemaCurrent(t.db)).rejects.toThrow('database schema is ahead of the code: unknown migrations 9999_future');
    await sql`DELETE FROM schema_migrations WHERE name = '9999_future'`.execute(t.db);
    await assertSchemaCurrent(t.db);
  });
});
