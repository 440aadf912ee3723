/**
 * `txs` without `size` and `weight` (migration 0058_txs_sizes_dropped): the writer writes no
 * sizes, the transaction views take them from the node's transaction (the fixture node answers
 * `getrawtransaction <txid> 2 <blockhash>` as Core does), and on an index of regtest-chain-a in
 * the layout before it (the columns filled as the writer filled them) the views answered from the
 * rows are the views answered after the migration, which keeps every other column of every row
 * and the tenants' rows, and whose space a rewrite of `txs` gives back.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { fixtureNode, indexChainA, type ChainA } from '../../support/chain-fixture.js';
import { tableRows } from '../../support/table-rows.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { txNum } from '../../../src/db/tx-num.js';
import { migrations } from '../../../migrations/index.js';

const MIGRATION = '0058_txs_sizes_dropped';

describeFixtures('txs without sizes, and migration 0058', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  let chain: ChainA;

  const columns = async () =>
    (
      await sql<{ name: string }>`
        SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'txs' ORDER BY ordinal_position`.execute(t.db)
    ).rows.map((r) => r.name);
  const kept = async () =>
    (
      await sql<{ row: string }>`
        SELECT (tx_num, txid, outs, ins, first_seen, spent_group)::text AS row FROM txs ORDER BY tx_num`.execute(t.db)
    ).rows.map((r) => r.row);
  /** The main chain's transactions by tx_num, with the sizes the writer used to keep. */
  const mainTxs = () =>
    chain.main.flatMap((hash, height) =>
      decodeBlock(chain.blocks.get(hash)!.raw).txs.map((tx, pos) => ({
        num: txNum(height, pos),
        txid: hashToHex(tx.txid),
        size: tx.size,
        weight: tx.weight,
        blockHash: hash,
      })),
    );
  /**
   * /v1's views of every fourth transaction and the transaction pages of every block but the
   * genesis block (whose coinbase the view reads from the block, which the fixture node does not serve).
   */
  const answers = async () => {
    const out: unknown[] = [];
    for (const [i, tx] of mainTxs().entries()) {
      if (i % 4 !== 0 || tx.num < 2n ** 20n) continue;
      const r = await h.get(`/v1/transactions/${tx.txid}`);
      out.push([r.statusCode, r.json()]);
    }
    for (const hash of chain.main.slice(1)) {
      const r = await h.get(`/v1/blocks/${hash}/txs?limit=100`);
      out.push([r.statusCode, r.json()]);
    }
    return out;
  };

  beforeAll(async () => {
    t = await createMigratedDatabase('sizes');
    chain = await indexChainA(t.db);
    h = await createApiHarness({ node: fixtureNode(chain.blocks.values()), hookUrls: { allowPrivate: true } }, t);
  });
  afterAll(async () => {
    await h?.close();
    await t?.drop();
  });

  it('the writer keeps no sizes; a view has its transaction’s size, vsize, weight and fee rate from the node', async () => {
    expect(await columns()).toEqual(['tx_num', 'txid', 'outs', 'ins', 'first_seen', 'spent_group']);
    const txs = mainTxs();
    expect(txs.length).toBeGreaterThan(100);
    const paying = txs.find((x) => x.num % 2n ** 20n !== 0n)!;
    const r = (await h.get(`/v1/transactions/${paying.txid}`)).json() as Record<string, number>;
    const vsize = Math.ceil(paying.weight / 4);
    expect(r).toMatchObject({ size: paying.size, weight: paying.weight, vsize, fee_rate: Math.round((r.fee! / vsize) * 100) / 100 });
    expect(r.fee).toBeGreaterThan(0);
    // a block's page: every view sized, without asking the node for the block (the fixture node
    // serves no getblock: a view left to it would answer null)
    const block = chain.main[chain.main.length - 1]!;
    const page = (await h.get(`/v1/blocks/${block}/txs?limit=100`)).json() as { transaction_hash: string; size: number; weight: number }[];
    const inBlock = txs.filter((x) => x.blockHash === block);
    expect(page.map((v) => [v.transaction_hash, v.size, v.weight])).toEqual(inBlock.map((x) => [x.txid, x.size, x.weight]));
  });

  it('migration 0058 takes the columns off an index that has them, answering the same and losing nothing else', async () => {
    // The layout before 0058: the columns, filled as the writer filled them.
    await migrations[MIGRATION]!.down!(t.db as unknown as Kysely<unknown>);
    const txs = mainTxs();
    const filled = await sql`
      UPDATE txs t SET size = s.size, weight = s.weight
        FROM unnest(${txs.map((x) => x.num.toString())}::int8[], ${txs.map((x) => x.size)}::int4[], ${txs.map((x) => x.weight)}::int4[])
          AS s(tx_num, size, weight)
       WHERE t.tx_num = s.tx_num`.execute(t.db);
    expect(Number(filled.numAffectedRows)).toBe(txs.length);
    expect(Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM txs WHERE size IS NULL`.execute(t.db)).rows[0]!.n)).toBe(0);
    const rowSizes = await sql<{ txid: Buffer; size: number; weight: number }>`SELECT txid, size, weight FROM txs`.execute(t.db);
    const before = await answers();
    // What the views answered from the rows, the node answers: each view's sizes are its row's.
    const viewed = before.filter((a) => !Array.isArray((a as [number, unknown])[1])) as [number, Record<string, unknown>][];
    expect(viewed.length).toBeGreaterThan(30);
    const byTxid = new Map(rowSizes.rows.map((r) => [hashToHex(r.txid), r]));
    for (const [status, v] of viewed) {
      expect(status).toBe(200);
      const row = byTxid.get(v.transaction_hash as string)!;
      expect([v.size, v.weight]).toEqual([row.size, row.weight]);
    }

    const post = (url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: { apiKey: h.key }, payload });
    const hook = await post('/v1/hooks', { type: 'http', url: 'http://127.0.0.1:9/upgrade' });
    expect(hook.statusCode, hook.body).toBe(201);
    const sub = await post('/v1/subscriptions', { address: Object.keys(chain.expected.addresses)[0]!, action: hook.json().id });
    expect(sub.statusCode, sub.body).toBeLessThan(300);
    const xpub = HDKey.fromMasterSeed(new Uint8Array(32).fill(5), bip32Versions('regtest')).derive("m/84'/1'/0'").publicExtendedKey;
    const wallet = await post('/v1/wallets', { descriptors: [`wpkh(${xpub}/<0;1>/*)`], gap_limit: 3 });
    expect(wallet.statusCode, wallet.body).toBe(201);
    const tenants = ['api_keys', 'hooks', 'subscriptions', 'wallets', 'wallet_chains', 'wallet_addresses', 'outbox'];
    const tenantRows = () => tableRows(t.db as unknown as Kysely<unknown>, tenants);
    const tenantsBefore = await tenantRows();
    for (const name of ['api_keys', 'hooks', 'subscriptions', 'wallets', 'wallet_addresses'])
      expect(tenantsBefore[name]!.length, name).toBeGreaterThan(0);
    const rowsBefore = await kept();
    const indexes = async () =>
      (await sql<{ def: string }>`SELECT indexdef AS def FROM pg_indexes WHERE tablename = 'txs' ORDER BY 1`.execute(t.db)).rows;
    const indexesBefore = await indexes();
    // (the rows' stored bytes: chain-a's txs fit in a few pages)
    const bytes = async () =>
      Number((await sql<{ n: string }>`SELECT sum(pg_column_size(t.*))::text AS n FROM txs t`.execute(t.db)).rows[0]!.n);
    await sql`VACUUM FULL txs`.execute(t.db);
    const sizedBytes = await bytes();

    await t.db.transaction().execute((trx) => migrations[MIGRATION]!.up(trx as unknown as Kysely<unknown>));

    expect(await columns()).toEqual(['tx_num', 'txid', 'outs', 'ins', 'first_seen', 'spent_group']);
    expect(await kept()).toEqual(rowsBefore);
    expect(await indexes()).toEqual(indexesBefore);
    expect(await tenantRows()).toEqual(tenantsBefore);
    expect(await answers()).toEqual(before);
    // The rows keep the dropped bytes until txs is rewritten (docs/operations.md "Upgrading").
    expect(await bytes()).toBe(sizedBytes);
    await sql`VACUUM FULL txs`.execute(t.db);
    // (8 bytes a row, and the alignment padding before them on some)
    expect(await bytes()).toBeLessThanOrEqual(sizedBytes - 8 * txs.length);
  });
});
