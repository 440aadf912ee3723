/**
 * The API key format and its digest (pure). A key is `bw_` + 43 base64url characters (32
 * random bytes) + 6 base64url characters of checksum (first 4 bytes of SHA-256 of the random
 * part), so secret scanners and typos can be told apart from real keys. Only the SHA-256 digest
 * of the whole key is stored; the `prefix` (first 11 characters) identifies a key in listings.
 * @module
 */
import { hash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'bw_';
const BODY_CHARS = 43;
const CHECK_CHARS = 6;
export const KEY_LENGTH = KEY_PREFIX.length + BODY_CHARS + CHECK_CHARS;
/** How many leading characters of a key are kept as its displayable prefix. */
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 8;
const KEY_RE = /^bw_[A-Za-z0-9_-]{49}$/;

function checksum(body: string): string {
  return hash('sha256', body, 'buffer').subarray(0, 4).toString('base64url').slice(0, CHECK_CHARS);
}

/** A new random key (shown to its owner once, never stored). */
export function generateApiKey(): string {
  const body = randomBytes(32).toString('base64url');
  return `${KEY_PREFIX}${body}${checksum(body)}`;
}

/**
 * True when `key` has the key format and a correct checksum. It reads every character whatever
 * the outcome, so a failed check costs the same time as a passed one.
 */
export function isWellFormedApiKey(key: string): boolean {
  const shaped = key.length === KEY_LENGTH && KEY_RE.test(key);
  const body = shaped ? key.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_CHARS) : 'x'.repeat(BODY_CHARS);
  const expected = checksum(body);
  const given = shaped ? key.slice(KEY_LENGTH - CHECK_CHARS) : '';
  let diff = shaped ? 0 : 1;
  for (let i = 0; i < CHECK_CHARS; i++) diff |= expected.charCodeAt(i) ^ (given.charCodeAt(i) || 0);
  return diff === 0;
}

/** SHA-256 of the key's UTF-8 bytes: what `api_keys.key_hash` holds (one-shot: every request hashes its key). */
export function digestApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** The displayable prefix of a key (`bw_` and 8 characters). */
export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}
