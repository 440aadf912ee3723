/**
 * The fee rate a stamp transaction pays, read back from the devnode (the transaction decoded, its
 * inputs' values from their parents): with an estimate set on the devnode (`setfeeestimate`, so
 * estimatesmartfee answers `{ feerate, blocks }` as Core does) it pays that estimate; with none
 * (Core's "Insufficient data or no feerate found") it pays STAMP_FALLBACK_FEE_RATE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { feeFor } from '../../../stamp/fee.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';

const FALLBACK_SAT_VB = 3;

let h: StampHarness;

beforeAll(async () => {
  h = await createStampHarness({ stampFallbackFeeRate: FALLBACK_SAT_VB });
  await h.startStamper();
  await h.fund(4, 1_000_000n);
});
afterAll(async () => {
  await h?.close();
});

/** Posts one stamp; fee (inputs' values from their parents minus outputs) and vsize of its transaction as the devnode has it. */
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
  const perKvB = BigInt(satPerVb * 1000);
  expect(m.fee, `fee ${m.fee} for ${m.vsize} vB`).toBeGreaterThanOrEqual(feeFor(perKvB, m.vsize));
  expect(m.fee, `fee ${m.fee} for ${m.vsize} vB`).toBeLessThanOrEqual(feeFor(perKvB, m.vsize + m.inputs));
}

describe('stamp fee rate', () => {
  it('with an estimate from the node (12 sat/vB) a stamp transaction pays it', async () => {
    expect(await h.rpc.call('setfeeestimate', [12])).toBeNull();
    expect(await h.rpc.estimateSmartFee(h.config.stampConfTarget)).toEqual({ feerate: 0.00012, blocks: h.config.stampConfTarget });
    const stamper = await h.startStamper(); // a fresh fee cache
    expectRate(await stampAndMeasure(), 12);
    expect((await stamper.status()).fee_rate_sat_vb).toBe(12);
    await h.mine(1);
  });

  it('without an estimate ("Insufficient data") it pays STAMP_FALLBACK_FEE_RATE', async () => {
    expect(await h.rpc.call('setfeeestimate', [null])).toBeNull();
    expect(await h.rpc.estimateSmartFee(h.config.stampConfTarget)).toMatchObject({ errors: ['Insufficient data or no feerate found'] });
    expect(h.config.stampFallbackFeeRate).toBe(FALLBACK_SAT_VB);
    const stamper = await h.startStamper();
    expectRate(await stampAndMeasure(), FALLBACK_SAT_VB);
    expect((await stamper.status()).fee_rate_sat_vb).toBe(FALLBACK_SAT_VB);
    await h.mine(1);
  });
});
