/**
 * `txs.outs` rows of both forms side by side (src/db/packed.ts: the script form every index
 * holds today, the tagged form the writer moves to): the readers of output tags answer the
 * same when half the rows of an index of regtest-chain-a are rewritten in the tagged form —
 * Esplora's address and script-hash stats (api/queries/address-stats.ts), Electrum's script
 * histories (src/db/queries/script-hash.ts) and /v1 outspends (the output count).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { indexChainA, type ChainA } from '../../support/chain-fixture.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { decodeOuts, encodeOutTags } from '../../../src/db/packed.js';
import { readScriptHistories, scriptRef } from '../../../src/db/queries/script-hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { sha256, hashToHex } from '../../../src/bitcoin/hash.js';

describeFixtures('txs.outs of both forms side by side', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  let chain: ChainA;

  const answers = async () => {
    const out: unknown[] = [];
    for (const address of Object.keys(chain.expected.addresses).slice(0, 24)) {
      const sha = sha256(addressToScript(address, 'regtest'));
      out.push((await h.get(`/esplora/address/${address}`)).json());
      out.push((await h.get(`/esplora/scripthash/${Buffer.from(sha).toString('hex')}`)).json());
      out.push(await readScriptHistories(t.db, [scriptRef(sha)], 10_000));
    }
    const txids = await sql<{ txid: Buffer }>`SELECT txid FROM txs WHERE tx_num % 5 = 0 ORDER BY tx_num LIMIT 120`.execute(t.db);
    for (const { txid } of txids.rows) {
      const r = await h.get(`/v1/transactions/${hashToHex(txid)}/outspends`);
      out.push([r.statusCode, r.json()]);
    }
    return out;
  };

  beforeAll(async () => {
    t = await createMigratedDatabase('tagged');
    chain = await indexChainA(t.db);
    h = await createApiHarness({}, t);
  });
  afterAll(async () => {
    await h?.close();
    await t?.drop();
  });

  it('answers the same when half the rows hold tags instead of scripts', async () => {
    const before = await answers();
    const funded = before.filter((a) => (a as { chain_stats?: { funded_txo_count: number } }).chain_stats?.funded_txo_count);
    expect(funded.length).toBeGreaterThan(10);
    const rows = await sql<{ tx_num: string; outs: Buffer }>`SELECT tx_num::text, outs FROM txs WHERE tx_num % 2 = 1`.execute(t.db);
    expect(rows.rows.length).toBeGreaterThan(50);
    const tagged = rows.rows.map((r) => encodeOutTags(decodeOuts(r.outs)));
    await sql`
      UPDATE txs SET outs = r.outs FROM unnest(${rows.rows.map((r) => r.tx_num)}::int8[], ${tagged}::bytea[]) AS r(tx_num, outs)
      WHERE txs.tx_num = r.tx_num`.execute(t.db);
    const bytes = (list: readonly Buffer[]) => list.reduce((a, b) => a + b.length, 0);
    expect(bytes(tagged)).toBeLessThan(bytes(rows.rows.map((r) => r.outs)));
    expect(await answers()).toEqual(before);
  });
});
