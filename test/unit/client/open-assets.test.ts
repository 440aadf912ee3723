import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import { ColoringEngine, OpenAssets } from '../../../client/assets.js';
import { Key, addressToScript } from '../../../client/keys.js';
import { createMultisig } from '../../../client/multisig.js';
import {
  MAX_ASSET_QUANTITY,
  assetIdFromScript,
  colorTransaction,
  decodeAssetId,
  decodeLeb128,
  decodeMarkerPayload,
  encodeAssetId,
  encodeLeb128,
  encodeMarkerPayload,
  markerScript,
  parseMarkerScript,
} from '../../../client/open-assets.js';
import { multisigSource } from '../../../client/sources.js';
import type { Transaction } from '../../../client/types.js';
import { memoryClient, type MemoryClient } from '../../support/client-memory.js';

const b = (h: string) => hex.decode(h.replace(/\s+/g, ''));

describe('marker output (specification example)', () => {
  // "Data in the marker output" of the specification: 3 quantities (300, 0, 624485), 4 bytes of metadata.
  const payload = b('4f41 0100 03 ac02 00 e58e26 04 12345678');

  it('decodes and re-encodes byte for byte', () => {
    const m = decodeMarkerPayload(payload)!;
    expect(m.quantities).toEqual([300n, 0n, 624_485n]);
    expect(hex.encode(m.metadata)).toBe('12345678');
    expect(encodeMarkerPayload(m)).toEqual(payload);
    expect(hex.encode(markerScript(m))).toBe(`6a10${hex.encode(payload)}`);
    expect(parseMarkerScript(markerScript(m))).toEqual(m);
  });

  it('LEB128 as the spec uses it', () => {
    expect(hex.encode(encodeLeb128(300n))).toBe('ac02');
    expect(hex.encode(encodeLeb128(624_485n))).toBe('e58e26');
    expect(hex.encode(encodeLeb128(0n))).toBe('00');
    expect(encodeLeb128(MAX_ASSET_QUANTITY)).toHaveLength(9);
    expect(decodeLeb128(encodeLeb128(MAX_ASSET_QUANTITY), 0)).toEqual({ value: MAX_ASSET_QUANTITY, next: 9 });
    for (let i = 0; i < 200; i++) {
      const v = BigInt(Math.floor(Math.random() * 2 ** 52)) * BigInt(1 + Math.floor(Math.random() * 1000));
      expect(decodeLeb128(encodeLeb128(v), 0)!.value).toBe(v);
    }
    expect(decodeLeb128(b('80808080808080808002'), 0)).toBeUndefined(); // 10 bytes
    expect(decodeLeb128(b('80'), 0)).toBeUndefined(); // truncated
    expect(() => encodeMarkerPayload({ quantities: [MAX_ASSET_QUANTITY + 1n], metadata: new Uint8Array() })).toThrow('outside 0..2^63-1');
  });

  it('rejects malformed markers', () => {
    expect(decodeMarkerPayload(b('4f41 0100'))).toBeUndefined(); // no count, no metadata length
    expect(decodeMarkerPayload(b('4f41 0200 01 05 00'))).toBeUndefined(); // version 2
    expect(decodeMarkerPayload(b('4f41 0100 03 05 09 00'))).toBeUndefined(); // count larger than the list
    expect(decodeMarkerPayload(b('4f41 0100 01 04 02'))).toBeUndefined(); // metadata shorter than its length
    expect(decodeMarkerPayload(b('4f41 0100 01 05 00 ff'))).toBeUndefined(); // trailing bytes
    expect(decodeMarkerPayload(b('4f41 0100 01 80808080808080808002 00'))).toBeUndefined(); // 10-byte quantity
    expect(parseMarkerScript(b('76a914010966776006953d5567439e5e39f86a0d273bee88ac'))).toBeUndefined(); // not OP_RETURN
  });

  it('uses the first parsable push after OP_RETURN', () => {
    const good = encodeMarkerPayload({ quantities: [7n], metadata: new Uint8Array() });
    const script = btc.Script.encode([
      'RETURN',
      b('deadbeef'),
      good,
      encodeMarkerPayload({ quantities: [9n], metadata: new Uint8Array() }),
    ]);
    expect(parseMarkerScript(script)!.quantities).toEqual([7n]);
  });
});

