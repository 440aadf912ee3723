/**
 * Wallet descriptors against published vectors: BIP32 vector 1 (public derivation), the first
 * addresses of BIP44/49/84/86 (mnemonic "abandon … about") from the account keys those BIPs
 * print, the BIP380 checksum, and the parse errors. Core's own answers for every descriptor
 * type are compared in test/integration/wallets/core-descriptors.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { base58CheckDecode, base58CheckEncode } from '../../../src/bitcoin/base58.js';
import { outputAddresses } from '../../../src/bitcoin/address.js';
import {
  descriptorChecksum,
  descriptorForExtendedKey,
  DescriptorError,
  expandDescriptor,
  formatDescriptor,
  parseDescriptor,
  ScriptDeriver,
  withChecksum,
  type Descriptor,
} from '../../../src/bitcoin/descriptor.js';
import { decodeExtendedPublicKey } from '../../../src/bitcoin/extended-key.js';
import type { NetworkName } from '../../../src/bitcoin/network.js';

const BIP44_XPUB = 'xpub6BosfCnifzxcFwrSzQiqu2DBVTshkCXacvNsWGYJVVhhawA7d4R5WSWGFNbi8Aw6ZRc1brxMyWMzG3DSSSSoekkudhUd9yLb6qx39T9nMdj';
const BIP49_YPUB = 'ypub6Ww3ibxVfGzLrAH1PNcjyAWenMTbbAosGNB6VvmSEgytSER9azLDWCxoJwW7Ke7icmizBMXrzBx9979FfaHxHcrArf3zbeJJJUZPf663zsP';
const BIP49_UPUB = 'upub5EFU65HtV5TeiSHmZZm7FUffBGy8UKeqp7vw43jYbvZPpoVsgU93oac7Wk3u6moKegAEWtGNF8DehrnHtv21XXEMYRUocHqguyjknFHYfgY';
const BIP84_ZPUB = 'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs';
const BIP86_XPUB = 'xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ';

function addresses(d: Descriptor, branch: number, n: number, network: NetworkName): string[] {
  const deriver = new ScriptDeriver(d, branch);
  return Array.from({ length: n }, (_, i) => outputAddresses(deriver.derive(i).script, network)[0]!);
}

describe('BIP32 public derivation (vector 1)', () => {
  it('derives m/0H/1/2H/2 and m/0H/1/2H/2/1000000000 from the xpub of m/0H/1/2H', () => {
    const parent = decodeExtendedPublicKey(
      'xpub6D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7DogT5Uv6fcLW5',
      'main',
    ).hd;
    const child = parent.deriveChild(2);
    expect(child.publicExtendedKey).toBe(
      'xpub6FHa3pjLCk84BayeJxFW2SP4XRrFd1JYnxeLeU8EqN3vDfZmbqBqaGJAyiLjTAwm6ZLRQUMv1ZACTj37sR62cfN7fe5JnJ7dh8zL4fiyLHV',
    );
    expect(child.deriveChild(1000000000).publicExtendedKey).toBe(
      'xpub6H1LXWLaKsWFhvm6RVpEL9P4KfRZSW7abD2ttkWP3SSQvnyA8FSVqNTEcYFgJS2UaFcxupHiYkro49S8yGasTvXEYBVPamhGW6cFJodrTHy',
    );
    // The same key through a descriptor: pkh(xpub(m/0H/1/2H)/2/*) at index 1000000000.
    const d = parseDescriptor(
      'pkh(xpub6D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7DogT5Uv6fcLW5/2/*)',
      'main',
    );
    expect(outputAddresses(new ScriptDeriver(d, 0).derive(1000000000).script, 'main')).toEqual(['1LZiqrop2HGR4qrH1ULZPyBpU6AUP49Uam']);
  });
});

describe('public child keys', () => {
  it("equal @scure/bip32's deriveChild for every index of a range, the last unhardened one and each key of a multisig", () => {
    for (const desc of [`wpkh(${BIP84_ZPUB}/0/*)`, `sh(wsh(sortedmulti(2,${BIP44_XPUB}/1/*,${BIP86_XPUB}/0/*)))`]) {
      const d = parseDescriptor(desc, 'main');
      const deriver = new ScriptDeriver(d, 0);
      const branchNodes = d.keys.map((k) => k.steps.reduce((n, step) => n.deriveChild(step), k.key.hd));
      for (const index of [...Array.from({ length: 100 }, (_, i) => i), 1_000_000, 0x7fffffff]) {
        const ours = deriver.publicKeys(index).map((k) => Buffer.from(k).toString('hex'));
        expect(ours, `${desc} at ${index}`).toEqual(branchNodes.map((n) => Buffer.from(n.deriveChild(index).publicKey!).toString('hex')));
      }
    }
  });
});

describe('BIP44/49/84/86 account keys', () => {
  it('BIP44: a bare xpub is pkh(xpub/<0;1>/*)', () => {
    const d = descriptorForExtendedKey(BIP44_XPUB, 'main');
    expect(formatDescriptor(d)).toBe(`pkh(${BIP44_XPUB}/<0;1>/*)`);
    expect(addresses(d, 0, 2, 'main')).toEqual(['1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA', '1Ak8PffB2meyfYnbXZR9EGfLfFZVpzJvQP']);
  });

  it('BIP49: a bare ypub is sh(wpkh(xpub/<0;1>/*)), re-encoded as xpub; a upub on testnet likewise', () => {
    const d = descriptorForExtendedKey(BIP49_YPUB, 'main');
    expect(d.kind).toBe('sh-wpkh');
    expect(formatDescriptor(d)).toMatch(/^sh\(wpkh\(xpub[1-9A-HJ-NP-Za-km-z]+\/<0;1>\/\*\)\)$/);
    expect(addresses(d, 0, 2, 'main')).toEqual(['37VucYSaXLCAsxYyAPfbSi9eh4iEcbShgf', '3LtMnn87fqUeHBUG414p9CWwnoV6E2pNKS']);
    expect(addresses(d, 1, 1, 'main')).toEqual(['34K56kSjgUCUSD8GTtuF7c9Zzwokbs6uZ7']);
    const t = descriptorForExtendedKey(BIP49_UPUB, 'test');
    expect(formatDescriptor(t)).toMatch(/^sh\(wpkh\(tpub/);
    expect(addresses(t, 0, 1, 'test')).toEqual(['2Mww8dCYPUpKHofjgcXcBCEGmniw9CoaiD2']);
  });

  it('BIP84: a bare zpub is wpkh(xpub/<0;1>/*)', () => {
    const d = descriptorForExtendedKey(BIP84_ZPUB, 'main');
    expect(d.kind).toBe('wpkh');
    expect(addresses(d, 0, 2, 'main')).toEqual([
      'bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu',
      'bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g',
    ]);
    expect(addresses(d, 1, 1, 'main')).toEqual(['bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el']);
  });

  it('BIP86: tr(xpub/<0;1>/*) key path', () => {
    const d = parseDescriptor(`tr([73c5da0a/86'/0'/0']${BIP86_XPUB}/<0;1>/*)`, 'main');
    expect(addresses(d, 0, 2, 'main')).toEqual([
      'bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr',
      'bc1p4qhjn9zdvkux4e44uhx8tc55attvtyu358kutcqkudyccelu0was9fqzwh',
    ]);
    expect(addresses(d, 1, 1, 'main')).toEqual(['bc1p3qkhfews2uk44qtvauqyr2ttdsw7svhkl9nkm9s9c3x4ax5h60wqwruhk7']);
    expect(new ScriptDeriver(d, 1).path(0)).toBe("m/86'/0'/0'/1/0");
  });

  it('the same zpub given inside a descriptor is re-encoded as xpub and derives the same', () => {
    const inside = parseDescriptor(`wpkh(${BIP84_ZPUB}/0/*)`, 'main');
    expect(formatDescriptor(inside)).toMatch(/^wpkh\(xpub/);
    expect(addresses(inside, 0, 1, 'main')).toEqual(['bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu']);
    expect(new ScriptDeriver(inside, 0).path(7)).toBe('0/7');
  });
});

describe('checksums (BIP380)', () => {
  it("computes Core's checksum and checks a given one", () => {
    expect(descriptorChecksum('raw(deadbeef)')).toBe('89f8spxm');
    const d = `wpkh(${decodeExtendedPublicKey(BIP84_ZPUB, 'main').xpub}/0/*)`;
    const full = withChecksum(d);
    expect(formatDescriptor(parseDescriptor(full, 'main'))).toBe(d);
    const wrong = full.slice(0, -1) + (full.endsWith('q') ? 'p' : 'q');
    expect(() => parseDescriptor(wrong, 'main')).toThrow(
      `Provided checksum '${wrong.split('#')[1]}' does not match computed checksum '${full.split('#')[1]}'`,
    );
    expect(() => parseDescriptor(`${d}#abc`, 'main')).toThrow('Expected 8 character checksum, not 3 characters');
    expect(() => parseDescriptor(`${d}#a#b`, 'main')).toThrow("Multiple '#' symbols");
  });

  it('expands a multipath descriptor into its checksummed branches', () => {
    const xpub = decodeExtendedPublicKey(BIP84_ZPUB, 'main').xpub;
    expect(expandDescriptor(parseDescriptor(`wpkh(${xpub}/<0;1>/*)`, 'main'))).toEqual([
      withChecksum(`wpkh(${xpub}/0/*)`),
      withChecksum(`wpkh(${xpub}/1/*)`),
    ]);
  });
});

describe('what a wallet refuses', () => {
  const xpub = decodeExtendedPublicKey(BIP84_ZPUB, 'main').xpub;
  const cases: [string, string, RegExp][] = [
    [
      'private key',
      'wpkh(xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi/0/*)',
      /private extended keys are not accepted/,
    ],
    ['another network', `wpkh(${xpub}/0/*)`, /is for mainnet, not regtest/],
    ['not ranged', `wpkh(${xpub}/0)`, /not ranged/],
    ['hardened range', `wpkh(${xpub}/0/*')`, /hardened ranges/],
    ['hardened step after an xpub', `wpkh(${xpub}/0'/*)`, /cannot derive hardened children/],
    ['single key', 'wpkh(02f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9)', /single public key/],
    ['script tree', `tr(${xpub}/0/*,pk(${xpub}/1/*))`, /script tree/],
    ['unknown function', `combo(${xpub}/0/*)`, /not supported/],
    ['threshold above keys', `wsh(multi(3,${xpub}/0/*,${xpub}/1/*))`, /threshold cannot be larger/],
    ['mismatched multipath', `wsh(multi(1,${xpub}/<0;1>/*,${xpub}/<0;1;2>/*))`, /mismatched lengths/],
    ['two multipath steps', `wpkh(${xpub}/<0;1>/<2;3>/*)`, /Multiple multipath/],
    ['bad origin', `wpkh([d34db3/84h]${xpub}/0/*)`, /Fingerprint is not 4 bytes/],
  ];
  for (const [what, text, message] of cases) {
    it(what, () => {
      const network = what === 'another network' ? 'regtest' : 'main';
      expect(() => parseDescriptor(text, network)).toThrow(DescriptorError);
      expect(() => parseDescriptor(text, network)).toThrow(message);
    });
  }
  it('a bare multisig-only key (Zpub) needs its co-signers', () => {
    const raw = base58CheckDecode(BIP84_ZPUB) as Uint8Array;
    const zpubMultisig = base58CheckEncode(new Uint8Array([0x02, 0xaa, 0x7e, 0xd3, ...raw.subarray(4)]));
    expect(zpubMultisig.startsWith('Zpub')).toBe(true);
    expect(() => descriptorForExtendedKey(zpubMultisig, 'main')).toThrow(/co-signer/);
  });
});
