import { readFileSync } from 'node:fs';
import { base58, bech32, bech32m } from '@scure/base';
import { describe, expect, it } from 'vitest';
import {
  AddressError,
  addressToScript,
  decodeAddress,
  outputAddresses,
  pubkeyToP2pkhAddress,
  pubkeyToP2trAddress,
  pubkeyToP2wpkhAddress,
} from '../../../src/bitcoin/address.js';
import { base58CheckDecode, base58CheckEncode, base58Encode } from '../../../src/bitcoin/base58.js';
import { decodeBech32, wordsToBytes } from '../../../src/bitcoin/bech32.js';
import { bytesToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { NETWORK_NAMES, type NetworkName } from '../../../src/bitcoin/network.js';
import { decodeWif, encodeWif, publicKeyOf } from '../../../src/bitcoin/wif.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';

function vectors<T>(name: string): T {
  return JSON.parse(readFileSync(fixturePath('mainnet', 'vectors', name), 'utf8')) as T;
}

function flipCase(s: string): string {
  return [...s].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
}

/** Networks that share the address prefixes of `chain` (main is alone; the test networks share Base58 prefixes). */
function sameBase58(chain: NetworkName): NetworkName[] {
  return chain === 'main' ? ['main'] : ['test', 'testnet4', 'signet', 'regtest'];
}

/** Turns bitcoinjs script ASM (only the opcodes its address vectors use) into hex. */
function asmToHex(asm: string): string {
  const ops: Record<string, string> = {
    OP_DUP: '76',
    OP_HASH160: 'a9',
    OP_EQUALVERIFY: '88',
    OP_CHECKSIG: 'ac',
    OP_EQUAL: '87',
    OP_0: '00',
    OP_TRUE: '51',
    OP_RETURN: '6a',
    OP_CHECKMULTISIG: 'ae',
  };
  return asm
    .split(' ')
    .map((t) => {
      if (ops[t]) return ops[t];
      if (/^OP_([1-9]|1[0-6])$/.test(t)) return (0x50 + Number(t.slice(3))).toString(16);
      return (t.length / 2).toString(16).padStart(2, '0') + t;
    })
    .join('');
}

describeFixtures("Core's key_io vectors", () => {
  type Valid = [string, string, { chain: NetworkName; isPrivkey: boolean; isCompressed?: boolean; tryCaseFlip?: boolean }];
  const valid = vectors<Valid[]>('core_key_io_valid.json');
  const invalid = vectors<[string][]>('core_key_io_invalid.json');

  it('decodes and re-encodes every valid address and WIF key', () => {
    expect(valid.length).toBe(70);
    for (const [text, hex, meta] of valid) {
      if (meta.isPrivkey) {
        const key = decodeWif(text, meta.chain);
        expect(bytesToHex(key.privateKey)).toBe(hex);
        expect(key.compressed).toBe(meta.isCompressed);
        expect(encodeWif(key.privateKey, meta.chain, key.compressed)).toBe(text);
        expect(() => addressToScript(text, meta.chain)).toThrow(AddressError);
        continue;
      }
      expect(bytesToHex(addressToScript(text, meta.chain))).toBe(hex);
      expect(outputAddresses(hexToBytes(hex), meta.chain)).toEqual([text]);
      if (meta.tryCaseFlip) expect(bytesToHex(addressToScript(flipCase(text), meta.chain))).toBe(hex);
      expect(() => decodeWif(text, meta.chain)).toThrow(TypeError);
      // Not valid on networks with other prefixes.
      for (const other of NETWORK_NAMES) {
        const shares = text.startsWith('bcrt')
          ? other === 'regtest'
          : text.toLowerCase().startsWith('tb1')
            ? ['test', 'testnet4', 'signet'].includes(other)
            : text.toLowerCase().startsWith('bc1')
              ? other === 'main'
              : sameBase58(meta.chain).includes(other);
        if (!shares) expect(() => addressToScript(text, other)).toThrow(AddressError);
      }
    }
  });

  it('rejects every invalid string on every network, as an address and as a key', () => {
    expect(invalid.length).toBe(70);
    for (const [text] of invalid) {
      for (const network of NETWORK_NAMES) {
        expect(() => addressToScript(text, network), `${text} on ${network}`).toThrow(AddressError);
        expect(() => decodeWif(text, network), `${text} on ${network}`).toThrow(TypeError);
      }
    }
  });
});

describe('address error messages', () => {
  const cases: [string, NetworkName, string][] = [
    ['', 'main', 'Invalid address: empty'],
    ['1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMI', 'main', 'Invalid or unsupported Segwit (Bech32) or Base58 encoding.'],
    ['1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMJ', 'main', 'Invalid checksum or length of Base58 address (P2PKH or P2SH)'],
    [
      '1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH',
      'test',
      'Address is for another network: Base58 version 0x00 belongs to main, not test (expected 0x6f or 0xc4)',
    ],
    [
      'mrCDrCybB6J1vRfbwM5hemdJz73FwDBC8r',
      'main',
      'Address is for another network: Base58 version 0x6f belongs to test/testnet4/signet/regtest, not main (expected 0x00 or 0x05)',
    ],
    ['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', 'main', 'Invalid checksum'],
    ['bc1qw508d6qejxtdg4y5r3zarvaRY0c5xw7kv8f3t4', 'main', 'Invalid character or mixed case'],
    [
      'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
      'regtest',
      'Invalid or unsupported prefix for Segwit (Bech32) address (expected bcrt, got bc).',
    ],
    [
      'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4',
      'test',
      'Invalid or unsupported prefix for Segwit (Bech32) address (expected tb, got bc).',
    ],
    [
      'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7',
      'main',
      'Invalid or unsupported prefix for Segwit (Bech32) address (expected bc, got tb).',
    ],
    // A v1 program with a bech32 checksum, and a v0 program with a bech32m checksum (BIP350 vectors).
    ['bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd', 'main', 'Version 1+ witness address must use Bech32m checksum'],
    ['tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf', 'test', 'Version 1+ witness address must use Bech32m checksum'],
    ['bc1qr4e7xt0r5m8yg5dv4wlzp8u5w8v9vudxuy2ndc', 'main', 'Invalid checksum'],
    ['BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL', 'main', 'Version 1+ witness address must use Bech32m checksum'],
    ['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh', 'main', 'Version 0 witness address must use Bech32 checksum'],
    ['tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47', 'test', 'Version 0 witness address must use Bech32 checksum'],
    // BIP173 examples of v1+ programs carry a bech32 checksum, which BIP350 no longer accepts.
    ['bc1rw5uspcuh', 'main', 'Version 1+ witness address must use Bech32m checksum'],
    ['BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P', 'main', 'Invalid Bech32 v0 address program size (16 bytes), per BIP141'],
    // Made with @scure/base's bech32m encoder.
    [bech32m.encode('bc', [1, ...bech32m.toWords(new Uint8Array([0x75]))]), 'main', 'Invalid Bech32 address program size (1 byte)'],
    [bech32m.encode('bc', [2, ...bech32m.toWords(new Uint8Array(41))]), 'main', 'Invalid Bech32 address program size (41 bytes)'],
    [bech32m.encode('bc', [17, ...bech32m.toWords(new Uint8Array(32))]), 'main', 'Invalid Bech32 address witness version'],
    [
      bech32m.encode('bc', [1, ...bech32m.toWords(new Uint8Array(32)).map((w, i, a) => (i === a.length - 1 ? w | 1 : w))]),
      'main',
      'Invalid padding in Bech32 data section',
    ],
    [bech32.encode('tb', [0, ...bech32.toWords(new Uint8Array(20)), 0]), 'test', 'Invalid padding in Bech32 data section'],
    ['bc1gmk9yu', 'main', 'Empty Bech32 data section'],
    ['bc1', 'main', 'Invalid separator position'],
    ['bcrt1qzwmyj0z924g7fzs5yvnrkc43y76RVyr2lh5t4r', 'regtest', 'Invalid character or mixed case'],
  ];
  for (const [address, network, message] of cases) {
    it(`${address || '(empty)'} on ${network}: ${message}`, () => {
      let err: unknown;
      try {
        decodeAddress(address, network);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AddressError);
      expect((err as Error).message).toBe(message);
    });
  }
});

describeFixtures('bitcoinjs address vectors', () => {
  type Standard = { network: string; base58check?: string; bech32?: string; script: string };
  type BadAddress = { address: string; network?: unknown; paymentException?: string };
  const v = vectors<{
    standard: Standard[];
    invalid: { toOutputScript: BadAddress[]; fromOutputScript: { script: string; description?: string }[] };
  }>('address_script_bitcoinjs.json');
  const networkOf: Record<string, NetworkName> = { bitcoin: 'main', testnet: 'test', regtest: 'regtest' };

  it('maps every Bitcoin address to its script and back', () => {
    let checked = 0;
    for (const s of v.standard) {
      const network = networkOf[s.network];
      if (network === undefined) continue; // litecoin
      const address = s.base58check ?? s.bech32!;
      const hex = asmToHex(s.script);
      expect(bytesToHex(addressToScript(address, network))).toBe(hex);
      expect(outputAddresses(hexToBytes(hex), network)).toEqual([s.bech32 ? address.toLowerCase() : address]);
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('rejects the invalid addresses, and gives no address for the invalid scripts', () => {
    for (const c of v.invalid.toOutputScript) {
      // Custom network objects, and bitcoinjs's extra point checks on P2TR programs, which Core
      // (and so Blockwire) does not make: any 32-byte v1 program is a valid address.
      if (c.network !== undefined || c.paymentException !== undefined) continue;
      for (const network of ['main', 'test', 'regtest'] as const) expect(() => addressToScript(c.address, network)).toThrow(AddressError);
    }
    // bitcoinjs gives no address for P2PK and multisig; Blockwire indexes them under their keys'
    // P2PKH addresses, so only the others must be address-less here.
    for (const c of v.invalid.fromOutputScript) {
      const hex = asmToHex(c.script);
      if (hex.endsWith('ac') || hex.endsWith('ae')) continue;
      if (c.description === 'pubkey is not valid x coordinate') continue; // Core has no such check
      expect(outputAddresses(hexToBytes(hex), 'main'), c.script).toEqual([]);
    }
  });
});

describeFixtures('BIP341 scriptPubKey vectors', () => {
  it('gives each P2TR script its bech32m address and back', () => {
    type Case = { given: { internalPubkey: string; scriptTree: unknown }; expected: { scriptPubKey: string; bip350Address: string } };
    const v = vectors<{ scriptPubKey: Case[] }>('core_bip341_wallet_vectors.json');
    expect(v.scriptPubKey.length).toBe(7);
    for (const { given, expected } of v.scriptPubKey) {
      if (given.scriptTree === null) expect(pubkeyToP2trAddress(hexToBytes(given.internalPubkey), 'main')).toBe(expected.bip350Address);
      expect(outputAddresses(hexToBytes(expected.scriptPubKey), 'main')).toEqual([expected.bip350Address]);
      expect(bytesToHex(addressToScript(expected.bip350Address, 'main'))).toBe(expected.scriptPubKey);
      expect(decodeAddress(expected.bip350Address, 'main').type).toBe('witness_v1_taproot');
    }
  });
});

describeFixtures('Base58 and bech32 codecs', () => {
  it("passes Core's base58 vectors and agrees with @scure/base", () => {
    const v = vectors<[string, string][]>('core_base58_encode_decode.json');
    expect(v.length).toBe(21);
    for (const [hex, b58] of v) {
      expect(base58Encode(hexToBytes(hex))).toBe(b58);
      expect(bytesToHex(base58.decode(b58))).toBe(hex.toLowerCase());
    }
    for (let len = 0; len < 40; len++) {
      for (let k = 0; k < 20; k++) {
        const bytes = new Uint8Array(len).map((_, i) => (i < k % 4 ? 0 : (i * 37 + k * 101 + len) & 0xff));
        expect(base58Encode(bytes)).toBe(base58.encode(bytes));
      }
    }
  });

  it('round-trips Base58Check and reports bad encodings and checksums', () => {
    const payload = hexToBytes('00751e76e8199196d454941c45d1b3a323f1433bd6');
    const text = base58CheckEncode(payload);
    expect(text).toBe('1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH');
    expect(base58CheckDecode(text)).toEqual(payload);
    expect(base58CheckDecode('0OIl')).toBe('encoding');
    expect(base58CheckDecode('')).toBe('encoding');
    expect(base58CheckDecode('1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMJ')).toBe('checksum');
    expect(base58CheckDecode('11')).toBe('checksum');
  });

  it('passes the BIP173/BIP350 bech32 and bech32m vectors', () => {
    type V = { string?: string; stringHex?: string; prefix?: string; words?: number[]; limit?: number };
    const v = vectors<{
      bech32: { valid: V[]; invalid: V[] };
      bech32m: { valid: V[]; invalid: V[] };
      fromWords: { invalid: { words: number[] }[] };
    }>('bip173_bip350_bech32_bitcoinjs.json');
    for (const variant of ['bech32', 'bech32m'] as const) {
      for (const c of v[variant].valid) {
        const d = decodeBech32(c.string!, c.limit ?? 90);
        expect(typeof d, c.string).toBe('object');
        if (typeof d === 'string') continue;
        expect(d.variant).toBe(variant);
        expect(d.hrp).toBe(c.prefix!.toLowerCase());
        expect([...d.words]).toEqual(c.words);
      }
      for (const c of v[variant].invalid) {
        if (c.string === undefined && c.stringHex === undefined) continue; // encoder-only cases
        const s = c.string ?? Buffer.from(c.stringHex!, 'hex').toString('latin1');
        const d = decodeBech32(s, c.limit ?? 90);
        expect(typeof d === 'string' || d.variant !== variant, s).toBe(true);
      }
    }
    for (const c of v.fromWords.invalid) expect(wordsToBytes(new Uint8Array(c.words))).toBeNull();
  });
});

describe('key helpers', () => {
  it('derives the P2PKH and P2WPKH addresses of a key (BIP173 example key)', () => {
    const pubkey = hexToBytes('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798');
    expect(pubkeyToP2wpkhAddress(pubkey, 'main')).toBe('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4');
    expect(pubkeyToP2pkhAddress(pubkey, 'main')).toBe('1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH');
    const one = new Uint8Array(32);
    one[31] = 1;
    expect(publicKeyOf(one)).toEqual(pubkey);
    expect(publicKeyOf(one, false).length).toBe(65);
    expect(() => pubkeyToP2wpkhAddress(publicKeyOf(one, false), 'main')).toThrow(
      new TypeError('P2WPKH needs a 33-byte compressed public key'),
    );
  });

  it('rejects WIF keys for the wrong network, with bad checksums or out-of-range keys', () => {
    const one = new Uint8Array(32);
    one[31] = 1;
    const wif = encodeWif(one, 'main');
    expect(wif).toBe('KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn');
    expect(() => decodeWif(wif, 'regtest')).toThrow(new TypeError("Invalid WIF: version 0x80 is not regtest's (0xef)"));
    expect(() => decodeWif(wif.slice(0, -1) + 'o', 'main')).toThrow(new TypeError('Invalid WIF: bad checksum'));
    expect(() => decodeWif('0' + wif.slice(1), 'main')).toThrow(new TypeError('Invalid WIF: not Base58'));
    const zero = base58CheckEncode(new Uint8Array([0x80, ...new Uint8Array(32), 1]));
    expect(() => decodeWif(zero, 'main')).toThrow(new TypeError('Invalid WIF: private key out of range'));
    const badFlag = base58CheckEncode(new Uint8Array([0x80, ...one, 2]));
    expect(() => decodeWif(badFlag, 'main')).toThrow(new TypeError('Invalid WIF: compression flag must be 0x01'));
    expect(() => encodeWif(new Uint8Array(32), 'main')).toThrow(new RangeError('private key must be in [1, n-1] of secp256k1'));
  });
});
