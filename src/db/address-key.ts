/**
 * Address keys: the first 16 bytes of SHA-256 of an address's canonical output script, stored
 * as a Postgres `uuid` (fixed 16 bytes, no id table, no lookup to assign one). The canonical
 * script is the script of the address as users see it: a P2PK output is keyed by its key's
 * P2PKH script, each key of a bare multisig likewise (DESIGN.md "Addresses"); the network plays
 * no part, so an address's key is the same whatever encoding shows it.
 * @module
 */
import { hash } from 'node:crypto';

/** The 16-byte key of a canonical script. */
export function addressKeyBytes(canonicalScript: Uint8Array): Buffer {
  // One-shot hashing: per-call overhead dominates for short scripts (PERFORMANCE.md 2.1).
  return hash('sha256', canonicalScript, 'buffer').subarray(0, 16);
}

/** The key as Postgres prints a uuid (8-4-4-4-12 lower-case hex). */
export function addressKeyFromBytes(bytes: Uint8Array): string {
  const h = Buffer.from(bytes).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The uuid-formatted key of a canonical script. */
export function addressKey(canonicalScript: Uint8Array): string {
  const h = hash('sha256', canonicalScript, 'hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
