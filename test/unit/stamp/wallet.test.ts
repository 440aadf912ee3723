import { describe, expect, it } from 'vitest';
import { base58CheckEncode } from '../../../src/bitcoin/base58.js';
import { encodeWif } from '../../../src/bitcoin/wif.js';
import { decodeExtendedPrivateKey, deriveChild, parsePath, parseWalletDescriptor } from '../../../stamp/descriptor.js';
import { loadStampWallet } from '../../../stamp/wallet.js';

const ONE = new Uint8Array(32);
ONE[31] = 1;

// BIP32 test vector 1 (seed 000102030405060708090a0b0c0d0e0f).
const V1_M = 'xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi';
const V1_LEAF = 'xprvA41z7zogVVwxVSgdKUHDy1SKmdb533PjDz7J6N6mV6uS3ze1ai8FHa8kmHScGpWmj4WggLyQjgPie1rFSruoUihUZREPSL39UNdE3BBDu76';
const V1_0H = 'xprv9uHRZZhk6KAJC1avXpDAp4MDc3sQKNxDiPvvkX8Br5ngLNv1TxvUxt4cV1rGL5hj6KCesnDYUhd7oWgT11eZG7XnxHrnYeSvkzY7d2bhkJ7';

describe('stamping wallet from STAMP_WALLET_WIF', () => {
  it('the key 1 gives the well-known P2WPKH and P2PKH addresses; change goes to P2WPKH', () => {
    const w = loadStampWallet({ wif: encodeWif(ONE, 'main') }, 'main');
    expect(w.scripts.map((s) => s.address)).toEqual(['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', '1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH']);
    expect(w.change.type).toBe('p2wpkh');
    expect(w.typeOf(w.scripts[1]!.script)).toBe('p2pkh');
    expect(w.typeOf(new Uint8Array([0x6a]))).toBeUndefined();
    expect(new Set(w.addrKeys).size).toBe(2);
  });

  it('refuses an uncompressed key with a clear message', () => {
    expect(() => loadStampWallet({ wif: encodeWif(ONE, 'main', false) }, 'main')).toThrow(
      'STAMP_WALLET_WIF holds an uncompressed key: use a compressed-key WIF',
    );
  });

  it('refuses a WIF of another network, both sources at once, and none, without echoing the key', () => {
    const wif = encodeWif(ONE, 'main');
    expect(() => loadStampWallet({ wif }, 'regtest')).toThrow(/STAMP_WALLET_WIF is not usable on regtest: Invalid WIF: version 0x80/);
    expect(() => loadStampWallet({ wif, descriptor: `wpkh(${wif})` }, 'main')).toThrow(
      'set STAMP_WALLET_WIF or STAMP_WALLET_DESCRIPTOR, not both',
    );
    expect(() => loadStampWallet({}, 'main')).toThrow(/no key/);
    try {
      loadStampWallet({ wif: wif.slice(0, -1) + 'x' }, 'main');
    } catch (err) {
      expect((err as Error).message).not.toContain(wif.slice(0, 20));
    }
  });
});

describe('descriptor alternative (BIP32)', () => {
  it('derives BIP32 test vector 1 m/0H/1/2H/2/1000000000', () => {
    let k = decodeExtendedPrivateKey(V1_M, 'main');
    for (const i of parsePath("/0'/1/2h/2/1000000000")) k = deriveChild(k, i);
    const want = decodeExtendedPrivateKey(V1_LEAF, 'main');
    expect(Buffer.from(k.privateKey).toString('hex')).toBe(Buffer.from(want.privateKey).toString('hex'));
    expect(Buffer.from(k.chainCode).toString('hex')).toBe(Buffer.from(want.chainCode).toString('hex'));
  });

  it('wpkh(xprv/path) and pkh(WIF) give the key and the change type; origin and checksum are accepted', () => {
    const d = parseWalletDescriptor(`wpkh([d34db33f/84h/0h/0h]${V1_M}/0h)#abcdefgh`, 'main');
    expect(Buffer.from(d.privateKey).toString('hex')).toBe(Buffer.from(decodeExtendedPrivateKey(V1_0H, 'main').privateKey).toString('hex'));
    expect(d.changeType).toBe('p2wpkh');
    const p = parseWalletDescriptor(`pkh(${encodeWif(ONE, 'regtest')})`, 'regtest');
    expect(p.changeType).toBe('p2pkh');
    const w = loadStampWallet({ descriptor: `pkh(${encodeWif(ONE, 'main')})` }, 'main');
    expect(w.change.address).toBe('1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH');
    expect(w.scripts).toHaveLength(2);
  });

  it("refuses ranges, public keys, another network's version, other descriptor types", () => {
    expect(() => parseWalletDescriptor(`wpkh(${V1_M}/0/*)`, 'main')).toThrow('Ranged descriptors (*) are not supported: give a fixed path');
    expect(() => parseWalletDescriptor(`wpkh(${V1_M}/0)`, 'regtest')).toThrow(/is not a tprv/);
    expect(() => parseWalletDescriptor('tr(abc)', 'main')).toThrow('Invalid descriptor: expected wpkh(KEY) or pkh(KEY)');
    const xpubish = base58CheckEncode(new Uint8Array(78));
    expect(() => parseWalletDescriptor(`wpkh(${xpubish})`, 'main')).toThrow(/Invalid WIF/);
    expect(() =>
      parseWalletDescriptor(
        'wpkh(xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8)',
        'main',
      ),
    ).toThrow(/needs a private key/);
    expect(() => parseWalletDescriptor(`wpkh(${encodeWif(ONE, 'main', false)})`, 'main')).toThrow(
      'Invalid descriptor: wpkh() needs a compressed key',
    );
  });
});