describe('asset IDs', () => {
  it('is HASH160 of the issuing script, base58 version 23 (the specification example)', () => {
    // OP_DUP OP_HASH160 010966776006953D5567439E5E39F86A0D273BEE OP_EQUALVERIFY OP_CHECKSIG
    const script = b('76a914010966776006953d5567439e5e39f86a0d273bee88ac');
    expect(hex.encode(assetIdFromScript(script))).toBe('36e0ea8e93eaa0285d641305f4c81e563aa570a2');
    expect(encodeAssetId(assetIdFromScript(script), 'main')).toBe('ALn3aK1fSuG27N96UGYB1kUYUpGKRhBuBC');
    expect(encodeAssetId(assetIdFromScript(script), 'regtest')).toMatch(/^o/);
    expect(hex.encode(decodeAssetId('ALn3aK1fSuG27N96UGYB1kUYUpGKRhBuBC'))).toBe('36e0ea8e93eaa0285d641305f4c81e563aa570a2');
    expect(() => decodeAssetId('ALn3aK1fSuG27N96UGYB1kUYUpGKRhBuBC', 'regtest')).toThrow(/for regtest/);
    expect(() => decodeAssetId('1AaaBxiLVzo1xZSFpAw3Zm9YBYAYQgQuuU')).toThrow(/Invalid asset ID/);
  });
});

describe('coloring', () => {
  const S = (n: number) => Uint8Array.of(n);
  it('colors the specification example', () => {
    // Inputs: 3 A1, 2 A1, uncolored, 5 A1, 3 A1, 9 A2; marker at output 2 with 0, 10, 6, 0, 7, 3.
    const A1 = 'a1'.repeat(20);
    const A2 = 'a2'.repeat(20);
    const inputs = [
      { assetId: A1, quantity: 3n },
      { assetId: A1, quantity: 2n },
      { assetId: null, quantity: 0n },
      { assetId: A1, quantity: 5n },
      { assetId: A1, quantity: 3n },
      { assetId: A2, quantity: 9n },
    ];
    const firstInputScript = S(0x51);
    const outputs = [
      S(1),
      S(2),
      markerScript({ quantities: [0n, 10n, 6n, 0n, 7n, 3n], metadata: new Uint8Array() }),
      S(3),
      S(4),
      S(5),
      S(6),
    ].map((script) => ({ script }));
    const H = hex.encode(assetIdFromScript(firstInputScript));
    expect(colorTransaction({ coinbase: false, inputs, firstInputScript, outputs })).toEqual([
      { assetId: null, quantity: 0n, kind: 'issuance' },
      { assetId: H, quantity: 10n, kind: 'issuance' },
      { assetId: null, quantity: 0n, kind: 'marker' },
      { assetId: A1, quantity: 6n, kind: 'transfer' },
      { assetId: null, quantity: 0n, kind: 'transfer' },
      { assetId: A1, quantity: 7n, kind: 'transfer' },
      { assetId: A2, quantity: 3n, kind: 'transfer' },
    ]);
  });

  it('leaves everything uncolored for invalid markers, and uses the first valid marker', () => {
    const A = 'aa'.repeat(20);
    const B = 'bb'.repeat(20);
    const inputs = [
      { assetId: A, quantity: 1n },
      { assetId: B, quantity: 8n },
    ];
    const first = S(0x10);
    const m = (q: bigint[]) => markerScript({ quantities: q, metadata: new Uint8Array() });
    const color = (outs: Uint8Array[], extra: Partial<Parameters<typeof colorTransaction>[0]> = {}) =>
      colorTransaction({ coinbase: false, inputs, firstInputScript: first, outputs: outs.map((script) => ({ script })), ...extra });
    const none = (n: number) => Array.from({ length: n }, () => ({ assetId: null, quantity: 0n, kind: 'uncolored' }));
    expect(color([m([1n, 1n]), S(1)])).toEqual(none(2)); // more quantities than colorable outputs
    expect(color([m([10n]), S(1)])).toEqual(none(2)); // more units out than in
    expect(color([m([2n]), S(1)])).toEqual(none(2)); // one output gets units of A and B
    expect(color([S(1), m([5n])], { coinbase: true })).toEqual(none(2));
    expect(color([S(1), m([5n])], { inputs: [] })).toEqual(none(2));
    expect(color([S(1), S(2)])).toEqual(none(2)); // no marker at all
    // Invalid markers first, then a valid one: the valid one is the marker, the others are ordinary (issuance) outputs.
    const outs = color([m([1n, 1n, 1n, 1n, 1n, 1n, 1n]), m([0n, 0n, 2n]), m([1n, 1n, 1n]), S(7)]);
    const I = hex.encode(assetIdFromScript(first));
    expect(outs).toEqual([
      { assetId: I, quantity: 1n, kind: 'issuance' },
      { assetId: I, quantity: 1n, kind: 'issuance' },
      { assetId: null, quantity: 0n, kind: 'marker' },
      { assetId: A, quantity: 1n, kind: 'transfer' },
    ]);
  });
});

