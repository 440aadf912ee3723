/**
 * Address statistics, script-hash reads and the address batch against a real Bitcoin Core
 * holding the same chain (regtest-chain-a's final chain; mainnet blocks 0–599, P2PK coinbases
 * throughout). What is expected comes from Core's `getblock` verbosity 3 of every block: each
 * output's script and value, each input's prevout script and value. Per script: outputs funded,
 * outputs spent, transactions; per address the same under the index's documented rule (a P2PK
 * output counts for its key's P2PKH address; a bare multisig output for nobody, its transaction
 * in each key's P2PKH history). Every stat, balance, history and unspent list is compared.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { outputAddresses } from '../../../src/bitcoin/address.js';
import { classifyScript } from '../../../src/bitcoin/script.js';
import { btcToSats } from '../../../src/rpc/types.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { loadChainA, loadMainnet600 } from '../../support/chain-fixture.js';
import { startCoreWithBlocks, type CoreChain } from '../../support/core-chain.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { createApiHarness, type ApiHarness } from './harness.js';
import { BlockwireClient } from '../../../client/index.js';

type Script = { hex: string };
type CoreBlock3 = {
  height: number;
  tx: {
    txid: string;
    vin: { coinbase?: string; txid?: string; vout?: number; prevout?: { value: number; scriptPubKey: Script } }[];
    vout: { n: number; value: number; scriptPubKey: Script }[];
  }[];
};
type Stats = { funded_txo_count: number; funded_txo_sum: number; spent_txo_count: number; spent_txo_sum: number; tx_count: number };
type Tally = { funded: Map<string, bigint>; spent: Set<string>; txs: string[]; script?: string };
const ZERO: Stats = { funded_txo_count: 0, funded_txo_sum: 0, spent_txo_count: 0, spent_txo_sum: 0, tx_count: 0 };

const sha256hex = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');

function tallyOf(map: Map<string, Tally>, id: string): Tally {
  let t = map.get(id);
  if (!t) map.set(id, (t = { funded: new Map(), spent: new Set(), txs: [] }));
  return t;
}
const touch = (t: Tally, txid: string) => {
  if (t.txs[t.txs.length - 1] !== txid) t.txs.push(txid);
};

function statsOf(t: Tally): Stats {
  let sum = 0n;
  let spentSum = 0n;
  for (const [o, v] of t.funded) {
    sum += v;
    if (t.spent.has(o)) spentSum += v;
  }
  return {
    funded_txo_count: t.funded.size,
    funded_txo_sum: Number(sum),
    spent_txo_count: t.spent.size,
    spent_txo_sum: Number(spentSum),
    tx_count: t.txs.length,
  };
}

function suite(name: string, chain: 'main' | 'regtest', load: () => Uint8Array[], network: 'main' | 'regtest') {
  describeBitcoind(name, () => {
    let t: TestDatabase;
    let h: ApiHarness;
    let core: CoreChain;
    let tip = 0;
    // (by script hex, and by address under the index's rule)
    const byScript = new Map<string, Tally>();
    const byAddress = new Map<string, Tally>();

    beforeAll(async () => {
      const blocks = load();
      core = await startCoreWithBlocks(chain, blocks);
      t = await createMigratedDatabase('corestats');
      for (let i = 0; i < blocks.length; i++) expect((await applyBlock(t.db, decodeBlock(blocks[i]!), i)).kind).toBe('applied');
      tip = blocks.length - 1;
      h = await createApiHarness({ network, node: core.rpc, settings: { rateLimit: 10_000_000 } }, t);
      const hashes = await core.rpc.batch<string>(Array.from({ length: tip + 1 }, (_, i) => ({ method: 'getblockhash', params: [i] })));
      for (let i = 0; i <= tip; i += 50) {
        const part = await core.rpc.batch<CoreBlock3>(hashes.slice(i, i + 50).map((hash) => ({ method: 'getblock', params: [hash, 3] })));
        for (const b of part as CoreBlock3[]) {
          // The genesis coinbase pays nobody (Core keeps it out of its UTXO set; docs/schema.md).
          if (b.height === 0) continue;
          for (const tx of b.tx) {
            for (const vin of tx.vin) {
              if (vin.coinbase !== undefined) continue;
              const s = vin.prevout!.scriptPubKey.hex;
              const outpoint = `${vin.txid}:${vin.vout}`;
              const st = tallyOf(byScript, s);
              st.spent.add(outpoint);
              touch(st, tx.txid);
              for (const a of outputAddresses(Buffer.from(s, 'hex'), network)) {
                const at = tallyOf(byAddress, a);
                if (classifyScript(Buffer.from(s, 'hex')) !== 'multisig') at.spent.add(outpoint);
                touch(at, tx.txid);
              }
            }
            for (const o of tx.vout) {
              const s = o.scriptPubKey.hex;
              const outpoint = `${tx.txid}:${o.n}`;
              const value = btcToSats(o.value);
              const st = tallyOf(byScript, s);
              st.funded.set(outpoint, value);
              touch(st, tx.txid);
              for (const a of outputAddresses(Buffer.from(s, 'hex'), network)) {
                const at = tallyOf(byAddress, a);
                if (classifyScript(Buffer.from(s, 'hex')) !== 'multisig') at.funded.set(outpoint, value);
                touch(at, tx.txid);
              }
            }
          }
        }
      }
    });
    afterAll(async () => {
      await h?.close();
      await t?.drop();
      await core?.stop();
    });

    it('address statistics as getblock 3 counts them; GET /stats and the batch agree; balance and unspent outputs of the batch as the single routes', async () => {
      const addresses = [...byAddress.keys()];
      expect(addresses.length).toBeGreaterThan(20);
      let spentSeen = 0;
      for (let i = 0; i < addresses.length; i += 1000) {
        const part = addresses.slice(i, i + 1000);
        const r = await h.app.inject({
          method: 'POST',
          url: '/v1/addresses/batch',
          headers: { apiKey: h.key },
          payload: { addresses: part, include: ['balance', 'unspentoutputs', 'stats'] },
        });
        expect(r.statusCode).toBe(200);
        expect(Number(r.headers['blockwire-tip-height'])).toBe(tip);
        const got = r.json() as {
          address: string;
          balance: number;
          unspentoutputs: { transaction_hash: string; index: number; value: string }[];
          unspentoutputs_more: boolean;
          stats: { chain_stats: Stats; mempool_stats: Stats };
        }[];
        expect(got.map((g) => g.address)).toEqual(part);
        for (const [j, g] of got.entries()) {
          const e = statsOf(byAddress.get(part[j]!)!);
          expect(g.stats, part[j]).toEqual({ chain_stats: e, mempool_stats: ZERO });
          expect(g.balance).toBe(e.funded_txo_sum - e.spent_txo_sum);
          const tally = byAddress.get(part[j]!)!;
          const unspent = [...tally.funded.keys()].filter((o) => !tally.spent.has(o)).sort();
          expect(g.unspentoutputs.map((u) => `${u.transaction_hash}:${u.index}`).sort()).toEqual(unspent);
          expect(g.unspentoutputs_more).toBe(false);
          if (e.spent_txo_count > 0) spentSeen++;
          if ((i + j) % 25 === 0) {
            const one = await h.get(`/v1/addresses/${part[j]}/stats`);
            expect(one.json()).toEqual({ address: part[j], chain_stats: e, mempool_stats: ZERO });
            expect(one.headers['blockwire-tip-height']).toBe(String(tip));
            expect((await h.get(`/v1/addresses/${part[j]}/balance`)).json()).toEqual({ balance: g.balance });
            expect((await h.get(`/v1/addresses/${part[j]}/unspentoutputs`)).json()).toEqual(g.unspentoutputs);
          }
        }
      }
      expect(spentSeen).toBeGreaterThan(0);
    });

    it('by script hash: stats, balance, history and unspent outputs of each script as getblock 3 gives them (P2PK by its hash alone, through its alias, and with its script)', async () => {
      let p2pk = 0;
      const scripts = [...byScript].filter(
        ([s]) => !['nulldata', 'nonstandard', 'multisig'].includes(classifyScript(Buffer.from(s, 'hex'))),
      );
      // every script of a small chain; of a larger one every k-th and the three busiest
      const k = Math.ceil(scripts.length / 150);
      const busiest = new Set(
        [...scripts]
          .sort((a, b) => b[1].txs.length - a[1].txs.length)
          .slice(0, 3)
          .map(([s]) => s),
      );
      for (const [i, [script, tally]] of scripts.entries()) {
        if (i % k !== 0 && !busiest.has(script)) continue;
        const type = classifyScript(Buffer.from(script, 'hex'));
        if (type === 'pubkey') p2pk++;
        for (const q of type === 'pubkey' ? ['', `?script=${script}`] : ['']) {
          const base = `/v1/scripthash/${sha256hex(script)}`;
          const e = statsOf(tally);
          const stats = await h.get(`${base}/stats${q}`);
          expect(stats.json(), script).toEqual({ scripthash: sha256hex(script), chain_stats: e, mempool_stats: ZERO });
          const balance = e.funded_txo_sum - e.spent_txo_sum;
          expect((await h.get(`${base}/balance${q}`)).json()).toEqual({ balance, confirmed: balance, unconfirmed: 0 });
          expect((await h.get(`${base}/history${q}`)).json()).toEqual([...tally.txs].reverse());
          const unspent = (await h.get(`${base}/unspentoutputs${q}`)).json() as {
            transaction_hash: string;
            index: number;
            value: string;
            script: string;
          }[];
          expect(unspent.map((u) => `${u.transaction_hash}:${u.index}`).sort()).toEqual(
            [...tally.funded.keys()].filter((o) => !tally.spent.has(o)).sort(),
          );
          for (const u of unspent)
            expect(u).toMatchObject({ script, value: tally.funded.get(`${u.transaction_hash}:${u.index}`)!.toString() });
        }
      }
      if (chain === 'main') expect(p2pk).toBeGreaterThan(100);
    });

    it('the SDK: getAddressStats, getAddressBatch and the script reads give what the routes give', async () => {
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = h.app.server.address() as { port: number };
      const client = new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network });
      const addresses = [...byAddress.keys()].slice(0, 50);
      const batch = await client.getAddressBatch(addresses, ['balance', 'unspentoutputs', 'stats']);
      for (const [i, a] of addresses.entries()) {
        const e = statsOf(byAddress.get(a)!);
        expect(batch[i]!.stats).toEqual({ chain_stats: e, mempool_stats: ZERO });
        expect(batch[i]!.balance).toBe(BigInt(e.funded_txo_sum - e.spent_txo_sum));
        expect(batch[i]!.unspentOutputs).toEqual(await client.listUnspentOutputs(a));
        if (i % 10 === 0) expect(await client.getAddressStats(a)).toEqual(batch[i]!.stats);
      }
      const [script, tally] = [...byScript].find(
        ([s]) => classifyScript(Buffer.from(s, 'hex')) === (network === 'main' ? 'pubkey' : 'witness_v0_keyhash'),
      )!;
      const e = statsOf(tally);
      expect(await client.getScriptStats({ script })).toEqual({ chain_stats: e, mempool_stats: ZERO });
      expect((await client.getScriptBalance({ script })).balance).toBe(BigInt(e.funded_txo_sum - e.spent_txo_sum));
      expect(await client.getScriptHistory({ script })).toEqual([...tally.txs].reverse());
      expect((await client.getScriptUnspentOutputs({ script })).map((u) => `${u.txid}:${u.vout}`).sort()).toEqual(
        [...tally.funded.keys()].filter((o) => !tally.spent.has(o)).sort(),
      );
      if (network !== 'main') expect(await client.getScriptHistory({ hash: sha256hex(script) })).toEqual([...tally.txs].reverse());
    });

    it('bad input: an address of another network, a script not matching its hash, OP_RETURN, too large a batch', async () => {
      const post = (payload: unknown) =>
        h.app.inject({ method: 'POST', url: '/v1/addresses/batch', headers: { apiKey: h.key }, payload: payload as object });
      const some = [...byAddress.keys()][0]!;
      const other = network === 'main' ? 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080' : '1BoatSLRHtKNngkdXEeobR76b53LETtpyT';
      const wrong = await post({ addresses: [some, other] });
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json()).toMatchObject({ error_code: 'ERR_WRONG_NETWORK', error_cause: '1' });
      expect((await post({ addresses: Array.from({ length: 1001 }, () => some) })).json()).toMatchObject({
        error_code: 'ERR_INVALID_BODY',
      });
      expect((await post({ addresses: [some], include: ['balance', 'nope'] })).statusCode).toBe(400);
      expect((await h.get(`/v1/scripthash/${'ab'.repeat(32)}/stats?script=51`)).json()).toMatchObject({
        error_code: 'ERR_INVALID_PARAMETER',
      });
      expect((await h.get(`/v1/scripthash/${sha256hex('6a0101')}/stats?script=6a0101`)).json()).toMatchObject({
        error_code: 'ERR_INVALID_PARAMETER',
      });
      expect((await h.get('/v1/scripthash/abc/stats')).json()).toMatchObject({ error_code: 'ERR_INVALID_HASH' });
    });
  });
}

describeFixtures('/v1 address statistics, script hashes and batches against Bitcoin Core', () => {
  suite(
    'regtest-chain-a',
    'regtest',
    () => {
      const c = loadChainA();
      return c.main.map((hash) => c.blocks.get(hash)!.raw);
    },
    'regtest',
  );
  suite('mainnet blocks 0–599', 'main', () => loadMainnet600().map((b) => b.raw), 'main');
});
