/**
 * Address keys: the first 16 bytes of SHA-256 of an address's canonical output script, stored
 * as a Postgres `uuid` (fixed 16 bytes, no id table, no lookup to assign one). The canonical
 * script is the script of the address as users see it: a P2PK output is keyed by its key's
 * P2PKH script, each key of a bare multisig likewise; the network plays
 * no part, so an address's key is the same whatever encoding shows it.
 * @module
 */
import { hash } from 'node:crypto';
import { hash160, sha256Into } from '../bitcoin/hash.js';
import { classifyScript, decodeOutputScript, p2pkhScript } from '../bitcoin/script.js';

/** Writes the 16-byte key of a canonical script at `out[at..at + 16)` (no Buffer: the bulk sync derives one per output). */
export function addressKeyInto(canonicalScript: Uint8Array, out: Uint8Array, at = 0): void {
  sha256Into(canonicalScript, out, at, 16);
}

/** The 16-byte key of a canonical script. */
export function addressKeyBytes(canonicalScript: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(16);
  addressKeyInto(canonicalScript, out, 0);
  return out;
}

/**
 * The key's text form, as Postgres prints a uuid (8-4-4-4-12 lower-case hex), from the hex of its
 * bytes (the first 32 characters of `hex`). The one place that writes the form; `uuidHex` reads it.
 */
export function uuidText(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The text form of the key held in the first 16 bytes of `bytes`. */
export function uuidTextOfBytes(bytes: Uint8Array): string {
  return uuidText(Buffer.from(bytes.buffer, bytes.byteOffset, 16).toString('hex'));
}

/** The 32 hex characters of a key given in its text form (8-4-4-4-12), or given as 32 hex already. */
export function uuidHex(text: string): string {
  return text.length === 36 ? text.slice(0, 8) + text.slice(9, 13) + text.slice(14, 18) + text.slice(19, 23) + text.slice(24) : text;
}

/** The uuid-formatted key of a canonical script. */
export function addressKey(canonicalScript: Uint8Array): string {
  return uuidText(hash('sha256', canonicalScript, 'hex'));
}

/**
 * True when the `n` bytes at `b[at..]` are one of the templates that make up nearly every output
 * and are their own canonical script: P2WPKH, P2WSH, P2TR, P2PKH, P2SH (`canonicalScripts`'s fast
 * path, also read in place by the bulk sync).
 */
export function isCanonicalTemplate(b: Uint8Array, at: number, n: number): boolean {
  const s0 = b[at];
  const s1 = b[at + 1];
  return (
    (n === 22 && s0 === 0x00 && s1 === 0x14) || // P2WPKH
    (n === 34 && (s0 === 0x51 || s0 === 0x00) && s1 === 0x20) || // P2TR, P2WSH
    (n === 25 && s0 === 0x76 && s1 === 0xa9 && b[at + 2] === 0x14 && b[at + 23] === 0x88 && b[at + 24] === 0xac) || // P2PKH
    (n === 23 && s0 === 0xa9 && s1 === 0x14 && b[at + 22] === 0x87) // P2SH
  );
}

/**
 * The canonical script(s) an output is indexed under: the script itself for P2PKH, P2SH and
 * segwit; its key's P2PKH script for P2PK; each key's P2PKH script for bare multisig (as an
 * array); null for OP_RETURN and nonstandard.
 */
export function canonicalScripts(script: Uint8Array): Uint8Array | readonly Uint8Array[] | null {
  const s = script;
  const n = s.length;
  // Fast paths for the templates that make up nearly every output: the script is canonical.
  if (isCanonicalTemplate(s, 0, n)) return s;
  switch (classifyScript(s)) {
    case 'pubkeyhash':
    case 'scripthash':
    case 'witness_v0_keyhash':
    case 'witness_v0_scripthash':
    case 'witness_v1_taproot':
    case 'anchor':
    case 'witness_unknown':
      return s;
    case 'pubkey':
      return p2pkhScript(hash160(s.subarray(1, n - 1)));
    case 'multisig': {
      const d = decodeOutputScript(s);
      return d.type === 'multisig' ? d.pubkeys.map((k) => p2pkhScript(hash160(k))) : null;
    }
    default:
      return null;
  }
}

/**
 * Where the index keeps the outputs of `script`: the canonical script whose key holds them, and
 * whether the outputs carry that key (`keyed`: in utxos and mempool_outputs, counted in its
 * balance). A bare multisig output carries no key (it counts in no balance): its transaction is
 * in each key's history, and it is found through the first key's. Null for OP_RETURN and
 * nonstandard scripts, which are not indexed.
 */
export function keptUnder(script: Uint8Array): { canonical: Uint8Array; keyed: boolean } | null {
  const c = canonicalScripts(script);
  if (c === null) return null;
  if (c instanceof Uint8Array) return { canonical: c, keyed: true };
  const first = c[0];
  return first === undefined ? null : { canonical: first, keyed: false };
}

/**
 * The address key an Electrum script hash names: Electrum's script hash is the SHA-256 of the
 * output script in reversed byte order, so the key is the first 16 bytes of `sha` (the SHA-256
 * in its natural order). For a canonical script (P2PKH, P2SH, segwit) the key holds exactly that
 * script's outputs plus, for P2PKH, the P2PK and bare multisig outputs of the same public key.
 */
export function addressKeyOfScriptSha(sha: Uint8Array): string {
  return uuidTextOfBytes(sha);
}