/** The API's JSON for a signed transaction, built from its hex and the outputs it spends. */
function apiTransaction(txHex: string, client: MemoryClient): Transaction {
  const tx = btc.Transaction.fromRaw(hex.decode(txHex), { allowUnknownOutputs: true });
  const inputs = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const inp = tx.getInput(i);
    const prevId = hex.encode(inp.txid!);
    const prev = client.transactions.get(prevId)?.outputs[inp.index!];
    inputs.push({ transaction_hash: prevId, output_index: inp.index!, address: [], value: prev?.value ?? null });
  }
  const outputs = [];
  for (let i = 0; i < tx.outputsLength; i++) {
    const o = tx.getOutput(i);
    outputs.push({ index: i, address: [], script: hex.encode(o.script!), value: o.amount!, used: false });
  }
  return {
    transaction_hash: tx.id,
    block_hash: [],
    coinbase: false,
    inputs,
    outputs,
    time: null,
    broadcast_time: '0001-01-01T00:00:00Z',
    addresses: [],
  };
}

/** Records a sent transaction as the index would: a transaction to look up, its outputs unspent, its inputs spent. */
function confirm(client: MemoryClient, txHex: string, addresses: Map<string, string>): Transaction {
  const t = apiTransaction(txHex, client);
  client.transactions.set(t.transaction_hash, t);
  client.spend(t.inputs.map((i) => `${i.transaction_hash}:${i.output_index}`));
  for (const o of t.outputs) {
    const address = addresses.get(o.script);
    if (address) client.fund(address, hex.decode(o.script), o.value, t.transaction_hash, o.index);
  }
  return t;
}

/** A plain (uncolored) funding transaction paying `value` to `address`. */
function fundPlain(client: MemoryClient, address: string, value: bigint): void {
  const script = addressToScript(address, 'regtest');
  const u = client.fund(address, script, value);
  client.transactions.set(u.txid, {
    transaction_hash: u.txid,
    block_hash: [],
    coinbase: true,
    inputs: [],
    outputs: [{ index: 0, address: [address], script: hex.encode(script), value, used: false }],
    time: null,
    broadcast_time: '0001-01-01T00:00:00Z',
    addresses: [address],
  });
}

