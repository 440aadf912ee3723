import { describe, expect, it } from 'vitest';
import { encodeBlock, encodeHeader, encodeTx, type TxData } from '../../../src/bitcoin/encode.js';
import { bytesToHex, hashToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';

const tx: TxData = {
  version: 2,
  inputs: [
    {
      prevTxid: new Uint8Array(32).fill(0x11),
      vout: 1,
      scriptSig: new Uint8Array(0),
      sequence: 0xfffffffd,
      witness: [hexToBytes('aa'), new Uint8Array(0)],
    },
  ],
  outputs: [{ value: 1000n, script: hexToBytes('0014' + '22'.repeat(20)) }],
  locktime: 500,
};

describe('encodeTx', () => {
  it('writes the BIP144 form when a witness is present and the legacy form on request', () => {
    const full = bytesToHex(encodeTx(tx));
    expect(full.startsWith('020000000001')).toBe(true);
    const legacy = encodeTx(tx, { witness: false });
    expect(bytesToHex(legacy).startsWith('0200000001')).toBe(true);
    const decoded = decodeTx(hexToBytes(full));
    expect(hashToHex(decoded.txid)).toBe(hashToHex(decodeTx(legacy).txid));
    expect(decoded.inputs[0]!.witness.map(bytesToHex)).toEqual(['aa', '']);
    expect(decoded.outputs[0]!.value).toBe(1000n);
  });

  it('writes the legacy form when every witness is empty or absent', () => {
    const noWitness = { ...tx, inputs: [{ ...tx.inputs[0]!, witness: [] }] };
    expect(bytesToHex(encodeTx(noWitness))).toBe(bytesToHex(encodeTx(tx, { witness: false })));
  });

  it('uses 3-, 5-byte compact sizes where needed', () => {
    const big = { ...tx, outputs: [{ value: 0n, script: new Uint8Array(300) }] };
    const back = decodeTx(encodeTx(big));
    expect(back.outputs[0]!.script.length).toBe(300);
    const huge = { ...tx, outputs: [{ value: 0n, script: new Uint8Array(70_000) }] };
    expect(decodeTx(encodeTx(huge)).outputs[0]!.script.length).toBe(70_000);
  });

  it('rejects out-of-range fields with exact messages', () => {
    expect(() => encodeTx({ ...tx, locktime: -1 })).toThrow(new RangeError('locktime must be an integer in [0, 2^32), got -1'));
    expect(() => encodeTx({ ...tx, version: 2 ** 32 })).toThrow(new RangeError('version must be a 32-bit integer, got 4294967296'));
    expect(() => encodeTx({ ...tx, outputs: [{ value: 1n << 64n, script: new Uint8Array(0) }] })).toThrow(
      new RangeError('output 0 value must be a bigint in [-2^63, 2^64)'),
    );
    expect(() => encodeTx({ ...tx, outputs: [{ value: 5 as unknown as bigint, script: new Uint8Array(0) }] })).toThrow(
      new RangeError('output 0 value must be a bigint in [-2^63, 2^64)'),
    );
    expect(() => encodeTx({ ...tx, inputs: [{ ...tx.inputs[0]!, prevTxid: new Uint8Array(31) }] })).toThrow(
      new RangeError('input 0 prevTxid must be 32 bytes'),
    );
    expect(() => encodeTx({ ...tx, inputs: [{ ...tx.inputs[0]!, vout: 1.5 }] })).toThrow(
      new RangeError('input 0 vout must be an integer in [0, 2^32), got 1.5'),
    );
  });
});

describe('encodeBlock / encodeHeader', () => {
  it('builds a block that decodes back to the same header and transactions', () => {
    const header = {
      version: 0x20000000,
      prevHash: new Uint8Array(32).fill(1),
      merkleRoot: new Uint8Array(32).fill(2),
      time: 1_700_000_000,
      bits: 0x207fffff,
      nonce: 7,
    };
    expect(encodeHeader(header).length).toBe(80);
    const bytes = encodeBlock({ header, txs: [tx, tx] });
    const block = decodeBlock(bytes);
    expect(block.header.version).toBe(0x20000000);
    expect(block.header.time).toBe(1_700_000_000);
    expect(block.txs.length).toBe(2);
    expect(block.strippedSize).toBe(encodeBlock({ header, txs: [tx, tx] }, { witness: false }).length);
    expect(() => encodeHeader({ ...header, nonce: -1 })).toThrow(new RangeError('nonce must be an integer in [0, 2^32), got -1'));
  });
});
