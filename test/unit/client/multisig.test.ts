import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import { TransactionBuilder } from '../../../client/builder.js';
import { Key } from '../../../client/keys.js';
import { MULTISIG_TYPES, createMultisig } from '../../../client/multisig.js';
import { combinePsbts, describePsbt, finalizePsbt, psbtStatus, signPsbt } from '../../../client/psbt.js';
import { multisigSource } from '../../../client/sources.js';
import { memoryClient } from '../../support/client-memory.js';

const keys = () => [Key.random('regtest'), Key.random('regtest'), Key.random('regtest')] as const;

describe('createMultisig', () => {
  it('builds m <keys> n OP_CHECKMULTISIG and wraps it per type', () => {
    const [a, b, c] = keys();
    const pubs = [a.publicKey, b.publicKey, c.publicKey];
    const prefix = { p2sh: /^2/, p2wsh: /^bcrt1q.{58}$/, 'p2sh-p2wsh': /^2/ };
    for (const type of MULTISIG_TYPES) {
      const acct = createMultisig({ m: 2, publicKeys: pubs, type, network: 'regtest' });
      const ms = btc.OutScript.decode(acct.multisigScript);
      expect(ms.type).toBe('ms');
      if (ms.type !== 'ms') continue;
      expect(ms.m).toBe(2);
      expect(ms.pubkeys.map((p) => hex.encode(p))).toEqual(pubs.map((p) => hex.encode(p)));
      expect(acct.address).toMatch(prefix[type]);
      expect(btc.Address(acct.network).encode(btc.OutScript.decode(acct.script))).toBe(acct.address);
      if (type === 'p2sh') expect(acct.redeemScript).toEqual(acct.multisigScript);
      if (type !== 'p2sh') expect(acct.witnessScript).toEqual(acct.multisigScript);
      if (type === 'p2sh-p2wsh') expect(btc.OutScript.decode(acct.redeemScript!).type).toBe('wsh');
    }
  });

  it('gives the same address for any key order with sortKeys (BIP67), and checks m, n and keys', () => {
    const [a, b, c] = keys();
    const x = createMultisig({ m: 2, publicKeys: [a.publicKey, b.publicKey, c.publicKey], sortKeys: true, network: 'regtest' });
    const y = createMultisig({ m: 2, publicKeys: [c.publicKey, a.publicKey, b.publicKey], sortKeys: true, network: 'regtest' });
    expect(x.address).toBe(y.address);
    expect(() => createMultisig({ m: 3, publicKeys: [a.publicKey, b.publicKey] })).toThrow(
      'A 3-of-n multisig needs at least 3 public keys, got 2',
    );
    expect(() => createMultisig({ m: 0, publicKeys: [a.publicKey] })).toThrow('m must be an integer ≥ 1, got 0');
    expect(() => createMultisig({ m: 1, publicKeys: [a.publicKey, a.publicKey] })).toThrow(/appears twice/);
    expect(() => createMultisig({ m: 1, publicKeys: [new Key(a.privateKey, 'regtest', false).publicKey] })).toThrow(/must be compressed/);
    const sixteen = Array.from({ length: 16 }, () => Key.random('regtest').publicKey);
    expect(() => createMultisig({ m: 2, publicKeys: sixteen, type: 'p2sh' })).toThrow('A p2sh multisig holds at most 15 keys, got 16');
    expect(createMultisig({ m: 2, publicKeys: sixteen, type: 'p2wsh' }).n).toBe(16);
  });
});

describe.each(MULTISIG_TYPES)('2-of-3 %s spending', (type) => {
  async function setup() {
    const client = memoryClient();
    const [a, b, c] = keys();
    const acct = createMultisig({ m: 2, publicKeys: [a.publicKey, b.publicKey, c.publicKey], type, network: 'regtest' });
    client.fund(acct.address, acct.script, 100_000n);
    const payee = Key.random('regtest').address('p2wpkh');
    return { client, a, b, c, acct, payee };
  }

  it('signs with all keys at once', async () => {
    const { client, a, c, acct, payee } = await setup();
    const built = await new TransactionBuilder(client).to(payee, 60_000n).fromMultisig(acct, [a, c]).build();
    const tx = btc.Transaction.fromRaw(hex.decode(built.hex));
    expect(tx.id).toBe(built.txid);
    const inp = tx.getInput(0);
    if (type === 'p2sh') {
      // OP_0 <sig> <sig> <redeemScript>
      const parts = btc.Script.decode(inp.finalScriptSig!);
      expect(parts).toHaveLength(4);
      expect(parts[3]).toEqual(acct.multisigScript);
    } else {
      // <> <sig> <sig> <witnessScript>
      expect(inp.finalScriptWitness).toHaveLength(4);
      expect(inp.finalScriptWitness![3]).toEqual(acct.multisigScript);
    }
    expect(built.fee).toBeGreaterThanOrEqual(2n * BigInt(built.vsize));
  });

  it('passes a PSBT from signer to signer and finalizes when 2 signatures are present', async () => {
    const { client, a, b, c, acct, payee } = await setup();
    const partial = await new TransactionBuilder(client).to(payee, 60_000n).fromMultisig(acct).buildPsbt();
    expect(psbtStatus(partial.psbt)).toEqual({ inputs: [{ index: 0, required: 2, present: 0, finalized: false }], complete: false });
    // What the first signer checks before signing.
    const seen = describePsbt(partial.psbt, 'regtest');
    expect(seen.outputs.map((o) => o.address)).toContain(payee);
    expect(seen.fee).toBe(partial.fee);

    const byA = signPsbt(partial.psbt, a.toWif(), 'regtest');
    expect(psbtStatus(byA).inputs[0]!.present).toBe(1);
    expect(() => finalizePsbt(byA)).toThrow('Not enough signatures to finalize: input 0 has 1 of 2');
    const byAB = signPsbt(byA, b, 'regtest');
    expect(psbtStatus(byAB).complete).toBe(true);
    const final = finalizePsbt(byAB);
    const tx = btc.Transaction.fromRaw(hex.decode(final.hex));
    expect(tx.id).toBe(final.txid);
    expect(tx.isFinal).toBe(true);

    // Signing in parallel and combining gives the same transaction (RFC 6979 signatures).
    const combined = combinePsbts([signPsbt(partial.psbt, b, 'regtest'), signPsbt(partial.psbt, a, 'regtest')]);
    expect(finalizePsbt(combined).hex).toBe(final.hex);

    // A third signature does no harm; an outsider's key signs nothing.
    expect(finalizePsbt(signPsbt(byAB, c, 'regtest')).txid).toBe(final.txid);
    expect(() => signPsbt(partial.psbt, Key.random('regtest'), 'regtest')).toThrow('None of the keys can sign an input of this PSBT');
    expect(() => multisigSource(acct, [Key.random('regtest')])).toThrow('A signing key is not one of the multisig public keys');
    partial.release();
    expect(client.reservations.list()).toEqual([]);
  });
});
