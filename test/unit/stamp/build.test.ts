import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { nullData } from '../../../src/bitcoin/script.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { encodeWif } from '../../../src/bitcoin/wif.js';
import { verifyTxScriptsDetailed } from '../../../devnode/script-verify.js';
import {
  assertDataOutput,
  buildStampTx,
  type Coin,
  estimateVsize,
  FeeTooHighError,
  InsufficientFundsError,
  RBF_SEQUENCE,
} from '../../../stamp/build.js';
import { feeFor, rateOf } from '../../../stamp/fee.js';
import { loadStampWallet } from '../../../stamp/wallet.js';

const key = new Uint8Array(32).fill(7);
const wallet = loadStampWallet({ wif: encodeWif(key, 'regtest') }, 'regtest');
const legacyChange = loadStampWallet({ descriptor: `pkh(${encodeWif(key, 'regtest')})` }, 'regtest');

function coin(w = wallet, value = 100_000n, type: 'p2wpkh' | 'p2pkh' = 'p2wpkh'): Coin {
  const s = w.scripts.find((x) => x.type === type)!;
  return { txid: randomBytes(32), vout: 1, value, script: s.script, depth: 0 };
}

function check(built: ReturnType<typeof buildStampTx>, payloads: Buffer[], rate: bigint) {
  const tx = decodeTx(built.raw);
  expect(hashToHex(tx.txid)).toBe(hashToHex(built.txid));
  expect(tx.vsize).toBe(built.vsize);
  expect(tx.inputs.every((i) => i.sequence === RBF_SEQUENCE)).toBe(true);
  payloads.forEach((p, vout) => {
    expect(tx.outputs[vout]!.value).toBe(0n);
    expect(Buffer.from(nullData(tx.outputs[vout]!.script)!).equals(p)).toBe(true);
  });
  const inSum = built.inputs.reduce((s, c) => s + c.value, 0n);
  const outSum = tx.outputs.reduce((s, o) => s + o.value, 0n);
  expect(inSum - outSum).toBe(built.fee);
  expect(built.fee).toBeGreaterThanOrEqual(feeFor(rate, built.vsize));
  const verdict = verifyTxScriptsDetailed(
    tx,
    built.inputs.map((c) => ({ value: c.value, script: c.script })),
  );
  expect(verdict.failure).toBeNull();
  expect(verdict.unchecked).toEqual([]);
}

describe('buildStampTx', () => {
  it('one OP_RETURN per payload at vout 0..n-1, change after, signatures valid, fee at the rate', () => {
    const payloads = Array.from({ length: 50 }, () => randomBytes(32));
    const built = buildStampTx({
      wallet,
      inputs: [coin(), coin(wallet, 50_000n, 'p2pkh')],
      payloads,
      feeRatePerKvB: 2000n,
      maxFee: 1_000_000n,
    });
    expect(built.dataCount).toBe(50);
    expect(built.change.map((c) => c.vout)).toEqual([50]);
    check(built, payloads, 2000n);
    // The size estimate is the signed size (low-R signatures), at most a byte over.
    const est = estimateVsize(wallet, built.inputs, [...decodeTx(built.raw).outputs.map((o) => o.script)]);
    expect(est - built.vsize).toBeGreaterThanOrEqual(0);
    expect(est - built.vsize).toBeLessThanOrEqual(1);
    expect(rateOf(built.fee, built.vsize)).toBeLessThan(2100n);
  });

  it('P2PKH coins alone (no witness) sign and verify, with a pkh() change', () => {
    const payloads = [randomBytes(32)];
    const built = buildStampTx({
      wallet: legacyChange,
      inputs: [coin(legacyChange, 20_000n, 'p2pkh')],
      payloads,
      feeRatePerKvB: 1000n,
      maxFee: 100_000n,
    });
    expect(built.change[0]!.script.equals(legacyChange.scripts.find((s) => s.type === 'p2pkh')!.script)).toBe(true);
    check(built, payloads, 1000n);
  });

  it('splits change in two when asked and there is enough; drops change that would be dust', () => {
    const payloads = [randomBytes(32)];
    const two = buildStampTx({
      wallet,
      inputs: [coin(wallet, 1_000_000n)],
      payloads,
      feeRatePerKvB: 1000n,
      maxFee: 100_000n,
      changeOutputs: 2,
    });
    expect(two.change).toHaveLength(2);
    check(two, payloads, 1000n);
    const none = buildStampTx({ wallet, inputs: [coin(wallet, 400n)], payloads, feeRatePerKvB: 1000n, maxFee: 100_000n });
    expect(none.change).toHaveLength(0);
    expect(none.fee).toBe(400n);
    check(none, payloads, 1000n);
  });

  it('a replacement floor (minFeeFor) raises the fee above the rate', () => {
    const payloads = [randomBytes(32)];
    const built = buildStampTx({
      wallet,
      inputs: [coin()],
      payloads,
      feeRatePerKvB: 0n,
      minFeeFor: (v) => BigInt(v) * 7n,
      maxFee: 100_000n,
    });
    // The fee is fixed before signing, on the size with signatures at their largest: a low-R
    // signature one byte shorter can leave the signed size a vbyte under the estimate.
    const est = estimateVsize(wallet, built.inputs, [...decodeTx(built.raw).outputs.map((o) => o.script)]);
    expect(est - built.vsize).toBeGreaterThanOrEqual(0);
    expect(est - built.vsize).toBeLessThanOrEqual(1);
    expect(built.fee).toBe(BigInt(est) * 7n);
    check(built, payloads, 0n);
  });

  it('refuses before signing: payload over 80 bytes, valued OP_RETURN, too little money, fee over the maximum, a foreign coin', () => {
    expect(() => assertDataOutput(new Uint8Array(81), 0n)).toThrow('OP_RETURN payload of 81 bytes exceeds 80');
    expect(() => assertDataOutput(new Uint8Array(32), 1n)).toThrow('OP_RETURN output must carry no value (got 1 sat)');
    expect(() =>
      buildStampTx({ wallet, inputs: [coin()], payloads: [new Uint8Array(81)], feeRatePerKvB: 1000n, maxFee: 100_000n }),
    ).toThrow(RangeError);
    expect(() =>
      buildStampTx({ wallet, inputs: [coin(wallet, 50n)], payloads: [randomBytes(32)], feeRatePerKvB: 1000n, maxFee: 100_000n }),
    ).toThrow(InsufficientFundsError);
    expect(() => buildStampTx({ wallet, inputs: [], payloads: [randomBytes(32)], feeRatePerKvB: 1000n, maxFee: 100_000n })).toThrow(
      InsufficientFundsError,
    );
    expect(() => buildStampTx({ wallet, inputs: [coin()], payloads: [randomBytes(32)], feeRatePerKvB: 100_000n, maxFee: 1000n })).toThrow(
      FeeTooHighError,
    );
    const foreign = { ...coin(), script: Buffer.from('0014' + '11'.repeat(20), 'hex') };
    expect(() => buildStampTx({ wallet, inputs: [foreign], payloads: [randomBytes(32)], feeRatePerKvB: 1000n, maxFee: 100_000n })).toThrow(
      /is not the wallet's/,
    );
  });
});
