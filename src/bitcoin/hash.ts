/**
 * Hash functions (SHA-256, double SHA-256, HASH160, BIP340 tagged hashes), hex helpers and the
 * byte order of hashes. Hashes live in internal (wire) byte order as Uint8Array everywhere in the
 * code; `hashToHex` / `hexToHash` convert to and from the reversed display order that Bitcoin Core
 * prints. This module is the ONLY place where byte order is reversed.
 * @module
 */
import { createHash, hash as nodeHash } from 'node:crypto';

/**
 * A plain Uint8Array view of a Buffer: results compare equal to other Uint8Arrays in tests, and
 * `.slice()` copies (Buffer#slice does not).
 */
function plain(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** SHA-256 of `data` (node:crypto one-shot: the per-call overhead is what matters here). */
export function sha256(data: Uint8Array): Uint8Array {
  return plain(nodeHash('sha256', data, 'buffer'));
}

/**
 * SHA-256 of `data` with its first `n` bytes written at `out[at..at + n)`, allocating no Buffer:
 * node:crypto's one-shot `hash` gives its digest as a latin1 ('binary') string, a V8 string that costs half
 * of the Buffer its 'buffer' output makes per call (~0.8 against ~1.8 µs for a script on the
 * 2-vCPU bench VM; the call, not the compression, dominates short messages). The sync's hot path:
 * address keys, txids.
 */
export function sha256Into(data: Uint8Array, out: Uint8Array, at = 0, n = 32): void {
  const d = nodeHash('sha256', data, 'binary');
  for (let i = 0; i < n; i++) out[at + i] = d.charCodeAt(i);
}

/** Double SHA-256 (Bitcoin's `Hash`/`SHA256d`): txids, block hashes, Base58Check checksums. */
export function sha256d(data: Uint8Array): Uint8Array {
  return plain(nodeHash('sha256', nodeHash('sha256', data, 'buffer'), 'buffer'));
}

/** Double SHA-256 over several parts, as if concatenated, without concatenating them. */
export function sha256dParts(parts: readonly Uint8Array[]): Uint8Array {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return plain(nodeHash('sha256', h.digest(), 'buffer'));
}

/** RIPEMD-160 of SHA-256 (`Hash160`): P2PKH and P2WPKH key hashes, P2SH script hashes. */
export function hash160(data: Uint8Array): Uint8Array {
  return plain(nodeHash('ripemd160', nodeHash('sha256', data, 'buffer'), 'buffer'));
}

const tagPrefixes = new Map<string, Uint8Array>();

/** BIP340 tagged hash: SHA256(SHA256(tag) || SHA256(tag) || msg...). */
export function taggedHash(tag: string, ...messages: Uint8Array[]): Uint8Array {
  let prefix = tagPrefixes.get(tag);
  if (prefix === undefined) {
    const t = nodeHash('sha256', Buffer.from(tag, 'utf8'), 'buffer');
    prefix = Buffer.concat([t, t]);
    tagPrefixes.set(tag, prefix);
  }
  const h = createHash('sha256').update(prefix);
  for (const m of messages) h.update(m);
  return plain(h.digest());
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Lower-case hex of `bytes`, in the order given (no reversal). */
export function bytesToHex(bytes: Uint8Array): string {
  return asBuffer(bytes).toString('hex');
}

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * Bytes of a hex string (either case). Throws a TypeError for odd length or a non-hex character,
 * so that nothing is silently truncated (Buffer.from(s, 'hex') stops at the first bad character).
 */
export function hexToBytes(hex: string): Uint8Array {
  if (typeof hex !== 'string') throw new TypeError(`hex must be a string, got ${typeof hex}`);
  if (hex.length % 2 !== 0) throw new TypeError(`hex has an odd length (${hex.length})`);
  if (!HEX_RE.test(hex)) throw new TypeError('hex contains a character outside 0-9a-fA-F');
  return plain(Buffer.from(hex, 'hex'));
}

/** Display hex (Core's order: reversed) of a 32-byte hash held in internal byte order. */
export function hashToHex(internal: Uint8Array): string {
  if (internal.length !== 32) throw new RangeError(`hash must be 32 bytes, got ${internal.length}`);
  const r = Buffer.allocUnsafe(32);
  for (let i = 0; i < 32; i++) r[i] = internal[31 - i]!;
  return r.toString('hex');
}

/**
 * hashToHex of each 32-byte hash packed back to back in `packed`, with one reversal buffer and
 * one hex encoding for all of them (a history page's 25–1,000 txids).
 */
export function hashesToHex(packed: Uint8Array): string[] {
  if (packed.length % 32 !== 0) throw new RangeError(`packed hashes must be a multiple of 32 bytes, got ${packed.length}`);
  const r = Buffer.allocUnsafe(packed.length);
  for (let o = 0; o < packed.length; o += 32) for (let i = 0; i < 32; i++) r[o + i] = packed[o + 31 - i]!;
  const hex = r.toString('hex');
  const out = new Array<string>(packed.length / 32);
  for (let k = 0; k < out.length; k++) out[k] = hex.slice(k * 64, k * 64 + 64);
  return out;
}

const HASH_HEX_RE = /^[0-9a-fA-F]{64}$/;

/** Internal-order bytes of a hash written in display order (64 hex chars, as Core prints it). */
export function hexToHash(display: string): Uint8Array {
  if (typeof display !== 'string' || !HASH_HEX_RE.test(display)) {
    throw new TypeError('hash must be 64 hex characters');
  }
  return plain(Buffer.from(display, 'hex').reverse());
}

/** Reversed copy of `bytes` (for the rare non-hash values shown reversed, e.g. 256-bit targets). */
export function reverseBytes(bytes: Uint8Array): Uint8Array {
  const r = new Uint8Array(bytes.length);
  for (let i = 0, n = bytes.length; i < n; i++) r[i] = bytes[n - 1 - i]!;
  return r;
}

/** Byte-wise equality. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
