import { describe, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { encodeTx } from '../../../src/bitcoin/encode.js';
import { bytesToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { ParseError } from '../../../src/bitcoin/wire.js';

const OUTPOINT = '11'.repeat(32) + '00000000';
/** Version 1, one input (empty scriptSig), one OP_TRUE output of 1 sat, locktime 0. */
const LEGACY = '01000000' + '01' + OUTPOINT + '00' + 'ffffffff' + '01' + '0100000000000000' + '0151' + '00000000';
/** The same input with a two-item witness, in BIP144 form. */
const SEGWIT =
  '01000000' + '0001' + '01' + OUTPOINT + '00' + 'ffffffff' + '01' + '0100000000000000' + '0151' + '02' + '01aa' + '00' + '00000000';
const HEADER = '01000000' + '00'.repeat(32) + '22'.repeat(32) + '29ab5f49' + 'ffff001d' + '1dac2b7c';

function parseError(fn: () => unknown): ParseError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ParseError);
    expect(e).toBeInstanceOf(RangeError);
    return e as ParseError;
  }
  throw new Error('expected a ParseError');
}

describe('decodeTx on malformed input', () => {
  it('decodes the well-formed samples (the baseline of the cases below)', () => {
    expect(decodeTx(hexToBytes(LEGACY)).inputs.length).toBe(1);
    const tx = decodeTx(hexToBytes(SEGWIT));
    expect(tx.inputs[0]!.witness.map(bytesToHex)).toEqual(['aa', '']);
    expect(bytesToHex(encodeTx(tx))).toBe(SEGWIT);
  });

  it('rejects every truncation of a legacy and a segwit transaction', () => {
    for (const hex of [LEGACY, SEGWIT]) {
      const full = hexToBytes(hex);
      for (let n = 0; n < full.length; n++) {
        const e = parseError(() => decodeTx(full.subarray(0, n)));
        expect(e.message).toMatch(/^(truncated |input count |output count |witness item count )/);
        expect(e.offset).toBeLessThanOrEqual(n);
      }
    }
  });

  it('names what is truncated and where', () => {
    expect(parseError(() => decodeTx(new Uint8Array(0))).message).toBe('truncated transaction version: needs 4 bytes at offset 0, 0 left');
    const noLocktime = hexToBytes(LEGACY.slice(0, -8));
    expect(parseError(() => decodeTx(noLocktime)).message).toBe(
      `truncated transaction locktime: needs 4 bytes at offset ${noLocktime.length}, 0 left`,
    );
    const shortScript = hexToBytes(LEGACY.replace('0151' + '00000000', '0651' + '00000000'));
    expect(parseError(() => decodeTx(shortScript)).message).toBe('truncated output script: needs 6 bytes at offset 56, 5 left');
  });

  it('rejects trailing data', () => {
    const e = parseError(() => decodeTx(hexToBytes(LEGACY + '00')));
    expect(e.message).toBe('1 byte of trailing data after the transaction at offset 61');
    expect(e.offset).toBe(61);
  });

  it('bounds counts by the bytes left instead of allocating for them', () => {
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'fdffff' + '00'.repeat(50)))).message).toBe(
      'input count 65535 needs at least 2686935 bytes at offset 7, 50 left',
    );
    const manyOutputs = LEGACY.replace('ffffffff' + '01' + '01000000', 'ffffffff' + 'fe00000002' + '01000000');
    expect(parseError(() => decodeTx(hexToBytes(manyOutputs))).message).toBe(
      'output count 33554432 needs at least 301989888 bytes at offset 51, 14 left',
    );
    const manyItems = SEGWIT.replace('02' + '01aa' + '00' + '00000000', 'fd0001' + '01aa' + '00' + '00000000');
    expect(parseError(() => decodeTx(hexToBytes(manyItems))).message).toBe(
      'witness item count 256 needs at least 256 bytes at offset 62, 7 left',
    );
  });

  it('rejects non-canonical and oversized compact sizes as Core does', () => {
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'fd0100' + '00'.repeat(60)))).message).toBe(
      'non-canonical compact size for input count at offset 4',
    );
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'fe00010000' + '00'.repeat(60)))).message).toBe(
      'non-canonical compact size for input count at offset 4',
    );
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'ff0000000001000000' + '00'.repeat(60)))).message).toBe(
      'compact size for input count too large at offset 4',
    );
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'ff0000000000000000' + '00'.repeat(60)))).message).toBe(
      'non-canonical compact size for input count at offset 4',
    );
    expect(parseError(() => decodeTx(hexToBytes('01000000' + 'fe01000002' + '00'.repeat(60)))).message).toBe(
      'compact size for input count too large at offset 4',
    );
  });

  it('rejects a witness record whose stacks are all empty, and unknown flags', () => {
    const empty = SEGWIT.replace('02' + '01aa' + '00' + '00000000', '00' + '00000000');
    expect(parseError(() => decodeTx(hexToBytes(empty))).message).toBe(
      'superfluous witness record (every witness stack is empty) at offset 59',
    );
    const flag2 = SEGWIT.replace('0001', '0002');
    expect(parseError(() => decodeTx(hexToBytes(flag2))).message).toBe('unknown transaction optional data (flags 0x02) at offset 5');
    const flag3 = SEGWIT.replace('0001', '0003');
    expect(parseError(() => decodeTx(hexToBytes(flag3))).message).toBe('unknown transaction optional data (flags 0x03) at offset 5');
  });

  it('reads the zero-input, zero-flag form as Core does (no inputs, no outputs)', () => {
    const tx = decodeTx(hexToBytes('01000000' + '00' + '00' + '00000000'));
    expect(tx.inputs).toEqual([]);
    expect(tx.outputs).toEqual([]);
    expect(bytesToHex(encodeTx(tx))).toBe('01000000000000000000');
  });

  it('keeps amounts as signed 64-bit like CAmount', () => {
    const neg = decodeTx(hexToBytes(LEGACY.replace('0100000000000000', 'ffffffffffffffff')));
    expect(neg.outputs[0]!.value).toBe(-1n);
    const value = (le: string) => decodeTx(hexToBytes(LEGACY.replace('0100000000000000', le))).outputs[0]!.value;
    expect(value('ffffffffffff1f00')).toBe((1n << 53n) - 1n);
    expect(value('0000000000002000')).toBe(1n << 53n);
    expect(value('0000000000000020')).toBe(1n << 61n);
    expect(value('0040075af0750700')).toBe(21_000_000n * 100_000_000n);
    expect(bytesToHex(encodeTx(neg))).toBe(LEGACY.replace('0100000000000000', 'ffffffffffffffff'));
  });

  it('throws a TypeError for something that is not bytes', () => {
    expect(() => decodeTx('00' as unknown as Uint8Array)).toThrow(new TypeError('transaction must be a Uint8Array'));
    expect(() => decodeBlock(null as unknown as Uint8Array)).toThrow(new TypeError('block must be a Uint8Array'));
  });
});

describe('decodeBlock on malformed input', () => {
  const block = HEADER + '01' + LEGACY;

  it('decodes the well-formed sample', () => {
    expect(decodeBlock(hexToBytes(block)).txs.length).toBe(1);
  });

  it('rejects a short header, a missing count, an oversized count and trailing data', () => {
    expect(parseError(() => decodeBlock(hexToBytes(HEADER.slice(0, 100)))).message).toBe(
      'truncated block header: needs 80 bytes at offset 0, 50 left',
    );
    expect(parseError(() => decodeBlock(hexToBytes(HEADER))).message).toBe(
      'truncated transaction count: needs 1 byte at offset 80, 0 left',
    );
    expect(parseError(() => decodeBlock(hexToBytes(HEADER + 'fd0010' + LEGACY))).message).toBe(
      'transaction count 4096 needs at least 40960 bytes at offset 83, 61 left',
    );
    const e = parseError(() => decodeBlock(hexToBytes(block + 'abcd')));
    expect(e.message).toBe('2 bytes of trailing data after the last transaction at offset 142');
    expect(parseError(() => decodeBlock(hexToBytes(HEADER + '02' + LEGACY))).message).toBe(
      'truncated transaction version: needs 4 bytes at offset 142, 0 left',
    );
  });
});
