import { hex } from '@scure/base';
import { describe, expect, it } from 'vitest';
import {
  ADDRESS_TYPES,
  Key,
  addressFromPublicKey,
  addressToScript,
  decodeWif,
  encodeWif,
  getPublicKey,
  isValidAddress,
  randomPrivateKey,
  scriptToAddress,
} from '../../../client/keys.js';
import { NETWORK_NAMES, getNetwork, type NetworkName } from '../../../client/network.js';
import { describeFixtures, readFixtureJson } from '../../support/fixtures.js';

type ValidVector = [string, string, { chain: NetworkName; isPrivkey: boolean; isCompressed?: boolean; tryCaseFlip?: boolean }];

function flipCase(s: string): string {
  return [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
}

describeFixtures('Bitcoin Core key_io vectors', () => {
  it('every valid address decodes to its scriptPubKey and encodes back; every valid WIF round-trips', async () => {
    const vectors = await readFixtureJson<ValidVector[]>('mainnet', 'vectors', 'core_key_io_valid.json');
    expect(vectors.length).toBe(70);
    let addresses = 0;
    let keys = 0;
    for (const [text, payload, meta] of vectors) {
      const network = meta.chain;
      if (meta.isPrivkey) {
        const d = decodeWif(text, network);
        expect(hex.encode(d.privateKey)).toBe(payload);
        expect(d.compressed).toBe(meta.isCompressed);
        expect(encodeWif(d.privateKey, network, d.compressed)).toBe(text);
        // A private key is not an address.
        expect(isValidAddress(text, network)).toBe(false);
        keys++;
      } else {
        expect(hex.encode(addressToScript(text, network))).toBe(payload);
        expect(scriptToAddress(payload, network)).toBe(text);
        if (meta.tryCaseFlip) expect(hex.encode(addressToScript(flipCase(text), network))).toBe(payload);
        // An address is not a private key.
        expect(() => decodeWif(text, network)).toThrow(TypeError);
        addresses++;
      }
    }
    expect(keys).toBe(16);
    expect(addresses).toBe(54);
  });

  it('no invalid string is an address or a private key on any network', async () => {
    const vectors = await readFixtureJson<[string][]>('mainnet', 'vectors', 'core_key_io_invalid.json');
    expect(vectors.length).toBe(70);
    for (const [text] of vectors) {
      for (const network of NETWORK_NAMES) {
        expect(isValidAddress(text, network), `${text} on ${network}`).toBe(false);
        expect(() => decodeWif(text, network), `${text} as WIF on ${network}`).toThrow(TypeError);
      }
    }
  });

  it('an address of one network is refused on a network with other prefixes', async () => {
    const vectors = await readFixtureJson<ValidVector[]>('mainnet', 'vectors', 'core_key_io_valid.json');
    for (const [text, , meta] of vectors.filter((v) => !v[2].isPrivkey)) {
      const other: NetworkName = meta.chain === 'main' ? 'regtest' : 'main';
      expect(isValidAddress(text, other), `${text} on ${other}`).toBe(false);
    }
  });
});

describe('keys', () => {
  it('random keys are distinct, valid, and round-trip through WIF on every network', () => {
    const seen = new Set<string>();
    for (const network of NETWORK_NAMES) {
      const k = randomPrivateKey();
      expect(k.length).toBe(32);
      seen.add(hex.encode(k));
      const wif = encodeWif(k, network);
      expect(wif[0]).toMatch(network === 'main' ? /[KL]/ : /c/);
      expect(hex.encode(decodeWif(wif, network).privateKey)).toBe(hex.encode(k));
    }
    expect(seen.size).toBe(NETWORK_NAMES.length);
  });

  it('refuses a WIF of another network and a key out of range', () => {
    const k = randomPrivateKey();
    expect(() => decodeWif(encodeWif(k, 'main'), 'regtest')).toThrow('Invalid WIF: the key is for another network than regtest');
    expect(() => encodeWif(new Uint8Array(32), 'main')).toThrow('Private key is not in the range 1..n-1 of secp256k1');
    expect(() => encodeWif(new Uint8Array(31), 'main')).toThrow('Private key must be 32 bytes');
  });

  it('derives the spec example address and each address type with the right prefix per network', () => {
    // The Open Assets specification's example key and its P2PKH address.
    const priv = hex.decode('18e14a7b6a307f426a94f8114701e7c8e774e7f9a47e2c2035db29a206321725');
    expect(addressFromPublicKey(getPublicKey(priv, false), 'p2pkh', 'main')).toBe('16UwLL9Risc3QfPqBUvKofHmBQ7wMtjvM');
    const prefixes: Record<NetworkName, Record<string, RegExp>> = {
      main: { p2pkh: /^1/, 'p2sh-p2wpkh': /^3/, p2wpkh: /^bc1q/, p2tr: /^bc1p/ },
      test: { p2pkh: /^[mn]/, 'p2sh-p2wpkh': /^2/, p2wpkh: /^tb1q/, p2tr: /^tb1p/ },
      testnet4: { p2pkh: /^[mn]/, 'p2sh-p2wpkh': /^2/, p2wpkh: /^tb1q/, p2tr: /^tb1p/ },
      signet: { p2pkh: /^[mn]/, 'p2sh-p2wpkh': /^2/, p2wpkh: /^tb1q/, p2tr: /^tb1p/ },
      regtest: { p2pkh: /^[mn]/, 'p2sh-p2wpkh': /^2/, p2wpkh: /^bcrt1q/, p2tr: /^bcrt1p/ },
    };
    for (const network of NETWORK_NAMES) {
      const key = new Key(priv, network);
      for (const type of ADDRESS_TYPES) {
        const a = key.address(type);
        expect(a).toMatch(prefixes[network][type]!);
        expect(scriptToAddress(addressToScript(a, network), network)).toBe(a);
      }
    }
  });

  it('P2TR addresses match the BIP341 key-path-only vectors (BIP86 tweak)', async () => {
    const v = await readFixtureJson<{
      scriptPubKey: { given: { internalPubkey: string; scriptTree: unknown }; expected: { bip350Address: string } }[];
    }>('mainnet', 'vectors', 'core_bip341_wallet_vectors.json');
    const keyOnly = v.scriptPubKey.filter((c) => c.given.scriptTree === null);
    expect(keyOnly.length).toBeGreaterThan(0);
    for (const c of keyOnly) {
      expect(addressFromPublicKey(hex.decode(c.given.internalPubkey), 'p2tr', 'main')).toBe(c.expected.bip350Address);
    }
  });

  it('Key.fromWif keeps compression and picks the test network named', () => {
    const key = Key.random('regtest');
    const again = Key.fromWif(key.toWif(), 'regtest');
    expect(again.address('p2wpkh')).toBe(key.address('p2wpkh'));
    expect(Key.fromWif(key.toWif()).network.name).toBe('test');
    const uncompressed = new Key(key.privateKey, 'main', false);
    expect(uncompressed.publicKey.length).toBe(65);
    expect(() => uncompressed.address('p2wpkh')).toThrow('p2wpkh needs a compressed public key');
    expect(getNetwork('regtest').bech32).toBe('bcrt');
  });
});
