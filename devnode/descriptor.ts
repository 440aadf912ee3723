/**
 * The `desc` Core prints for an output script (InferDescriptor with no keys known): `addr(…)`,
 * `pk(…)`, `multi(…)`, `rawtr(…)`, `raw(…)`, with the descriptor checksum (BIP380).
 * @module
 */
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '../src/bitcoin/hash.js';
import { scriptToAddress } from './address.js';
import { decodeOutputScript } from '../src/bitcoin/script.js';
import { withChecksum } from '../src/bitcoin/descriptor.js';

export { descriptorChecksum, withChecksum } from '../src/bitcoin/descriptor.js';

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
