import { describe, expect, it } from 'vitest';
import { hash } from 'node:crypto';
import { outTagOf, tagIsScript, tagKeptUnder, tagPaysKey, tagPrefix, type OutTag } from '../../../src/db/out-tags.js';
import { addressKey } from '../../../src/db/address-key.js';
import {
  decodeOut,
  decodeOutTag,
  decodeOutTags,
  decodeOuts,
  decodeTaggedOuts,
  encodeOutTags,
  encodeOuts,
  outCount,
  PackedWriter,
} from '../../../src/db/packed.js';
import { hash160 } from '../../../src/bitcoin/hash.js';
import { multisigScript, nullDataScript, p2pkhScript, p2pkScript, witnessScript } from '../../../src/bitcoin/script.js';

const sha = (s: Uint8Array) => hash('sha256', s, 'buffer');
// (two valid compressed public keys: the generator point and 2G)
const key1 = Buffer.from('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex');
const key2 = Buffer.from('02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5', 'hex');
const p2pkh1 = p2pkhScript(hash160(key1));
const p2pk1 = p2pkScript(key1);
const bare = multisigScript(1, [key1, key2]);
const p2wpkh = witnessScript(0, new Uint8Array(20).fill(7));

describe('output tags', () => {
  it('names a canonical script by its own hash, which is its address key', () => {
    const t = outTagOf(p2wpkh);
    expect(tagIsScript(t, tagPrefix(sha(p2wpkh)))).toBe(true);
    expect(tagIsScript(t, tagPrefix(sha(p2pkh1)))).toBe(false);
    expect(tagKeptUnder(t, tagPrefix(addressKey(p2wpkh)))).toBe(true);
    expect(tagPaysKey(t)).toBe(tagPrefix(addressKey(p2wpkh)));
  });

  it('keeps a P2PK output under its P2PKH key, apart from the P2PKH script', () => {
    const t = outTagOf(p2pk1);
    expect(tagIsScript(t, tagPrefix(sha(p2pk1)))).toBe(true);
    expect(tagIsScript(t, tagPrefix(sha(p2pkh1)))).toBe(false);
    expect(tagKeptUnder(t, tagPrefix(addressKey(p2pkh1)))).toBe(true);
    expect(tagKeptUnder(t, tagPrefix(sha(p2pk1)))).toBe(false);
    expect(tagPaysKey(t)).toBe(tagPrefix(addressKey(p2pkh1)));
    expect(t.multisig).toBe(false);
  });

  it('keeps a bare multisig under each key, paying none', () => {
    const t = outTagOf(bare);
    expect(t.multisig).toBe(true);
    expect(tagIsScript(t, tagPrefix(sha(bare)))).toBe(true);
    expect(tagKeptUnder(t, tagPrefix(addressKey(p2pkh1)))).toBe(true);
    expect(tagKeptUnder(t, tagPrefix(addressKey(p2pkhScript(hash160(key2)))))).toBe(true);
    expect(tagPaysKey(t)).toBeNull();
  });

  it('keeps nothing of an OP_RETURN output but an Open Assets marker whole', () => {
    const plain = outTagOf(nullDataScript(Buffer.from('hello')));
    expect(plain.own).toBeNull();
    expect(plain.script).toBeNull();
    expect(tagPaysKey(plain)).toBeNull();
    const marker = nullDataScript(Buffer.from('4f410100010100', 'hex'));
    expect(outTagOf(marker).script).toEqual(marker);
  });

  it('reads the tags of packed outputs, one or all', () => {
    const packed = encodeOuts([
      { value: 5n, script: p2pk1 },
      { value: 7n, script: p2wpkh },
    ]);
    expect(decodeOutTags(packed).map((o) => [o.value, tagPaysKey(o.tag)])).toEqual([
      [5n, tagPrefix(addressKey(p2pkh1))],
      [7n, tagPrefix(addressKey(p2wpkh))],
    ]);
    expect(decodeOutTag(packed, 1)?.value).toBe(7n);
    expect(decodeOutTag(packed, 2)).toBeUndefined();
  });

  it('packs tags in the tagged outs format and reads them back, in a few bytes', () => {
    const scripts = [p2wpkh, p2pk1, bare, nullDataScript(Buffer.from('hello')), nullDataScript(Buffer.from('4f410100010100', 'hex'))];
    const outs = scripts.map((script, i) => ({ value: BigInt(i * 1000), script }));
    const plain = (o: { value: bigint; tag: OutTag }) => ({ ...o, tag: { ...o.tag, script: o.tag.script && Array.from(o.tag.script) } });
    const back = decodeTaggedOuts(encodeOutTags(outs)).map(plain);
    expect(back).toEqual(scripts.map((s, i) => plain({ value: BigInt(i * 1000), tag: outTagOf(s) })));
    const one = new PackedWriter();
    one.packOutTag(12_345_678n, outTagOf(p2wpkh));
    expect(one.len).toBe(4 + 1 + 8);
    expect(encodeOutTags([{ value: 12_345_678n, script: p2wpkh }]).length).toBe(2 + 4 + 1 + 8);
    expect(() => decodeTaggedOuts(Uint8Array.of(0x80, 0, 1, (3 << 2) | 2, 1, 2, 3))).toThrow('packed tag of 3 bytes');
    expect(() => decodeTaggedOuts(encodeOuts(outs))).toThrow('not in the tagged form');
  });

  it('reads tags, one or all, and counts outputs alike from rows of either form; scripts only from the script form', () => {
    // (values whose first LEB128 byte is 0x80 in the script form: 128 is 0x80 0x01)
    const scripts = [p2pk1, p2wpkh, bare, nullDataScript(Buffer.from('hello')), nullDataScript(Buffer.from('4f410100010100', 'hex'))];
    for (const first of [0n, 128n, 1n << 40n]) {
      const outs = scripts.map((script, i) => ({ value: i === 0 ? first : BigInt(i), script }));
      const plain = (o: { value: bigint; tag: OutTag } | undefined) =>
        o && { ...o, tag: { ...o.tag, script: o.tag.script && Array.from(o.tag.script) } };
      const [scriptForm, tagged] = [encodeOuts(outs), encodeOutTags(outs)];
      expect(decodeOutTags(tagged).map(plain)).toEqual(decodeOutTags(scriptForm).map(plain));
      for (let v = 0; v <= outs.length; v++) expect(plain(decodeOutTag(tagged, v))).toEqual(plain(decodeOutTag(scriptForm, v)));
      expect([outCount(scriptForm), outCount(tagged)]).toEqual([outs.length, outs.length]);
      expect(decodeOuts(scriptForm)).toHaveLength(outs.length);
      expect(() => decodeOuts(tagged)).toThrow('tagged form hold no scripts');
      expect(() => decodeOut(tagged, 0)).toThrow('tagged form hold no scripts');
    }
  });
});
