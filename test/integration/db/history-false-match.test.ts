/**
 * A bucket record names its address by 8 of the key's 16 bytes (with the bucket's bits), so an
 * address built to share them reads the other's records (docs/lean-layout.md "False matches").
 * On regtest-chain-a's index: an address's history moved into its bucket answers Electrum's
 * script-hash history as before; records of other transactions forged under its key bytes are
 * read by the seam (the trap is armed) but kept out of the script's history, which proves each
 * bucket entry: an output of the script, or an input spending one.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { indexChainA, type ChainA } from '../../support/chain-fixture.js';
import { seedHistory } from '../../support/history-rows.js';
import { readHistoryEntries } from '../../../src/db/history-reads.js';
import { bucketOf, mergeLogs, recordsOf } from '../../../src/db/history-buckets.js';
import { uuidHex } from '../../../src/db/address-key.js';
import { readScriptHistories, scriptRef, type ScriptRef } from '../../../src/db/queries/script-hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { sha256 } from '../../../src/bitcoin/hash.js';

describeFixtures('history read from a bucket, with records forged under the same key bytes', () => {
  let t: TestDatabase;
  let chain: ChainA;
  beforeAll(async () => {
    t = await createMigratedDatabase('hfalse');
    chain = await indexChainA(t.db);
  });
  afterAll(async () => t?.drop());

  it("keeps another address's records out of the script's history", async () => {
    const refs: ScriptRef[] = Object.keys(chain.expected.addresses).map((a) => scriptRef(sha256(addressToScript(a, 'regtest'))));
    const before = await readScriptHistories(t.db, refs, 10_000);
    const entries = await readHistoryEntries(
      t.db,
      refs.map((r) => r.key),
    );
    // The address with the most entries (up to 100), which spends some of what it received.
    const j = entries.reduce((best, e, i) => (e.length <= 100 && e.length > entries[best]!.length ? i : best), 0);
    const ref = refs[j]!;
    const own = entries[j]!;
    const confirmed = before[j]!.kind === 'ok' ? before[j]!.confirmed : [];
    expect(own.length).toBeGreaterThan(3);
    expect(confirmed.length).toBe(own.length);

    // Its history moved into its bucket: the same answers.
    await sql`DELETE FROM history WHERE addr_key = ${ref.key}::uuid`.execute(t.db);
    await seedHistory(t.db, ref.key, own, 'bucket');
    expect(await readScriptHistories(t.db, refs, 10_000)).toEqual(before);

    // Records of 12 transactions of others (coinbases, payments, spends) under its key bytes.
    const mine = new Set(own);
    const others = (await sql<{ tx_num: bigint }>`SELECT tx_num FROM txs WHERE tx_num > 0 ORDER BY tx_num`.execute(t.db)).rows
      .map((r) => r.tx_num)
      .filter((n) => !mine.has(n));
    const forged = others.filter((_, i) => i % Math.floor(others.length / 12) === 0).slice(0, 12);
    expect(forged.length).toBe(12);
    const k = Buffer.from(uuidHex(ref.key), 'hex');
    const p = (await sql<{ base: number; ext: number; split: number }>`SELECT base, ext, split FROM history_bucket_params`.execute(t.db))
      .rows[0]!;
    const bucket = bucketOf(k, p);
    await sql`UPDATE history_buckets SET log = ${mergeLogs(
      (await sql<{ log: Buffer }>`SELECT log FROM history_buckets WHERE bucket = ${bucket}`.execute(t.db)).rows[0]!.log,
      recordsOf(forged.map((n) => [k, Number(n)] as const)),
    )} WHERE bucket = ${bucket}`.execute(t.db);
    const [read] = await readHistoryEntries(t.db, [ref.key]);
    expect(read).toEqual([...own, ...forged].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(await readScriptHistories(t.db, refs, 10_000)).toEqual(before);
  });
});
