/**
 * `txs.outs` of both forms (src/db/packed.ts): the tagged form the writer writes, and the script
 * form every index held before migration 0053_tagged_outs (test/support/script-form.ts rebuilds
 * it from the blocks). On an index of regtest-chain-a, the readers of output tags answer the same
 * when half the rows hold scripts — Esplora's address and script-hash stats
 * (api/queries/address-stats.ts), Electrum's script histories (src/db/queries/script-hash.ts) and
 * /v1 outspends (the output count) — and migration 0053 brings an index of script-form rows,
 * with its keys, hooks, subscriptions, wallets, stamps and undelivered events, to exactly the
 * rows the writer writes, answering the same and losing nothing.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { indexChainA, type ChainA } from '../../support/chain-fixture.js';
import { rewriteToScriptForm } from '../../support/script-form.js';
import { tableRows } from '../../support/table-rows.js';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { isTaggedOuts } from '../../../src/db/packed.js';
import { readScriptHistories, scriptRef } from '../../../src/db/queries/script-hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { sha256, hashToHex } from '../../../src/bitcoin/hash.js';
import { migrations } from '../../../migrations/index.js';

describeFixtures('txs.outs of both forms, and migration 0053', () => {
  let t: TestDatabase;
  let h: ApiHarness;
  let chain: ChainA;
  /** Every `txs` row as the writer wrote it. */
  let written: string[];

  const rawAt = (height: number) => chain.blocks.get(chain.main[height]!)!.raw;
  const txsRows = async () =>
    (await sql<{ row: string }>`SELECT t::text AS row FROM txs t ORDER BY tx_num`.execute(t.db)).rows.map((r) => r.row);
  const tagged = async () => (await sql<{ outs: Buffer }>`SELECT outs FROM txs`.execute(t.db)).rows.map((r) => isTaggedOuts(r.outs));

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
    h = await createApiHarness({ hookUrls: { allowPrivate: true } }, t);
    written = await txsRows();
  });
  afterAll(async () => {
    await h?.close();
    await t?.drop();
  });

  it('the writer writes tags; answers are the same when half the rows hold scripts instead', async () => {
    expect(await tagged()).not.toContain(false);
    const before = await answers();
    const funded = before.filter((a) => (a as { chain_stats?: { funded_txo_count: number } }).chain_stats?.funded_txo_count);
    expect(funded.length).toBeGreaterThan(10);
    const sizeOf = async () => (await sql<{ n: string }>`SELECT sum(length(outs))::text AS n FROM txs`.execute(t.db)).rows[0]!.n;
    const taggedSize = Number(await sizeOf());
    expect(await rewriteToScriptForm(t.db, rawAt, (n) => n % 2n === 1n)).toBeGreaterThan(50);
    expect((await tagged()).filter((x) => !x).length).toBeGreaterThan(50);
    expect(Number(await sizeOf())).toBeGreaterThan(taggedSize);
    expect(await answers()).toEqual(before);
    // Without a node, a confirmed transaction's view reads scripts from its row: a tagged row has
    // none (503, as with the node down), a row in the script form still answers.
    const coinbases = await sql<{ tx_num: string; txid: Buffer }>`
      SELECT tx_num::text, txid FROM txs WHERE length(ins) = 0 AND tx_num > 0 ORDER BY tx_num LIMIT 2`.execute(t.db);
    const [scripts, tags] = coinbases.rows;
    expect(await rewriteToScriptForm(t.db, rawAt, (n) => n === BigInt(scripts!.tx_num))).toBe(1);
    expect((await h.get(`/v1/transactions/${hashToHex(scripts!.txid)}`)).statusCode).toBe(200);
    const refused = await h.get(`/v1/transactions/${hashToHex(tags!.txid)}`);
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ error_code: 'ERR_NODE_UNAVAILABLE', retry: true });
  });

  it('migration 0053 rewrites an index of script-form rows to the rows the writer writes, losing nothing else', async () => {
    const before = await answers();
    // An index as today's main writes it: every row in the script form, and the tenants' rows.
    await rewriteToScriptForm(t.db, rawAt);
    expect(await tagged()).not.toContain(true);
    const post = (url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: { apiKey: h.key }, payload });
    const hook = await post('/v1/hooks', { type: 'http', url: 'http://127.0.0.1:9/upgrade' });
    expect(hook.statusCode, hook.body).toBe(201);
    const address = Object.keys(chain.expected.addresses)[0]!;
    const sub = await post('/v1/subscriptions', { address, action: hook.json().id });
    expect(sub.statusCode, sub.body).toBeLessThan(300);
    const xpub = HDKey.fromMasterSeed(new Uint8Array(32).fill(9), bip32Versions('regtest')).derive("m/84'/1'/0'").publicExtendedKey;
    const wallet = await post('/v1/wallets', { descriptors: [`wpkh(${xpub}/<0;1>/*)`], gap_limit: 3 });
    expect(wallet.statusCode, wallet.body).toBe(201);
    await sql`
      INSERT INTO stamps (key_id, hash, idempotency_key) SELECT id, ${Buffer.alloc(32, 7)}, 'upgrade' FROM api_keys LIMIT 1`.execute(t.db);
    await sql`INSERT INTO outbox (type, txid, height, confirmations) VALUES ('tx.confirmed', ${Buffer.alloc(32, 3)}, 5, 1)`.execute(t.db);
    const tenants = [
      'api_keys',
      'hooks',
      'subscriptions',
      'wallets',
      'wallet_chains',
      'wallet_addresses',
      'stamps',
      'outbox',
      'stream_state',
    ];
    const tenantRows = () => tableRows(t.db as unknown as Kysely<unknown>, tenants);
    const kept = await tenantRows();
    for (const name of ['api_keys', 'hooks', 'subscriptions', 'wallets', 'wallet_addresses', 'stamps', 'outbox'])
      expect(kept[name]!.length, name).toBeGreaterThan(0);
    const triggers = async () =>
      (
        await sql<{
          def: string;
        }>`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = 'txs'::regclass AND NOT tgisinternal`.execute(t.db)
      ).rows.map((r) => r.def);
    const keptTriggers = await triggers();
    expect(keptTriggers.length).toBeGreaterThan(0);
    const bytes = async () => Number((await sql<{ n: string }>`SELECT pg_table_size('txs')::text AS n`.execute(t.db)).rows[0]!.n);
    const scriptBytes = await bytes();

    await t.db.transaction().execute((trx) => migrations['0053_tagged_outs']!.up(trx as unknown as Kysely<unknown>));

    expect(await txsRows()).toEqual(written);
    expect(await bytes()).toBeLessThan(scriptBytes);
    expect(await tenantRows()).toEqual(kept);
    expect(await triggers()).toEqual(keptTriggers);
    const indexes = await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'txs' ORDER BY 1`.execute(t.db);
    expect(indexes.rows.map((r) => r.name)).toEqual(['txs_pkey', 'txs_spent_groups', 'txs_txid_key']);
    expect(await answers()).toEqual(before);
    // down refuses: the scripts are gone from the rows
    await expect(migrations['0053_tagged_outs']!.down!(t.db as unknown as Kysely<unknown>)).rejects.toThrow('keep no scripts');
  });
});
