/**
 * Stamping through a real Bitcoin Core 30's mempool policy, with the indexer following it: 100
 * concurrent stamps over 10 coins from Core's wallet are batched into transactions with many
 * OP_RETURN outputs that Core accepts into its mempool (its own entry: the fee and vsize stored,
 * the bytes stored), each hash in exactly one output, no coin spent twice; mined, every stamp
 * confirms, with confirmations following Core's chain.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { nullData } from '../../../src/bitcoin/script.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';

type StampTx = { txid: Buffer; raw: Buffer; fee: bigint; vsize: number; status: string };

describeBitcoind('stamping on a real bitcoind', () => {
  let h: StampHarness;
  beforeAll(async () => {
    h = await createStampHarness({}, { core: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("100 concurrent stamps: transactions Core's mempool accepts as stored, each hash once, then confirmed", async () => {
    const core = h.core!;
    const stamper = await h.startStamper();
    await h.fund(10, 200_000n);
    expect((await stamper.status()).balance.confirmed).toBe(2_000_000);

    const hashes = Array.from({ length: 100 }, randomHash);
    const answers = await Promise.all(hashes.map((x) => h.post(x)));
    for (const a of answers) expect(a.statusCode, a.body).toBe(200);
    const ids = answers.map((a) => a.json().stampid as string);
    expect(new Set(ids).size).toBe(100);

    const stored = (await sql<StampTx>`SELECT txid, raw, fee, vsize, status FROM stamp_txs ORDER BY created_at`.execute(h.t.db)).rows;
    expect(stored.length).toBe(new Set(ids.map((id) => id.split('-')[0])).size);
    const mempool = await core.call<string[]>('getrawmempool');
    const payloads: string[] = [];
    const spent = new Set<string>();
    for (const tx of stored) {
      const txid = hashToHex(tx.txid);
      expect(mempool).toContain(txid);
      expect(await core.call<string>('getrawtransaction', [txid])).toBe(tx.raw.toString('hex'));
      const entry = await core.call<{ vsize: number; fees: { base: number } }>('getmempoolentry', [txid]);
      expect([entry.vsize, Math.round(entry.fees.base * 1e8)]).toEqual([tx.vsize, Number(tx.fee)]);
      const d = decodeTx(tx.raw);
      expect(d.outputs.filter((o) => nullData(o.script)).length).toBeGreaterThan(1);
      for (const input of d.inputs) {
        const k = `${hashToHex(input.prevTxid)}:${input.vout}`;
        expect(spent.has(k)).toBe(false);
        spent.add(k);
      }
      for (const o of d.outputs) {
        const p = nullData(o.script);
        if (p) payloads.push(Buffer.from(p).toString('hex'));
      }
    }
    expect(payloads.sort()).toEqual([...hashes].sort());

    const [block] = await h.mine(1);
    const mined = await core.call<{ tx: string[] }>('getblock', [block, 1]);
    for (const tx of stored) expect(mined.tx).toContain(hashToHex(tx.txid));
    await waitFor('stamps confirmed', async () => (await h.stamper!.track()) && (await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamp_txs WHERE status <> 'confirmed'`.execute(h.t.db)).rows[0]!.n === '0');
    expect((await h.get(ids[0]!)).json()).toMatchObject({ tx: ids[0]!.split('-')[0], vout: Number(ids[0]!.split('-')[1]), confirmations: 1 });
    await h.mine(2);
    expect((await h.get(ids[99]!)).json().confirmations).toBe(3);
  });
});
