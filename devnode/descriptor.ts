/**
 * The `desc` Core prints for an output script (InferDescriptor with no keys known): `addr(…)`,
 * `pk(…)`, `multi(…)`, `rawtr(…)`, `raw(…)`, with the descriptor checksum (BIP380).
 * @module
 */
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '../src/bitcoin/hash.js';
import { scriptToAddress } from './address.js';
import { decodeOutputScript } from '../src/bitcoin/script.js';

const INPUT_CHARSET = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(c: bigint, value: number): bigint {
  const top = c >> 35n;
  c = ((c & 0x7ffffffffn) << 5n) ^ BigInt(value);
  for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) c ^= GENERATOR[i]!;
  return c;
}

/** BIP380 checksum of a descriptor string (8 characters), or null for a character outside the set. */
export function descriptorChecksum(desc: string): string | null {
  let c = 1n;
  let cls = 0;
  let clsCount = 0;
  for (const ch of desc) {
    const pos = INPUT_CHARSET.indexOf(ch);
    if (pos < 0) return null;
    c = polymod(c, pos & 31);
    cls = cls * 3 + (pos >> 5);
    if (++clsCount === 3) {
      c = polymod(c, cls);
      cls = 0;
      clsCount = 0;
    }
  }
  if (clsCount > 0) c = polymod(c, cls);
  for (let j = 0; j < 8; j++) c = polymod(c, 0);
  c ^= 1n;
  let out = '';
  for (let j = 0; j < 8; j++) out += CHECKSUM_CHARSET[Number((c >> BigInt(5 * (7 - j))) & 31n)];
  return out;
}

/** `desc#checksum`. */
export function withChecksum(desc: string): string {
  return `${desc}#${descriptorChecksum(desc)}`;
}

function isValidXOnly(key: Uint8Array): boolean {
  try {
    schnorr.utils.lift_x(BigInt(`0x${bytesToHex(key)}`));
    return true;
  } catch {
    return false;
  }
}

const cache = new Map<string, string>();

/** The descriptor Core infers for `script` (top-level context, no key provider). */
export function inferDescriptor(script: Uint8Array): string {
  const hex = bytesToHex(script);
  const hit = cache.get(hex);
  if (hit !== undefined) return hit;
  const d = decodeOutputScript(script);
  let desc: string;
  if (d.type === 'pubkey') {
    desc = `pk(${bytesToHex(d.pubkey)})`;
  } else if (d.type === 'multisig') {
    desc = `multi(${d.required},${d.pubkeys.map(bytesToHex).join(',')})`;
  } else if (d.type === 'witness_v1_taproot' && isValidXOnly(d.program)) {
    desc = `rawtr(${bytesToHex(d.program)})`;
  } else {
    const addr = scriptToAddress(script);
    desc = addr !== null ? `addr(${addr})` : `raw(${hex})`;
  }
  const out = withChecksum(desc);
  if (cache.size > 50_000) cache.clear();
  cache.set(hex, out);
  return out;
}
