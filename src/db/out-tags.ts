/**
 * An output's tag: what the index's readers of `txs` rows need to know of an output's script
 * without the script itself (the node keeps scripts; docs/schema.md "txs"). Tags are compared
 * by the first 8 bytes of a SHA-256 (16 hex characters), so two different scripts of one
 * transaction's outputs are confused with a probability of 2^-64:
 * - `own`: the first 8 bytes of SHA-256(script), the prefix of its Electrum script hash (and of
 *   its address key for a canonical script); null for an output the index keeps under no key
 *   (OP_RETURN, nonstandard) and no reader asks for;
 * - `keys`: the first 8 bytes of each address key it is kept under when that is not its own
 *   (a P2PK output: its key's P2PKH; bare multisig: each key's P2PKH), else empty;
 * - `multisig`: a bare multisig output (its keys take part in no balance);
 * - `script`: the whole script of an Open Assets marker (what coloring reads of its outputs).
 * @module
 */
import { hash } from 'node:crypto';
import { addressKeyBytes, canonicalScripts, uuidHex } from './address-key.js';
import { parseAssetMarker } from '../bitcoin/open-assets.js';

export type OutTag = {
  own: string | null;
  keys: readonly string[];
  multisig: boolean;
  script: Uint8Array | null;
};

/** The tag width in bytes. */
export const TAG_BYTES = 8;

const NONE: OutTag = Object.freeze({ own: null, keys: Object.freeze([]), multisig: false, script: null });

/** The tag of an output script. */
export function outTagOf(script: Uint8Array): OutTag {
  const marker = parseAssetMarker(script) !== undefined ? script : null;
  const c = canonicalScripts(script);
  if (c === null) return marker === null ? NONE : { ...NONE, script: marker };
  const own = hash('sha256', script, 'hex').slice(0, 2 * TAG_BYTES);
  if (c === script) return { own, keys: [], multisig: false, script: marker };
  const list = c instanceof Uint8Array ? [c] : c;
  return {
    own,
    keys: list.map((k) => addressKeyBytes(k).toString('hex', 0, TAG_BYTES)),
    multisig: !(c instanceof Uint8Array),
    script: marker,
  };
}

/** The 16 hex characters a SHA-256 (32 bytes) or an address key (uuid text or bytes) is compared by. */
export function tagPrefix(shaOrKey: Uint8Array | string): string {
  if (typeof shaOrKey === 'string') return uuidHex(shaOrKey).slice(0, 2 * TAG_BYTES);
  return Buffer.from(shaOrKey.buffer, shaOrKey.byteOffset, TAG_BYTES).toString('hex');
}

/** Is the output's script the one whose SHA-256 has prefix `sha` (tagPrefix)? */
export function tagIsScript(tag: OutTag, sha: string): boolean {
  return tag.own === sha;
}

/** Is the output kept under the address key with prefix `key` (tagPrefix), as its own script or as an alias? */
export function tagKeptUnder(tag: OutTag, key: string): boolean {
  return tag.keys.length === 0 ? tag.own === key : tag.keys.includes(key);
}

/**
 * The prefix of the one address key the output pays (counts in that key's balance: its own
 * script, or a P2PK output's P2PKH), or null (bare multisig, OP_RETURN, nonstandard).
 */
export function tagPaysKey(tag: OutTag): string | null {
  if (tag.multisig) return null;
  return tag.keys[0] ?? tag.own;
}
