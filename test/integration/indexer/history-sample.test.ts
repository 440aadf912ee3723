/**
 * The bulk finish's bucket count for a large initial sync comes from a sample of the key space
 * (indexer/writer/history-build.ts `sampleStayingEntries`): the staying entries (of addresses with
 * at most `busy` entries) counted in the first 2^-shift of the keys, scaled by 2^shift. The
 * tests below history sizes of the suite's chains never reach the sample (below 16 MB it counts
 * every address), so this file builds a `history` of random keys and asks for it with a smaller
 * threshold: the slices of the key space partition the addresses, an exact count at shift 0, the
 * estimate within a few percent of it and the base it gives within one bit of the exact one,
 * busy addresses never counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { countStayingEntries, sampleStayingEntries } from '../../../indexer/writer/history-build.js';
import { buildBase } from '../../../src/db/history-buckets.js';
import { ENTRY_BYTES } from '../../../src/db/history-entries.js';

/** Addresses with 1..5 entries, and BUSY_KEYS with BUSY_ENTRIES (more than BUSY). */
const KEYS = 120_000;
const BUSY = 100;
const BUSY_KEYS = 40;
const BUSY_ENTRIES = 150;

describe('the sampled count of the entries that stay in buckets', () => {
  let t: TestDatabase;
  let client: pg.Client;
  let exact: number;
  let bytes: number;

  beforeAll(async () => {
    t = await createMigratedDatabase('hsample');
    client = new pg.Client({ connectionString: t.url });
    await client.connect();
    // Random keys (gen_random_uuid: its version bits sit past the bytes a slice reads). Address g
    // has one chunk row of 1 + g % 5 entries (the first, and g % 5 packed in `rest`), or, for
    // g % 5 = 0, two rows of one entry: a count sums an address's rows.
    await client.query(
      `INSERT INTO history (addr_key, first_tx_num, rest)
       SELECT k, 1000 * g + part, decode(repeat('00', $1 * (g % 5)), 'hex')
         FROM (SELECT g, gen_random_uuid() AS k FROM generate_series(1, $2) g) a, generate_series(0, CASE WHEN g % 5 = 0 THEN 1 ELSE 0 END) part`,
      [ENTRY_BYTES, KEYS],
    );
    await client.query(
      `INSERT INTO history (addr_key, first_tx_num, rest)
       SELECT gen_random_uuid(), 1, decode(repeat('00', $1 * ($2 - 1)), 'hex') FROM generate_series(1, $3)`,
      [ENTRY_BYTES, BUSY_ENTRIES, BUSY_KEYS],
    );
    await client.query('ANALYZE history');
    bytes = Number((await client.query<{ b: string }>(`SELECT pg_table_size('history')::text AS b`)).rows[0]!.b);
    exact = 0;
    for (let g = 1; g <= KEYS; g++) exact += g % 5 === 0 ? 2 : 1 + (g % 5);
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await t?.drop();
  });

  it('counts every staying entry when no slice is asked, and not a busy address’s', async () => {
    expect(await countStayingEntries(client, BUSY)).toBe(exact);
    // At busy 1 only the addresses of one entry stay: none here has one (g % 5 = 0 has two rows of one).
    expect(await countStayingEntries(client, 1)).toBe(0);
    // At busy BUSY_ENTRIES the busy addresses stay too.
    expect(await countStayingEntries(client, BUSY_ENTRIES)).toBe(exact + BUSY_KEYS * BUSY_ENTRIES);
  });

  it('slices of the key space partition the addresses (no key in two, none left out)', async () => {
    for (const bits of [1, 3]) {
      let sum = 0;
      const parts: number[] = [];
      for (let s = 0; s < 2 ** bits; s++) {
        const n = await countStayingEntries(client, BUSY, s, bits);
        parts.push(n);
        sum += n;
      }
      expect(sum).toBe(exact);
      // Each slice holds its share (random keys: well within a third of it).
      for (const n of parts) expect(Math.abs(n - exact / 2 ** bits)).toBeLessThan(exact / 2 ** bits / 3);
    }
  });

  it('counts exactly below the threshold (shift 0)', async () => {
    expect(await sampleStayingEntries(client, BUSY, bytes + 1)).toEqual({ estimate: exact, shift: 0 });
  });

  it('samples above it: the shift grows with the table, the estimate near the exact count, the base within a bit', async () => {
    const sampled = await sampleStayingEntries(client, BUSY, bytes / 2 ** 5);
    expect(sampled.shift).toBe(5);
    // ~3,750 addresses in the sample: a standard error of ~1.6 %.
    expect(Math.abs(sampled.estimate - exact) / exact).toBeLessThan(0.1);
    expect(Math.abs(buildBase(sampled.estimate) - buildBase(exact))).toBeLessThanOrEqual(1);
    // A table far past the threshold samples no deeper than 2^-8.
    const deepest = await sampleStayingEntries(client, BUSY, 1024);
    expect(deepest.shift).toBe(8);
    expect(deepest.estimate % 2 ** 8).toBe(0);
    expect(Math.abs(deepest.estimate - exact) / exact).toBeLessThan(0.35);
  });
});
