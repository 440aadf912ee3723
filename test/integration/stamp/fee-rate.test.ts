/**
 * The fee rate a stamp transaction pays, read back from the node (the transaction decoded, its
 * inputs' values from their parents, and the node's mempool entry), on the devnode and on a real
 * regtest Bitcoin Core 30. With no estimate (Core's "Insufficient data or no feerate found", as a
 * fresh node answers) it pays STAMP_FALLBACK_FEE_RATE. With an estimate it pays it: on the devnode
 * one set with `setfeeestimate` (12 sat/vB); on Core the estimate Core's own fee estimator makes
 * from history — blocks of wallet payments at 12 sat/vB, seen in its mempool and then mined,
 * until `estimatesmartfee` answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { feeFor } from '../../../stamp/fee.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';

const FALLBACK_SAT_VB = 3;

let h: StampHarness;

/** Posts one stamp; fee (inputs' values from their parents minus outputs) and vsize of its transaction as the node has it. */
async function stampAndMeasure(): Promise<{ fee: bigint; vsize: number; inputs: number }> {
  const res = await h.post(randomHash());
  expect(res.statusCode, res.body).toBe(200);
  const txid = (res.json().stampid as string).split('-')[0]!;
  const tx = decodeTx(await h.rpc.getRawTransaction(txid));
  let fee = 0n;
  for (const input of tx.inputs) {
    const parent = decodeTx(await h.rpc.getRawTransaction(hashToHex(input.prevTxid)));
    fee += parent.outputs[input.vout]!.value;
  }
  for (const o of tx.outputs) fee -= o.value;
  // The node's own view of the same transaction agrees.
  const entry = await h.rpc.getMempoolEntry(txid);
  expect([BigInt(Math.round(entry.fees.base * 1e8)), entry.vsize]).toEqual([fee, tx.vsize]);
  return { fee, vsize: tx.vsize, inputs: tx.inputs.length };
}

/**
 * At `satPerVb` within rounding: at least the rate for the actual size, and no more than for
 * the size with the largest signatures the stamper plans with (1 vB per input).
 */
function expectRate(m: { fee: bigint; vsize: number; inputs: number }, satPerVb: number): void {
  const perKvB = BigInt(Math.round(satPerVb * 1000));
  expect(m.fee, `fee ${m.fee} for ${m.vsize} vB`).toBeGreaterThanOrEqual(feeFor(perKvB, m.vsize));
  expect(m.fee, `fee ${m.fee} for ${m.vsize} vB`).toBeLessThanOrEqual(feeFor(perKvB, m.vsize + m.inputs));
}

/** On Core: blocks of 10 wallet payments at `satPerVb` until estimatesmartfee answers (5 blocks did on an idle node). */
async function coreEstimateFromHistory(satPerVb: number): Promise<number> {
  const core = h.core!;
  for (let block = 0; block < 20; block++) {
    for (let i = 0; i < 10; i++) {
      const to = await core.call<string>('getnewaddress', [], core.wallet!);
      await core.call('sendtoaddress', [to, 0.001, '', '', false, true, null, 'unset', false, satPerVb], core.wallet!);
    }
    await h.mine(1);
    const est = await h.rpc.estimateSmartFee(h.config.stampConfTarget);
    if (typeof est.feerate === 'number') return est.feerate;
  }
  throw new Error(`Core gave no estimate after 20 blocks of payments at ${satPerVb} sat/vB`);
}

for (const core of [false, true]) {
  (core ? describeBitcoind : describe)(`stamp fee rate on ${core ? 'a real bitcoind' : 'the devnode'}`, () => {
    beforeAll(async () => {
      h = await createStampHarness({ stampFallbackFeeRate: FALLBACK_SAT_VB }, { core, txindex: true });
      await h.startStamper();
      await h.fund(4, 1_000_000n);
    });
    afterAll(async () => {
      await h?.close();
    });

    it('without an estimate ("Insufficient data") it pays STAMP_FALLBACK_FEE_RATE', async () => {
      if (!core) expect(await h.rpc.call('setfeeestimate', [null])).toBeNull();
      expect(await h.rpc.estimateSmartFee(h.config.stampConfTarget)).toMatchObject({ errors: ['Insufficient data or no feerate found'] });
      expect(h.config.stampFallbackFeeRate).toBe(FALLBACK_SAT_VB);
      const stamper = await h.startStamper();
      expectRate(await stampAndMeasure(), FALLBACK_SAT_VB);
      expect((await stamper.status()).fee_rate_sat_vb).toBe(FALLBACK_SAT_VB);
      await h.mine(1);
    });

    it('with an estimate from the node (12 sat/vB) a stamp transaction pays it', async () => {
      let satPerVb = 12;
      if (core) {
        // Core's own estimate from what it saw confirmed: the payments' rate, give or take its buckets.
        satPerVb = Math.round((await coreEstimateFromHistory(12)) * 1e8) / 1000;
        expect(satPerVb).toBeGreaterThan(FALLBACK_SAT_VB * 2);
        expect(satPerVb).toBeLessThanOrEqual(20);
      } else {
        expect(await h.rpc.call('setfeeestimate', [12])).toBeNull();
        expect(await h.rpc.estimateSmartFee(h.config.stampConfTarget)).toEqual({ feerate: 0.00012, blocks: h.config.stampConfTarget });
      }
      const stamper = await h.startStamper(); // a fresh fee cache
      expectRate(await stampAndMeasure(), satPerVb);
      expect((await stamper.status()).fee_rate_sat_vb).toBeCloseTo(satPerVb, 3);
      await h.mine(1);
    });
  });
}
