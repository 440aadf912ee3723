import { sha256 } from '@noble/hashes/sha2.js';
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import { TransactionBuilder } from '../../../client/builder.js';
import { ApiError, DustError, InsufficientFundsError } from '../../../client/errors.js';
import { ADDRESS_TYPES, Key, addressToScript } from '../../../client/keys.js';
import { getNetwork } from '../../../client/network.js';
import { planTransaction, shuffled, type Candidate } from '../../../client/plan.js';
import { keySource } from '../../../client/sources.js';
import { memoryClient } from '../../support/client-memory.js';

const regtest = getNetwork('regtest');

function candidates(key: Key, values: bigint[], type: 'p2wpkh' | 'p2pkh' | 'p2tr' | 'p2sh-p2wpkh' = 'p2wpkh'): Candidate[] {
  const source = keySource(key, type, regtest);
  return values.map((value, i) => ({
    txid: hex.encode(sha256(Uint8Array.of(i, values.length))),
    vout: i,
    value,
    confirmations: 1,
    source,
  }));
}

function decode(txHex: string) {
  return btc.Transaction.fromRaw(hex.decode(txHex), { allowUnknownOutputs: true });
}

describe('planTransaction', () => {
  const key = Key.random('regtest');
  const payee = Key.random('regtest').address('p2wpkh');
  const out = (amount: bigint) => ({ script: addressToScript(payee, regtest), amount, address: payee });

  it('selects enough inputs for outputs plus a fee at the rate, with change above dust', () => {
    const plan = planTransaction({
      outputs: [out(70_000n)],
      candidates: candidates(key, [50_000n, 40_000n, 10_000n]),
      feeRate: 5n,
      changeAddress: key.address('p2wpkh'),
      network: regtest,
      shuffleOutputs: false,
    });
    const inSum = plan.inputs.reduce((s, c) => s + c.value, 0n);
    expect(inSum).toBeGreaterThanOrEqual(70_000n);
    expect(plan.changeIndex).toBe(1);
    expect(plan.outputs[1]!.amount).toBe(inSum - 70_000n - plan.fee);
    expect(plan.fee).toBeGreaterThanOrEqual(5n * BigInt(plan.estimatedVsize) - 5n);
    expect(plan.fee).toBeLessThanOrEqual(5n * BigInt(plan.estimatedVsize) + 5n);
  });

  it('leaves change at or below the dust threshold to the fee', () => {
    const plan = planTransaction({
      outputs: [out(49_700n)],
      candidates: candidates(key, [50_000n]),
      feeRate: 1n,
      changeAddress: key.address('p2wpkh'),
      network: regtest,
    });
    expect(plan.changeIndex).toBeNull();
    expect(plan.outputs).toHaveLength(1);
    expect(plan.fee).toBe(300n);
  });

  it('refuses outputs below 546 sat with a clear error unless allowDustyOutputs', () => {
    const req = {
      outputs: [out(1_000n), out(545n)],
      candidates: candidates(key, [50_000n]),
      feeRate: 1n,
      changeAddress: key.address('p2wpkh'),
      network: regtest,
    };
    expect(() => planTransaction(req)).toThrow(DustError);
    expect(() => planTransaction(req)).toThrow(
      'Output 1 pays 545 sat, below the dust threshold of 546 sat (set allowDustyOutputs to send it anyway)',
    );
    expect(planTransaction({ ...req, allowDustyOutputs: true }).outputs.some((o) => o.amount === 545n)).toBe(true);
    expect(() => planTransaction({ ...req, outputs: [out(546n)] })).not.toThrow();
    expect(() => planTransaction({ ...req, outputs: [out(999n)], dustThreshold: 1_000n })).toThrow('below the dust threshold of 1000 sat');
  });

  it('lets a data output of 0 sat through the dust check', () => {
    const data = new TextEncoder().encode('hello');
    const plan = planTransaction({
      outputs: [{ script: btc.Script.encode(['RETURN', data]), amount: 0n, data }],
      candidates: candidates(key, [10_000n]),
      feeRate: 1n,
      changeAddress: key.address('p2wpkh'),
      network: regtest,
    });
    expect(plan.outputs.find((o) => o.data)?.amount).toBe(0n);
    expect(plan.changeIndex).not.toBeNull();
  });

  it('throws InsufficientFundsError naming the amounts', () => {
    expect(() =>
      planTransaction({
        outputs: [out(100_000n)],
        candidates: candidates(key, [30_000n, 20_000n]),
        feeRate: 1n,
        changeAddress: key.address(),
        network: regtest,
      }),
    ).toThrow(/Insufficient funds: outputs need 100000 sat plus the fee, 50000 sat is spendable/);
  });

  it("keeps the caller's order with shuffling off (change last) and permutes with it on", () => {
    const outputs = [out(1_000n), out(2_000n), out(3_000n), out(4_000n)];
    const base = { outputs, candidates: candidates(key, [100_000n]), feeRate: 1n, changeAddress: key.address('p2tr'), network: regtest };
    const fixed = planTransaction({ ...base, shuffleOutputs: false });
    expect(fixed.outputs.slice(0, 4).map((o) => o.amount)).toEqual([1_000n, 2_000n, 3_000n, 4_000n]);
    expect(fixed.changeIndex).toBe(4);
    const orders = new Set<string>();
    const changeAt = new Set<number>();
    for (let i = 0; i < 60; i++) {
      const p = planTransaction(base);
      orders.add(p.outputs.map((o) => o.amount).join(','));
      changeAt.add(p.changeIndex!);
      expect(new Set(p.outputs.map((o) => o.amount))).toEqual(new Set(fixed.outputs.map((o) => o.amount)));
      expect(p.outputs[p.changeIndex!]!.address).toBe(key.address('p2tr'));
    }
    expect(orders.size).toBeGreaterThan(10);
    expect(changeAt.size).toBe(5);
  });

  it('shuffled is a uniform permutation (each item reaches each position)', () => {
    const counts = Array.from({ length: 3 }, () => [0, 0, 0]);
    for (let i = 0; i < 3000; i++) shuffled([0, 1, 2]).forEach((v, pos) => counts[v]![pos]!++);
    for (const row of counts) for (const c of row) expect(c).toBeGreaterThan(800);
  });

  it('spends required inputs first and in order', () => {
    const cs = candidates(key, [5_000n, 6_000n, 900_000n]);
    const plan = planTransaction({
      outputs: [out(20_000n)],
      candidates: cs,
      required: [cs[1]!, cs[0]!],
      feeRate: 1n,
      changeAddress: key.address(),
      network: regtest,
    });
    expect(plan.inputs.slice(0, 2).map((c) => c.vout)).toEqual([1, 0]);
    expect(plan.inputs[2]!.vout).toBe(2);
  });
});

