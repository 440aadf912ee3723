/**
 * The address keys (src/db/address-key.ts) an output script is indexed under, on the hot path
 * of sync: one key for P2PKH, P2SH, segwit of any version and P2PK (keyed as its key's P2PKH
 * script); one key per public key for bare multisig (history only, no balance); none for
 * OP_RETURN and nonstandard scripts (DESIGN.md "Addresses"). Keys are uuid strings as Postgres
 * prints them, so keys computed here and keys read back compare equal.
 * @module
 */
import { hash160 } from '../src/bitcoin/hash.js';
import { addressKey, addressKeyBytes } from '../src/db/address-key.js';
import { classifyScript, decodeOutputScript, p2pkhScript } from '../src/bitcoin/script.js';

/** No address (OP_RETURN, nonstandard), one address, or the keys of a bare multisig. */
export type ScriptKeys = null | string | readonly string[];

/** Core's MAX_SCRIPT_SIZE: longer output scripts are unspendable. */
const MAX_SCRIPT_SIZE = 10_000;

/**
 * The canonical script(s) an output is indexed under: the script itself for P2PKH, P2SH and
 * segwit; its key's P2PKH script for P2PK; each key's P2PKH script for bare multisig (as an
 * array); null for OP_RETURN and nonstandard.
 */
export function canonicalScripts(script: Uint8Array): Uint8Array | readonly Uint8Array[] | null {
  const s = script;
  const n = s.length;
  // Fast paths for the templates that make up nearly every output: the script is canonical.
  if (
    (n === 22 && s[0] === 0x00 && s[1] === 0x14) || // P2WPKH
    (n === 34 && (s[0] === 0x51 || s[0] === 0x00) && s[1] === 0x20) || // P2TR, P2WSH
    (n === 25 && s[0] === 0x76 && s[1] === 0xa9 && s[2] === 0x14 && s[23] === 0x88 && s[24] === 0xac) || // P2PKH
    (n === 23 && s[0] === 0xa9 && s[1] === 0x14 && s[22] === 0x87) // P2SH
  ) {
    return s;
  }
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

/** The address keys of an output script. */
export function scriptKeys(script: Uint8Array): ScriptKeys {
  const c = canonicalScripts(script);
  if (c === null) return null;
  if (c instanceof Uint8Array) return addressKey(c);
  return [...new Set(c.map((x) => addressKey(x)))];
}

/** The same keys as 16-byte Buffers (the bulk path writes them to COPY without text). */
export function scriptKeyBytes(script: Uint8Array): Buffer | readonly Buffer[] | null {
  const c = canonicalScripts(script);
  if (c === null) return null;
  if (c instanceof Uint8Array) return addressKeyBytes(c);
  const seen = new Set<string>();
  const out: Buffer[] = [];
  for (const x of c) {
    const k = addressKeyBytes(x);
    const id = k.toString('latin1');
    if (!seen.has(id)) {
      seen.add(id);
      out.push(k);
    }
  }
  return out;
}

/** True for outputs Core never puts in its UTXO set: OP_RETURN-led or oversized scripts. */
export function isUnspendable(script: Uint8Array): boolean {
  return (script.length > 0 && script[0] === 0x6a) || script.length > MAX_SCRIPT_SIZE;
}

/** The 16 bytes of a uuid key (for binary COPY). */
export function keyBytes(key: string): Buffer {
  return Buffer.from(key.replace(/-/g, ''), 'hex');
}
