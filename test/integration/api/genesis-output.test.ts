/**
 * The genesis block's coinbase output is never spendable (Core has no genesis coinbase in its
 * UTXO set): it is in no balance, unspent list or history — through /v1, the Coinstack paths,
 * wallets and Electrum — while the genesis block keeps its transaction. On the real mainnet
 * blocks 0–9 (the genesis key's P2PKH address 1A1zP1…, its P2PK script hash), and on a real
 * Bitcoin Core 30 regtest node (the same genesis key), where Core's `scantxoutset` is the
 * reference once the key's P2PKH address is paid. An index written before the rule is corrected
 * by migration 0043 (both shapes the old rows took: a history chunk of the genesis entry alone,
 * and a bulk-loaded chunk starting with it; a wallet summary holding the output).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { pubkeyToP2pkhAddress } from '../../../src/bitcoin/address.js';
import { hashToHex, hexToHash } from '../../../src/bitcoin/hash.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { addressKey } from '../../../src/db/address-key.js';
import { walletSumsFromIndex } from '../../../indexer/wallet-balances.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { startElectrum, type ElectrumHandle } from '../../../electrum/main.js';
import { up as migrate0043 } from '../../../migrations/0043_genesis_output.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { loadMainnet600 } from '../../support/chain-fixture.js';
import { connectElectrum, electrumScriptHash, type ElectrumTestClient } from '../../support/electrum-client.js';
import { startElectrumStack, type ElectrumStack } from '../electrum/harness.js';
import { createApiHarness, type ApiHarness } from './harness.js';

/** The genesis coinbase's output script: this public key, OP_CHECKSIG (every Bitcoin network's genesis pays it). */
const GENESIS_PUBKEY =
  '04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f';
const GENESIS_SCRIPT = `41${GENESIS_PUBKEY}ac`;
const GENESIS_TXID = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b';
const p2pkhScript = (pubkey: string) =>
  `76a914${createHash('ripemd160')
    .update(createHash('sha256').update(Buffer.from(pubkey, 'hex')).digest())
    .digest('hex')}88ac`;
const GENESIS_KEY = addressKey(Buffer.from(p2pkhScript(GENESIS_PUBKEY), 'hex'));
const sha256Hex = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');

/** The REST reads of one address (both dialects) and of the P2PK script, as one comparable object. */
async function restView(h: ApiHarness, address: string) {
  const json = async (url: string) => {
    const r = await h.get(url);
    expect(r.statusCode, `${url}: ${r.body}`).toBe(200);
    return r.json();
  };
  const txids = (rows: { transaction_hash?: string; txid?: string }[]) => rows.map((u) => u.transaction_hash ?? u.txid).sort();
  return {
    v1Balance: (await json(`/v1/addresses/${address}/balance`)).balance,
    v1Unspent: txids(await json(`/v1/addresses/${address}/unspentoutputs`)),
    v1History: ((await json(`/v1/addresses/${address}/history`)) as string[]).sort(),
    coinstackBalance: (await json(`/addresses/${address}/balance`)).balance,
    // (Coinstack writes the transaction hash in its own byte order: counted here)
    coinstackUnspent: ((await json(`/addresses/${address}/unspentoutputs`)) as unknown[]).length,
    p2pkBalance: (await json(`/v1/scripthash/${sha256Hex(GENESIS_SCRIPT)}/balance`)).balance,
    p2pkUnspent: txids(await json(`/v1/scripthash/${sha256Hex(GENESIS_SCRIPT)}/unspentoutputs`)),
  };
}

/** Electrum's reads of the genesis P2PK script hash. */
async function electrumView(c: ElectrumTestClient, script: string) {
  const sh = electrumScriptHash(script);
  return {
    balance: await c.request('blockchain.scripthash.get_balance', [sh]),
    unspent: await c.request('blockchain.scripthash.listunspent', [sh]),
    history: await c.request('blockchain.scripthash.get_history', [sh]),
    status: await c.request('blockchain.scripthash.subscribe', [sh]),
  };
}

