/**
 * The address keys (src/db/address-key.ts) an output script is indexed under, on the hot path
 * of sync: one key for P2PKH, P2SH, segwit of any version and P2PK (keyed as its key's P2PKH
 * script); one key per public key for bare multisig (history only, no balance); none for
 * OP_RETURN and nonstandard scripts. Keys are uuid strings as Postgres
 * prints them, so keys computed here and keys read back compare equal.
 * @module
 */
import { OutputCursor, type TxOutput } from '../../src/bitcoin/tx.js';
import { addressKey, addressKeyBytes, addressKeyInto, canonicalScripts, isCanonicalTemplate } from '../../src/db/address-key.js';

export { canonicalScripts };

/** No address (OP_RETURN, nonstandard), one address, or the keys of a bare multisig. */
export type ScriptKeys = null | string | readonly string[];

/** Core's MAX_SCRIPT_SIZE: longer output scripts are unspendable. */
const MAX_SCRIPT_SIZE = 10_000;

/** The address keys of an output script. */
export function scriptKeys(script: Uint8Array): ScriptKeys {
  const c = canonicalScripts(script);
  if (c === null) return null;
  if (c instanceof Uint8Array) return addressKey(c);
  return [...new Set(c.map((x) => addressKey(x)))];
}

/**
 * The same keys as 16 bytes (the bulk path writes them to COPY without text). A single key is
 * written into `single` when given (the caller's scratch, overwritten by its next call) instead
 * of a new Buffer; a multisig's keys are always new Buffers.
 */
export function scriptKeyBytes(script: Uint8Array, single?: Uint8Array): Uint8Array | readonly Buffer[] | null {
  const c = canonicalScripts(script);
  if (c === null) return null;
  if (c instanceof Uint8Array) {
    if (single === undefined) return addressKeyBytes(c);
    addressKeyInto(c, single, 0);
    return single;
  }
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

/** Scratch copies of template scripts, by length (node:crypto hashes a whole array: no view is made). */
const templateCopies: Uint8Array[] = [];

/**
 * `scriptKeyBytes(out.script, single)`: a template script read in place by a cursor is copied
 * into a scratch array and hashed from there, which costs less than making its view.
 */
export function outputKeyBytes(out: TxOutput, single: Uint8Array): Uint8Array | readonly Buffer[] | null {
  if (out instanceof OutputCursor) {
    const b = out.bytes;
    const at = out.scriptAt;
    const n = out.scriptLength;
    if (isCanonicalTemplate(b, at, n)) {
      const s = (templateCopies[n] ??= new Uint8Array(n));
      for (let i = 0; i < n; i++) s[i] = b[at + i]!;
      addressKeyInto(s, single, 0);
      return single;
    }
  }
  return scriptKeyBytes(out.script, single);
}

/** True for outputs Core never puts in its UTXO set: OP_RETURN-led or oversized scripts. */
export function isUnspendable(script: Uint8Array): boolean {
  return unspendableScript(script.length, script[0] ?? -1);
}

/** `isUnspendable` of a script of `n` bytes whose first byte is `first`. */
export function unspendableScript(n: number, first: number): boolean {
  return (n > 0 && first === 0x6a) || n > MAX_SCRIPT_SIZE;
}
