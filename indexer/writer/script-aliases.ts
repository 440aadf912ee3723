/**
 * Script aliases (migrations/0016_script_aliases.ts): the index keeps a P2PK output under its
 * key's P2PKH address key and a bare multisig output under each key's P2PKH address key, so the
 * output script's own key (the first 16 bytes of its SHA-256, an Electrum script hash) would
 * find nothing. Every path that indexes outputs — a block, the bulk load, the mempool — records
 * `own key → address key` for these scripts. A row depends on the script alone: it is written
 * with ON CONFLICT DO NOTHING and never removed, not by an undo either (the exact per-script
 * reads of src/db/queries/script-hash.ts find nothing under it then).
 * @module
 */
import { sql, type Transaction } from 'kysely';
import { addressKeyBytes, keptUnder } from '../../src/db/address-key.js';
import type { Database } from '../../src/db/schema.js';

/** The own key of a script kept under another key, that key, and whether its outputs carry it (P2PK) or not (bare multisig). */
export type ScriptAlias = { scriptKey: Buffer; addrKey: Buffer; keyed: boolean };

/**
 * The alias of an output script, or null when the script is kept under its own key or under
 * none. Only P2PK (ends in OP_CHECKSIG) and bare multisig (OP_CHECKMULTISIG) have one: other
 * scripts are passed over after two byte reads (P2PKH also ends in OP_CHECKSIG: by its length
 * and first byte), so the sync's hot path pays nothing for them.
 */
export function scriptAlias(script: Uint8Array): ScriptAlias | null {
  const n = script.length;
  if (!mayHaveAlias(n, script[0] ?? -1, script[n - 1] ?? -1)) return null;
  const k = keptUnder(script);
  if (k === null || k.canonical === script) return null;
  return { scriptKey: addressKeyBytes(script), addrKey: addressKeyBytes(k.canonical), keyed: k.keyed };
}

/**
 * Whether a script of `n` bytes, first byte `first` and last byte `last` (-1 for none) may have
 * an alias: `scriptAlias`'s first test, for a reader that has the script's bytes in place.
 */
export function mayHaveAlias(n: number, first: number, last: number): boolean {
  return (last === 0xac || last === 0xae) && !(n === 25 && first === 0x76);
}

/** The aliases of `scripts`, each once. */
export function aliasesOf(scripts: Iterable<Uint8Array>): ScriptAlias[] {
  const seen = new Map<string, ScriptAlias>();
  for (const s of scripts) {
    const a = scriptAlias(s);
    if (a) seen.set(a.scriptKey.toString('hex'), a);
  }
  return [...seen.values()];
}

/** Records aliases (those already there stay as they are: the same row). */
export async function insertScriptAliases(trx: Transaction<Database>, aliases: readonly ScriptAlias[]): Promise<void> {
  if (aliases.length === 0) return;
  // In key order, so two writers never wait on each other's rows in opposite orders.
  const sorted = [...aliases].sort((a, b) => Buffer.compare(a.scriptKey, b.scriptKey));
  await sql`
    INSERT INTO script_aliases (script_key, addr_key, keyed)
    SELECT encode(s, 'hex')::uuid, encode(a, 'hex')::uuid, k
      FROM unnest(${sorted.map((x) => x.scriptKey)}::bytea[], ${sorted.map((x) => x.addrKey)}::bytea[], ${sorted.map((x) => x.keyed)}::bool[]) AS d(s, a, k)
    ON CONFLICT (script_key) DO NOTHING`.execute(trx);
}
