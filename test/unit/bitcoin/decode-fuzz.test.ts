import { readFileSync } from 'node:fs';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { RawTx } from '@scure/btc-signer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readBlkRecords } from '../../../src/bitcoin/blk.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { encodeBlock, encodeTx, type TxData } from '../../../src/bitcoin/encode.js';
import { bytesToHex, equalBytes } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';
import { readFixtureBlock } from './fixture-blocks.js';

/** Decodes and touches every lazily built field; returns the re-encoding. */
function decodeFully(bytes: Uint8Array): Uint8Array {
  const block = decodeBlock(bytes);
  for (const tx of block.txs) {
    void tx.txid;
    void tx.wtxid;
    for (const input of tx.inputs) void input.witness;
    void tx.outputs;
  }
  return encodeBlock(block);
}

/** Runs `fn`: it may succeed or throw a ParseError, nothing else. Returns whether it succeeded. */
function onlyParseErrors(fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch (e) {
    if ((e as Error).name !== 'ParseError') throw e;
    return false;
  }
}

/** One edit of a byte string: overwrite, cut, insert or delete at a position. */
type Mutation = { kind: 'set' | 'truncate' | 'insert' | 'delete'; at: number; bytes?: Uint8Array };

describeFixtures('fuzzing the decoder with mutations of real blocks', () => {
  const chain = readBlkRecords(new Uint8Array(readFileSync(fixturePath('mainnet', 'chain', 'mainnet_blk_h000000-000299.dat'))), 'main');
  const seeds = [
    readFixtureBlock('mainnet_h482683.raw'),
    readFixtureBlock('testnet3_h924634.raw'),
    readFixtureBlock('mainnet_h169482.raw'),
    chain[170]!.block.slice(),
  ];

  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    // overwrite bytes
    fc.record({ kind: fc.constant('set' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 9 }) }),
    // a huge compact size anywhere
    fc.record({
      kind: fc.constant('set' as const),
      at: fc.nat(),
      bytes: fc.constantFrom(
        new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        new Uint8Array([0xfe, 0xff, 0xff, 0xff, 0x01]),
        new Uint8Array([0xfd, 0xff, 0xff]),
        new Uint8Array([0x00, 0x01]),
      ),
    }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  );

  function mutate(seed: Uint8Array, steps: readonly Mutation[]): Uint8Array {
    let b = seed.slice();
    for (const m of steps) {
      const at = m.at % (b.length + 1);
      if (m.kind === 'set') {
        const c = b.slice();
        c.set(m.bytes!.subarray(0, Math.max(0, b.length - at)), Math.min(at, b.length));
        b = c;
      } else if (m.kind === 'truncate') b = b.slice(0, at);
      else if (m.kind === 'insert') b = new Uint8Array([...b.subarray(0, at), ...m.bytes!, ...b.subarray(at)]);
      else b = new Uint8Array([...b.subarray(0, at), ...b.subarray(at + m.bytes!.length)]);
    }
    return b;
  }

  it('throws only ParseErrors, and what decodes re-encodes to the same bytes', () => {
    let decoded = 0;
    let rejected = 0;
    fc.assert(
      fc.property(fc.nat(seeds.length - 1), fc.array(mutation, { minLength: 1, maxLength: 4 }), (seedIndex, steps) => {
        const bytes = mutate(seeds[seedIndex]!, steps);
        let again: Uint8Array | undefined;
        if (onlyParseErrors(() => (again = decodeFully(bytes)))) {
          expect(equalBytes(again!, bytes)).toBe(true);
          decoded++;
        } else rejected++;
        // The same bytes as a lone transaction.
        onlyParseErrors(() => {
          const tx = decodeTx(bytes);
          expect(equalBytes(encodeTx(tx), bytes)).toBe(true);
        });
      }),
      { numRuns: 400 },
    );
    // Both outcomes occur: edits inside scripts keep a block decodable, most others do not.
    expect(rejected).toBeGreaterThan(0);
    expect(decoded).toBeGreaterThan(0);
    expect(decoded + rejected).toBe(400);
  });

  it('rejects every truncation of a segwit block with a ParseError', () => {
    const seed = seeds[1]!;
    for (let n = 0; n < seed.length; n += 7) expect(onlyParseErrors(() => decodeFully(seed.subarray(0, n)))).toBe(false);
  });

  it('survives random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        onlyParseErrors(() => decodeFully(bytes));
        onlyParseErrors(() => decodeTx(bytes));
      }),
      { numRuns: 500 },
    );
  });
});

describe('random valid transactions', () => {
  const bytes = (max: number) => fc.uint8Array({ maxLength: max });
  const u32 = fc.integer({ min: 0, max: 0xffffffff });
  const txArb: fc.Arbitrary<TxData> = fc.record({
    version: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
    inputs: fc.array(
      fc.record({
        prevTxid: fc.uint8Array({ minLength: 32, maxLength: 32 }),
        vout: u32,
        scriptSig: bytes(300),
        sequence: u32,
        witness: fc.array(bytes(90), { maxLength: 4 }),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    outputs: fc.array(fc.record({ value: fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }), script: bytes(260) }), { maxLength: 5 }),
    locktime: u32,
  });

  it('round-trip through encodeTx and decodeTx, and agree with @scure/btc-signer and @noble', () => {
    fc.assert(
      fc.property(txArb, (data) => {
        const encoded = encodeTx(data);
        const tx = decodeTx(encoded);
        expect(equalBytes(encodeTx(tx), encoded)).toBe(true);
        expect(tx.version).toBe(data.version);
        expect(tx.locktime).toBe(data.locktime);
        expect(
          tx.inputs.map((i) => [bytesToHex(i.prevTxid), i.vout, bytesToHex(i.scriptSig), i.sequence, i.witness.map(bytesToHex)]),
        ).toEqual(
          data.inputs.map((i) => [
            bytesToHex(i.prevTxid),
            i.vout,
            bytesToHex(i.scriptSig),
            i.sequence,
            tx.hasWitness ? (i.witness ?? []).map(bytesToHex) : [],
          ]),
        );
        expect(tx.outputs.map((o) => [o.value, bytesToHex(o.script)])).toEqual(
          data.outputs.map((o) => [BigInt.asIntN(64, o.value), bytesToHex(o.script)]),
        );
        const legacy = encodeTx(data, { witness: false });
        expect(bytesToHex(tx.txid)).toBe(bytesToHex(nobleSha256(nobleSha256(legacy))));
        expect(bytesToHex(tx.wtxid)).toBe(bytesToHex(nobleSha256(nobleSha256(encoded))));
        expect(tx.baseSize).toBe(legacy.length);
        const raw = RawTx.decode(encoded);
        expect(raw.outputs.map((o) => o.script.length)).toEqual(data.outputs.map((o) => o.script.length));
        expect(raw.inputs.length).toBe(data.inputs.length);
      }),
      { numRuns: 300 },
    );
  });
});