/** The rows an index written before the rule held for the genesis output (per-block shape: a chunk of its own). */
async function insertOldGenesisRows(db: Kysely<unknown>, opts: { bulkChunk: boolean }): Promise<void> {
  await sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script) VALUES (${Buffer.from(hexToHash(GENESIS_TXID))}, 0, 0, ${GENESIS_KEY}::uuid, 5000000000, ${Buffer.from(GENESIS_SCRIPT, 'hex')})`.execute(
    db,
  );
  await sql`INSERT INTO balances (addr_key, balance, utxo_count) VALUES (${GENESIS_KEY}::uuid, 5000000000, 1)
            ON CONFLICT (addr_key) DO UPDATE SET balance = balances.balance + 5000000000, utxo_count = balances.utxo_count + 1`.execute(db);
  if (!opts.bulkChunk) {
    await sql`INSERT INTO history (addr_key, first_tx_num, rest) VALUES (${GENESIS_KEY}::uuid, 0, ''::bytea)`.execute(db);
    return;
  }
  // The bulk path's chunk: the genesis entry first, the address's later entries packed after it.
  await sql`UPDATE history SET rest = int8send(first_tx_num) || rest, first_tx_num = 0 WHERE addr_key = ${GENESIS_KEY}::uuid`.execute(db);
}

/** Everything the index holds for the genesis key (compared before the old rows and after the migration). */
async function keyRows(db: Kysely<unknown>) {
  const q = async (table: string) =>
    (await sql.raw<Record<string, unknown>>(`SELECT * FROM ${table} WHERE addr_key = '${GENESIS_KEY}' ORDER BY 1, 2`).execute(db)).rows;
  return { utxos: await q('utxos'), balances: await q('balances'), history: await q('history') };
}

async function electrumOver(t: TestDatabase, network: 'main' | 'regtest'): Promise<{ electrum: ElectrumHandle; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'bw-genesis-'));
  // The methods read here never reach the node (a client of an address nothing listens on).
  const config = testConfig({ network, databaseUrl: t.url, dataDir: dir, electrumTcpPort: 0, electrumPollMs: 50 });
  const electrum = await startElectrum({
    config,
    log: silentLogger(),
    db: t.db,
    node: new BitcoindClient({ url: 'http://u:p@127.0.0.1:1', log: silentLogger() }),
  });
  return { electrum, dir };
}

describeFixtures('the genesis output on mainnet blocks 0–9', () => {
  const ADDRESS = '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa';
  let t: TestDatabase;
  let h: ApiHarness;
  let e: { electrum: ElectrumHandle; dir: string };
  let c: ElectrumTestClient;

  beforeAll(async () => {
    t = await createMigratedDatabase('genesis');
    const blocks = loadMainnet600().slice(0, 10);
    for (let i = 0; i < blocks.length; i++) expect((await applyBlock(t.db, decodeBlock(blocks[i]!.raw), i)).kind).toBe('applied');
    h = await createApiHarness({ network: 'main', settings: { rateLimit: 10_000_000 } }, t);
    e = await electrumOver(t, 'main');
    c = await connectElectrum(e.electrum.tcpPort!);
  });
  afterAll(async () => {
    c?.close();
    await e?.electrum.stop();
    if (e) await rm(e.dir, { recursive: true, force: true });
    await h?.close();
    await t?.drop();
  });

  it('the genesis key has no balance, unspent output or history: /v1, Coinstack, script hash, Electrum', async () => {
    expect(pubkeyToP2pkhAddress(Buffer.from(GENESIS_PUBKEY, 'hex'), 'main')).toBe(ADDRESS);
    expect(await restView(h, ADDRESS)).toEqual({
      v1Balance: 0,
      v1Unspent: [],
      v1History: [],
      coinstackBalance: 0,
      coinstackUnspent: 0,
      p2pkBalance: 0,
      p2pkUnspent: [],
    });
    expect(await electrumView(c, GENESIS_SCRIPT)).toEqual({
      balance: { confirmed: 0, unconfirmed: 0 },
      unspent: [],
      history: [],
      status: null,
    });
    expect(await electrumView(c, p2pkhScript(GENESIS_PUBKEY))).toEqual({
      balance: { confirmed: 0, unconfirmed: 0 },
      unspent: [],
      history: [],
      status: null,
    });
    // the genesis block keeps its transaction
    expect((await h.get('/v1/blocks/height/0')).json().transaction_list).toEqual([GENESIS_TXID]);
    expect(await c.request('blockchain.transaction.id_from_pos', [0, 0])).toBe(GENESIS_TXID);
  });

  it('migration 0043 removes the rows an earlier index held, and a wallet deriving the address is corrected', async () => {
    const before = await keyRows(t.db as Kysely<unknown>);
    // A wallet (a real BIP32 key) that also derives the genesis address: the summary the old rows gave it.
    const created = await h.app.inject({
      method: 'POST',
      url: '/v1/wallets',
      headers: { apiKey: h.key },
      payload: { xpub: 'xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().id as string;
    await insertOldGenesisRows(t.db as Kysely<unknown>, { bulkChunk: false });
    await sql`INSERT INTO wallet_addresses (wallet_id, chain, idx, addr_key, address, path) VALUES (${id}, 0, 100000, ${GENESIS_KEY}::uuid, ${ADDRESS}, 'm/0/100000')`.execute(
      t.db,
    );
    await sql`UPDATE wallets SET confirmed = confirmed + 5000000000 WHERE id = ${id}`.execute(t.db);
    expect((await restView(h, ADDRESS)).v1Balance).toBe(5_000_000_000);
    expect((await h.get(`/v1/wallets/${id}/balance`)).json().confirmed).toBe(5_000_000_000);

    await migrate0043(t.db as unknown as Kysely<unknown>);
    expect(await keyRows(t.db as Kysely<unknown>)).toEqual(before);
    expect(await restView(h, ADDRESS)).toEqual({
      v1Balance: 0,
      v1Unspent: [],
      v1History: [],
      coinstackBalance: 0,
      coinstackUnspent: 0,
      p2pkBalance: 0,
      p2pkUnspent: [],
    });
    const wallet = (await h.get(`/v1/wallets/${id}/balance`)).json();
    expect(wallet.confirmed).toBe(0);
    expect(BigInt(wallet.confirmed)).toBe((await walletSumsFromIndex(t.db, id)).confirmed);
    // run again on a corrected index: nothing changes
    await migrate0043(t.db as unknown as Kysely<unknown>);
    expect(await keyRows(t.db as Kysely<unknown>)).toEqual(before);
  });
});

describeBitcoind('the genesis output on Bitcoin Core 30 (regtest)', () => {
  let s: ElectrumStack;
  let h: ApiHarness;
  let c: ElectrumTestClient;
  let address: string;
  let paid: string;

  beforeAll(async () => {
    s = await startElectrumStack();
    h = await createApiHarness({ network: 'regtest', settings: { rateLimit: 10_000_000 } }, s.db);
    c = await s.connect();
    address = pubkeyToP2pkhAddress(Buffer.from(GENESIS_PUBKEY, 'hex'), 'regtest');
    // the genesis key's P2PKH address is paid once: its balance is that payment alone
    paid = await s.node.call<string>('sendtoaddress', [address, 1.25], s.node.wallet!);
    await s.mine(1);
  });
  afterAll(async () => {
    await h?.close();
    await s?.stop();
  });

  it("balances and unspent outputs are Core's UTXO set: the payment, never the genesis output", async () => {
    const scan = async (desc: string) =>
      s.node.call<{ total_amount: number; unspents: { txid: string }[] }>('scantxoutset', ['start', [desc]]);
    const p2pk = await scan(`raw(${GENESIS_SCRIPT})`);
    const p2pkh = await scan(`addr(${address})`);
    expect(p2pk.unspents).toEqual([]);
    expect(p2pkh.unspents.map((u) => u.txid)).toEqual([paid]);
    const sats = Math.round((p2pk.total_amount + p2pkh.total_amount) * 1e8);
    expect(await restView(h, address)).toEqual({
      v1Balance: sats,
      v1Unspent: [paid],
      v1History: [paid],
      coinstackBalance: sats,
      coinstackUnspent: 1,
      p2pkBalance: 0,
      p2pkUnspent: [],
    });
    expect(await electrumView(c, GENESIS_SCRIPT)).toEqual({
      balance: { confirmed: 0, unconfirmed: 0 },
      unspent: [],
      history: [],
      status: null,
    });
    const viaP2pkh = await electrumView(c, p2pkhScript(GENESIS_PUBKEY));
    expect(viaP2pkh.balance).toEqual({ confirmed: sats, unconfirmed: 0 });
    expect((viaP2pkh.unspent as { tx_hash: string }[]).map((u) => u.tx_hash)).toEqual([paid]);
    expect((viaP2pkh.history as { tx_hash: string }[]).map((u) => u.tx_hash)).toEqual([paid]);
    expect(await c.request('blockchain.transaction.id_from_pos', [0, 0])).toBe(
      hashToHex((await s.db.db.selectFrom('txs').select('txid').where('tx_num', '=', 0n).executeTakeFirstOrThrow()).txid),
    );
  });

  it('migration 0043 corrects an index whose bulk-loaded history chunk starts with the genesis entry', async () => {
    const before = await keyRows(s.db.db as Kysely<unknown>);
    expect(before.history).toHaveLength(1);
    await insertOldGenesisRows(s.db.db as Kysely<unknown>, { bulkChunk: true });
    expect((await restView(h, address)).v1History).toHaveLength(2);
    await migrate0043(s.db.db as unknown as Kysely<unknown>);
    expect(await keyRows(s.db.db as Kysely<unknown>)).toEqual(before);
    expect((await restView(h, address)).v1History).toEqual([paid]);
  });
});