describe('TransactionBuilder', () => {
  it('signs inputs of every single-key type; the result decodes identically with scure', async () => {
    const client = memoryClient();
    const key = Key.random('regtest');
    for (const type of ADDRESS_TYPES) client.fund(key.address(type), addressToScript(key.address(type), 'regtest'), 20_000n);
    const payee = Key.random('regtest').address('p2wpkh');
    const built = await new TransactionBuilder(client, { feeRate: 3 }).to(payee, 70_000n).data('stamp').from(key).build();
    expect(built.inputs.map((i) => i.address).sort()).toEqual(ADDRESS_TYPES.map((t) => key.address(t)).sort());
    const tx = decode(built.hex);
    expect(tx.id).toBe(built.txid);
    expect(tx.inputsLength).toBe(4);
    expect(tx.isFinal).toBe(true);
    for (let i = 0; i < tx.inputsLength; i++) {
      const inp = tx.getInput(i);
      expect(hex.encode(inp.txid!)).toBe(built.inputs[i]!.txid);
      expect(inp.index).toBe(built.inputs[i]!.vout);
      expect(inp.finalScriptSig !== undefined || inp.finalScriptWitness !== undefined).toBe(true);
    }
    expect(tx.outputsLength).toBe(built.outputs.length);
    for (let i = 0; i < tx.outputsLength; i++) {
      expect(tx.getOutput(i).amount).toBe(built.outputs[i]!.amount);
      expect(hex.encode(tx.getOutput(i).script!)).toBe(built.outputs[i]!.script);
    }
    const totalIn = built.inputs.reduce((s, i) => s + i.value, 0n);
    const totalOut = built.outputs.reduce((s, o) => s + o.amount, 0n);
    expect(built.fee).toBe(totalIn - totalOut);
    // The fee covers the real size at the rate (the estimate assumes the largest signatures).
    expect(built.fee).toBeGreaterThanOrEqual(3n * BigInt(built.vsize));
    expect(built.fee).toBeLessThan(3n * BigInt(built.vsize) + 3n * 20n);
    expect(built.outputs.find((o) => o.data)?.data).toBe(hex.encode(new TextEncoder().encode('stamp')));
  });

  it('pays at least the fee rate on the signed size, legacy inputs among segwit ones included', async () => {
    // A legacy input in a segwit transaction carries an empty witness (1 WU) that scure's estimate leaves out.
    for (let i = 0; i < 25; i++) {
      const client = memoryClient();
      const key = Key.random('regtest');
      for (const type of ADDRESS_TYPES) client.fund(key.address(type), addressToScript(key.address(type), 'regtest'), 40_000n);
      const rate = BigInt(1 + (i % 5));
      const built = await new TransactionBuilder(client, { feeRate: rate })
        .to(Key.random('regtest').address('p2tr'), 130_000n)
        .from(key)
        .build();
      expect(built.inputs).toHaveLength(4);
      expect(built.fee).toBeGreaterThanOrEqual(rate * BigInt(built.vsize));
      expect(built.fee).toBeLessThanOrEqual(rate * BigInt(built.vsize + 8));
    }
  });

  it('concurrent builders of one client never select the same output', async () => {
    const client = memoryClient();
    const key = Key.random('regtest');
    const addr = key.address('p2wpkh');
    for (let i = 0; i < 12; i++) client.fund(addr, addressToScript(addr, 'regtest'), 10_000n);
    const payee = Key.random('regtest').address('p2wpkh');
    const built = await Promise.all(
      Array.from({ length: 6 }, () => new TransactionBuilder(client, { feeRate: 1 }).to(payee, 15_000n).from(key, 'p2wpkh').build()),
    );
    const used = built.flatMap((b) => b.inputs.map((i) => `${i.txid}:${i.vout}`));
    expect(new Set(used).size).toBe(used.length);
    expect(used.length).toBe(12);
    // All 12 are held: a seventh builder finds nothing and says why.
    await expect(new TransactionBuilder(client).to(payee, 1_000n).from(key, 'p2wpkh').build()).rejects.toThrow(
      /12 more outputs are reserved by other transactions of this client/,
    );
    // Releasing one transaction's inputs frees them for the next builder.
    built[0]!.release();
    const again = await new TransactionBuilder(client, { feeRate: 1 }).to(payee, 15_000n).from(key, 'p2wpkh').build();
    expect(again.inputs.map((i) => `${i.txid}:${i.vout}`).sort()).toEqual(built[0]!.inputs.map((i) => `${i.txid}:${i.vout}`).sort());
  });

  it('releases the inputs when sending fails for good, keeps them after success or a retryable failure', async () => {
    const client = memoryClient();
    const key = Key.random('regtest');
    const addr = key.address('p2tr');
    client.fund(addr, addressToScript(addr, 'regtest'), 50_000n);
    const payee = Key.random('regtest').address('p2pkh');
    const faulty = new ApiError(
      400,
      { error_type: 'invalid_request', error_code: 'ERR_TX_REJECTED', error_message: 'bad-txns', retry: false, error_cause: null },
      'POST /v1/transactions',
    );
    client.failNextSends.push(faulty);
    const first = await new TransactionBuilder(client).to(payee, 10_000n).from(key, 'p2tr').build();
    await expect(first.send()).rejects.toBe(faulty);
    expect(client.reservations.list()).toEqual([]);
    const second = await new TransactionBuilder(client).to(payee, 10_000n).from(key, 'p2tr').build();
    await second.send();
    expect(client.sent).toEqual([second.hex]);
    expect(client.reservations.list()).toEqual([`${second.inputs[0]!.txid}:${second.inputs[0]!.vout}`]);
  });

  it('releases the reservation when signing fails (a key that cannot sign)', async () => {
    const client = memoryClient();
    const key = Key.random('regtest');
    const addr = key.address('p2wpkh');
    client.fund(addr, addressToScript(addr, 'regtest'), 50_000n);
    // A watch-only source: its script is the key's, but it holds no key.
    const watch = { ...keySource(key, 'p2wpkh', 'regtest'), keys: [] };
    await expect(new TransactionBuilder(client).to(addr, 10_000n).fromSource(watch).build()).rejects.toThrow(
      'Not enough signatures to finalize: input 0 has 0 of 1',
    );
    expect(client.reservations.list()).toEqual([]);
  });

  it('refuses dust, a wrong-network address and a WIF of another network before fetching anything', async () => {
    const client = memoryClient();
    const key = Key.random('regtest');
    expect(() => new TransactionBuilder(client).to(Key.random('main').address(), 1_000n)).toThrow(/Invalid regtest address/);
    expect(() => new TransactionBuilder(client).from(Key.random('main').toWif())).toThrow(
      'Invalid WIF: the key is for another network than regtest',
    );
    await expect(new TransactionBuilder(client).to(key.address(), 100n).from(key).build()).rejects.toThrow(DustError);
    expect(client.calls.listUnspent).toBe(0);
    await expect(new TransactionBuilder(client).to(key.address(), 100_000n).from(key).build()).rejects.toThrow(InsufficientFundsError);
  });
});
