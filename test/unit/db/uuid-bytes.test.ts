/**
 * writeUuidBytes (src/db/uuid-bytes.ts), the writer's hand-written uuid parser, against Node's
 * own hex decoding of the same text without its dashes: random keys in either case, and every
 * text that is not an 8-4-4-4-12 uuid refused; uuidHead against the first 4 of those bytes.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { uuidHead, writeUuidBytes } from '../../../src/db/uuid-bytes.js';

const viaBuffer = (text: string) => Buffer.from(text.replace(/-/g, ''), 'hex');

it('writes the same 16 bytes as Buffer.from(hex), at any offset, in either case', () => {
  const buf = Buffer.alloc(40);
  for (let i = 0; i < 2_000; i++) {
    const u = i % 3 === 0 ? randomUUID().toUpperCase() : randomUUID();
    const at = i % 24;
    buf.fill(0xaa);
    expect(writeUuidBytes(buf, at, u)).toBe(true);
    expect(buf.subarray(at, at + 16)).toEqual(viaBuffer(u));
    // nothing outside the 16 bytes
    expect(buf.subarray(0, at).every((b) => b === 0xaa)).toBe(true);
    expect(buf.subarray(at + 16).every((b) => b === 0xaa)).toBe(true);
  }
});

it('refuses what is not an 8-4-4-4-12 uuid', () => {
  const u = randomUUID();
  const bad = [
    '',
    u.replace(/-/g, ''),
    `{${u}}`,
    u.slice(0, 35),
    `${u}0`,
    `g${u.slice(1)}`,
    `${u.slice(0, 35)}x`,
    `${u.slice(0, 8)}+${u.slice(9)}`,
    `${u.slice(0, 23)}_${u.slice(24)}`,
    `${u.slice(0, 10)}é${u.slice(11)}`,
  ];
  for (const text of bad) expect(writeUuidBytes(new Uint8Array(16), 0, text), text).toBe(false);
});

it('uuidHead is the first 4 bytes as a big-endian number, in either case; -1 for a non-hex head', () => {
  for (let i = 0; i < 2_000; i++) {
    const u = i % 3 === 0 ? randomUUID().toUpperCase() : randomUUID();
    expect(uuidHead(u)).toBe(viaBuffer(u).readUInt32BE(0));
  }
  expect(uuidHead('ffffffff-0000-0000-0000-000000000000')).toBe(0xffffffff);
  expect(uuidHead('00000000-ffff-ffff-ffff-ffffffffffff')).toBe(0);
  for (const text of ['', 'abc', 'g0000000-0000-0000-0000-000000000000', '0000000é-0000-0000-0000-000000000000', '-0000000'])
    expect(uuidHead(text), text).toBe(-1);
});
