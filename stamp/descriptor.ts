/**
 * The stamping wallet's key from an output descriptor (BIP380/381/382): `wpkh(KEY)` or
 * `pkh(KEY)`, KEY a WIF or an extended private key (xprv/tprv, BIP32) followed by a fixed
 * derivation path (`/84h/1h/0h/0/0`; `h` or `'` marks hardened steps; no `*` ranges). An optional
 * key origin `[fingerprint/path]` is accepted and ignored; an optional `#checksum` is stripped.
 * Pure: no I/O.
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { base58CheckDecode } from '../src/bitcoin/base58.js';
import type { NetworkName } from '../src/bitcoin/network.js';
import { decodeWif } from '../src/bitcoin/wif.js';

/** What a descriptor gives the wallet: the key and the output type change goes to. */
export type DescriptorKey = { privateKey: Uint8Array; compressed: boolean; changeType: 'p2wpkh' | 'p2pkh' };

const XPRV_VERSION: Record<'main' | 'test', number> = { main: 0x0488ade4, test: 0x04358394 };
const HARDENED = 0x80000000;
const N = secp256k1.Point.Fn.ORDER;

function u32be(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, false);
  return b;
}

function toBigInt(b: Uint8Array): bigint {
  return BigInt('0x' + Buffer.from(b).toString('hex'));
}

function toBytes32(n: bigint): Uint8Array {
  return Uint8Array.from(Buffer.from(n.toString(16).padStart(64, '0'), 'hex'));
}

/** An extended private key: depth-free, just what derivation needs. */
export type ExtendedKey = { privateKey: Uint8Array; chainCode: Uint8Array };

/**
 * Decodes an xprv (main) or tprv (test networks).
 * @throws TypeError `Invalid extended key: …`
 */
export function decodeExtendedPrivateKey(text: string, network: NetworkName): ExtendedKey {
  const payload = base58CheckDecode(text);
  if (payload === 'encoding') throw new TypeError('Invalid extended key: not Base58');
  if (payload === 'checksum') throw new TypeError('Invalid extended key: bad checksum');
  if (payload.length !== 78) throw new TypeError(`Invalid extended key: ${payload.length} bytes, expected 78`);
  const version = new DataView(payload.buffer, payload.byteOffset).getUint32(0, false);
  const want = XPRV_VERSION[network === 'main' ? 'main' : 'test'];
  if (version !== want) {
    throw new TypeError(
      `Invalid extended key: version 0x${version.toString(16).padStart(8, '0')} is not a ${network === 'main' ? 'xprv' : 'tprv'} (0x${want.toString(16).padStart(8, '0')})`,
    );
  }
  if (payload[45] !== 0) throw new TypeError('Invalid extended key: not a private key');
  const privateKey = payload.slice(46, 78);
  if (!secp256k1.utils.isValidSecretKey(privateKey)) throw new TypeError('Invalid extended key: private key out of range');
  return { privateKey, chainCode: payload.slice(13, 45) };
}

/** BIP32 CKDpriv: the child `index` (≥ 2^31 = hardened). */
export function deriveChild(parent: ExtendedKey, index: number): ExtendedKey {
  const data = new Uint8Array(37);
  if (index >= HARDENED) data.set(parent.privateKey, 1);
  else data.set(secp256k1.getPublicKey(parent.privateKey, true), 0);
  data.set(u32be(index), 33);
  const I = hmac(sha512, parent.chainCode, data);
  const il = toBigInt(I.subarray(0, 32));
  const child = (il + toBigInt(parent.privateKey)) % N;
  // Probability below 2^-127: BIP32 says to proceed with the next index; we refuse instead.
  if (il >= N || child === 0n) throw new RangeError(`BIP32 derivation at index ${index} gives an invalid key; use another path`);
  return { privateKey: toBytes32(child), chainCode: I.slice(32) };
}

/** Parses `/84h/1'/0/5` into indices. @throws TypeError */
export function parsePath(path: string): number[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new TypeError(`Invalid derivation path '${path}'`);
  return path
    .slice(1)
    .split('/')
    .map((step) => {
      const m = /^(\d+)(['hH]?)$/.exec(step);
      if (!m)
        throw new TypeError(
          step === '*' ? 'Ranged descriptors (*) are not supported: give a fixed path' : `Invalid derivation step '${step}'`,
        );
      const n = Number(m[1]);
      if (n >= HARDENED) throw new TypeError(`Derivation step ${n} out of range`);
      return m[2] ? n + HARDENED : n;
    });
}

/**
 * Reads a `wpkh(…)` / `pkh(…)` descriptor for `network`.
 * @throws TypeError naming the problem (never echoing the key).
 */
export function parseWalletDescriptor(descriptor: string, network: NetworkName): DescriptorKey {
  const text = descriptor.trim().replace(/#[a-z0-9]{8}$/, '');
  const m = /^(wpkh|pkh)\((.*)\)$/.exec(text);
  if (!m) throw new TypeError('Invalid descriptor: expected wpkh(KEY) or pkh(KEY)');
  const changeType = m[1] === 'wpkh' ? 'p2wpkh' : 'p2pkh';
  const keyExpr = m[2]!.replace(/^\[[0-9a-fA-F]{8}(\/\d+['hH]?)*\]/, '');
  const slash = keyExpr.indexOf('/');
  const keyText = slash < 0 ? keyExpr : keyExpr.slice(0, slash);
  const path = slash < 0 ? '' : keyExpr.slice(slash);
  if (/^[xt]prv/.test(keyText)) {
    let key = decodeExtendedPrivateKey(keyText, network);
    for (const index of parsePath(path)) key = deriveChild(key, index);
    return { privateKey: key.privateKey, compressed: true, changeType };
  }
  if (/^[xt]pub/.test(keyText))
    throw new TypeError('Invalid descriptor: the stamping wallet needs a private key (xprv/tprv or WIF), not a public one');
  if (path !== '') throw new TypeError('Invalid descriptor: a WIF key takes no derivation path');
  const wif = decodeWif(keyText, network);
  if (changeType === 'p2wpkh' && !wif.compressed) throw new TypeError('Invalid descriptor: wpkh() needs a compressed key');
  return { privateKey: wif.privateKey, compressed: wif.compressed, changeType };
}