describe('OpenAssets (issue, transfer, balances) on an in-memory index', () => {
  it('issues, transfers with asset change, and reads balances by walking the history', async () => {
    const client = memoryClient();
    const issuer = Key.random('regtest');
    const alice = Key.random('regtest');
    const bob = Key.random('regtest');
    const book = new Map<string, string>();
    for (const k of [issuer, alice, bob])
      for (const t of ['p2wpkh', 'p2tr'] as const) book.set(hex.encode(addressToScript(k.address(t), 'regtest')), k.address(t));
    fundPlain(client, issuer.address('p2wpkh'), 100_000n);
    fundPlain(client, alice.address('p2tr'), 50_000n);
    const assets = new OpenAssets(client);

    const { assetId, tx: issue } = await assets.issue({
      issuer,
      quantity: 1_000n,
      to: alice.address('p2tr'),
      metadata: 'u=https://example.com/asset',
    });
    expect(assetId).toBe(encodeAssetId(assetIdFromScript(addressToScript(issuer.address('p2wpkh'), 'regtest')), 'regtest'));
    expect(issue.outputs.map((o) => o.amount).slice(0, 2)).toEqual([600n, 0n]);
    expect(parseMarkerScript(issue.outputs[1]!.script)).toEqual({
      quantities: [1_000n],
      metadata: new TextEncoder().encode('u=https://example.com/asset'),
    });
    await issue.send();
    confirm(client, issue.hex, book);
    expect(await assets.getBalances(alice.address('p2tr'))).toMatchObject([{ assetId, quantity: 1_000n }]);
    expect(await assets.getBalances(issuer.address('p2wpkh'))).toEqual([]);

    const transfer = await assets.transfer({ from: alice, type: 'p2tr', assetId, quantity: 250n, to: bob.address('p2wpkh') });
    // Marker first, then the payee and the asset change; the colored input comes first.
    expect(transfer.inputs[0]).toMatchObject({ txid: issue.txid, vout: 0 });
    expect(parseMarkerScript(transfer.outputs[0]!.script)!.quantities).toEqual([250n, 750n]);
    await transfer.send();
    confirm(client, transfer.hex, book);
    expect(await assets.getBalances(bob.address('p2wpkh'))).toMatchObject([{ assetId, quantity: 250n }]);
    expect(await assets.getBalances(alice.address('p2tr'))).toMatchObject([{ assetId, quantity: 750n }]);
    // Bitcoin change of the transfer is uncolored: it comes after the quantity list.
    const colors = await assets.engine.colorTransaction(transfer.txid);
    expect(colors.map((c) => c.quantity)).toEqual([0n, 250n, 750n, ...(transfer.changeIndex === null ? [] : [0n])]);

    await expect(assets.transfer({ from: bob, assetId, quantity: 251n, to: alice.address('p2tr') })).rejects.toThrow(
      /holds 250 unreserved units/,
    );
  });

  it('transfers from a 2-of-3 multisig holder, at once or through PSBT', async () => {
    const client = memoryClient();
    const issuer = Key.random('regtest');
    const [a, b2, c] = [Key.random('regtest'), Key.random('regtest'), Key.random('regtest')];
    const vault = createMultisig({ m: 2, publicKeys: [a.publicKey, b2.publicKey, c.publicKey], type: 'p2wsh', network: 'regtest' });
    const dest = Key.random('regtest').address('p2wpkh');
    const book = new Map([
      [hex.encode(vault.script), vault.address],
      [hex.encode(addressToScript(issuer.address('p2wpkh'), 'regtest')), issuer.address('p2wpkh')],
      [hex.encode(addressToScript(dest, 'regtest')), dest],
    ]);
    fundPlain(client, issuer.address('p2wpkh'), 100_000n);
    const assets = new OpenAssets(client);
    const { assetId, tx } = await assets.issue({ issuer, quantity: 40n, to: vault.address });
    confirm(client, tx.hex, book);
    fundPlain(client, vault.address, 30_000n);

    const partial = await assets.transferPsbt({ from: multisigSource(vault, [a]), assetId, quantity: 40n, to: dest });
    const { finalizePsbt, signPsbt } = await import('../../../client/psbt.js');
    const final = finalizePsbt(signPsbt(partial.psbt, c, 'regtest'));
    confirm(client, final.hex, book);
    expect(await assets.getBalances(dest)).toMatchObject([{ assetId, quantity: 40n }]);
    expect(await assets.getBalances(vault.address)).toEqual([]);
  });

  it('walks a long transfer chain iteratively, once per transaction, and caches by txid', async () => {
    const client = memoryClient();
    const issueScript = b('51');
    const issueAsset = hex.encode(assetIdFromScript(issueScript));
    const mk = (txid: string, inputs: [string, number][], outputs: Uint8Array[], coinbase = false): Transaction => ({
      transaction_hash: txid,
      block_hash: [],
      coinbase,
      inputs: inputs.map(([h, i]) => ({ transaction_hash: h, output_index: i, address: [], value: 1n })),
      outputs: outputs.map((s, index) => ({ index, address: [], script: hex.encode(s), value: 600n, used: false })),
      time: null,
      broadcast_time: '0001-01-01T00:00:00Z',
      addresses: [],
    });
    const id = (n: number) => n.toString(16).padStart(64, '0');
    client.transactions.set(id(0), mk(id(0), [], [issueScript], true));
    client.transactions.set(id(1), mk(id(1), [[id(0), 0]], [b('52'), markerScript({ quantities: [5n], metadata: new Uint8Array() })]));
    const depth = 1500;
    for (let n = 2; n <= depth; n++) {
      client.transactions.set(
        id(n),
        mk(id(n), [[id(n - 1), n === 2 ? 0 : 1]], [markerScript({ quantities: [5n], metadata: new Uint8Array() }), b('53')]),
      );
    }
    const engine = new ColoringEngine({ source: client });
    expect(await engine.colorOutput(id(depth), 1)).toMatchObject({ assetId: issueAsset, quantity: 5n, kind: 'transfer' });
    expect(engine.stats.fetched).toBe(depth + 1);
    const before = client.calls.getTransaction;
    expect((await engine.colorOutput(id(depth - 7), 1)).quantity).toBe(5n);
    expect(client.calls.getTransaction).toBe(before);
    await expect(new ColoringEngine({ source: client, maxFetches: 100 }).colorOutput(id(depth), 1)).rejects.toThrow(
      `Coloring ${id(depth)} needs more than 100 transaction lookups`,
    );
  });
});
