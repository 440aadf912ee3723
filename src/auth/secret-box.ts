/**
 * Secrets Blockwire must be able to read back (the secret key of an HMAC-signing API key: the
 * server recomputes each request's signature with it, so a digest will not do), sealed at rest
 * with a server key: AES-256-GCM, a fresh 96-bit nonce per seal, and additional data binding the
 * box to its row (a box copied to another row does not open). A box names the server key that
 * sealed it, so keys can be rotated: the keyring's first key seals, every key in it opens.
 *
 * Box layout: version (1) | key id length (1) | key id (ASCII) | nonce (12) | tag (16) | ciphertext.
 * Keyring text: keys `<id>:<32 bytes as base64>`, one a line or separated by commas; `#` comment
 * lines and blank lines skipped.
 * @module
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 1;
const NONCE = 12;
const TAG = 16;
const ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

export type ServerKey = { id: string; key: Buffer };
/** The server keys: `current` seals, every key in `byId` (current included) opens. */
export type Keyring = { current: ServerKey; byId: ReadonlyMap<string, Buffer> };

export class KeyringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyringError';
  }
}

/** A fresh server key with a dated id (`sk-YYYYMMDDhhmmss-<6 hex>`), as a keyring line. */
export function newServerKeyLine(now = new Date()): string {
  const id = `sk-${now
    .toISOString()
    .replace(/[-:TZ]/g, '')
    .slice(0, 14)}-${randomBytes(3).toString('hex')}`;
  return `${id}:${randomBytes(32).toString('base64')}`;
}

/** Parses keyring text (see the module comment); throws KeyringError naming the bad line. */
export function parseKeyring(text: string): Keyring {
  const keys: ServerKey[] = [];
  const entries = text
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .flatMap((l) => l.split(','));
  for (const [i, raw] of entries.entries()) {
    const line = raw.trim();
    if (line === '') continue;
    const at = line.indexOf(':');
    const id = at < 0 ? '' : line.slice(0, at);
    const key = Buffer.from(at < 0 ? '' : line.slice(at + 1), 'base64');
    if (!ID_RE.test(id) || key.length !== 32) throw new KeyringError(`server key ${i + 1} must be <id>:<32 bytes in base64>`);
    if (keys.some((k) => k.id === id)) throw new KeyringError(`server key id '${id}' appears twice`);
    keys.push({ id, key });
  }
  if (keys.length === 0) throw new KeyringError('no server key');
  return { current: keys[0]!, byId: new Map(keys.map((k) => [k.id, k.key])) };
}

/** Seals `secret` under the keyring's current key, bound to `aad` (e.g. the row's key digest). */
export function sealSecret(ring: Keyring, secret: string, aad: Uint8Array): Buffer {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, nonce);
  cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  const id = Buffer.from(ring.current.id, 'ascii');
  return Buffer.concat([Buffer.from([VERSION, id.length]), id, nonce, cipher.getAuthTag(), ct]);
}

/** The id of the server key that sealed `box`, or undefined when it is not a box. */
export function boxKeyId(box: Uint8Array): string | undefined {
  if (box.length < 2 || box[0] !== VERSION) return undefined;
  const n = box[1]!;
  return box.length >= 2 + n + NONCE + TAG ? Buffer.from(box.subarray(2, 2 + n)).toString('ascii') : undefined;
}

/**
 * The secret in `box`, or undefined when it cannot be opened: unknown server key, wrong `aad`,
 * or altered bytes (GCM's tag fails).
 */
export function openSecret(ring: Keyring, box: Uint8Array, aad: Uint8Array): string | undefined {
  const id = boxKeyId(box);
  const key = id === undefined ? undefined : ring.byId.get(id);
  if (id === undefined || key === undefined) return undefined;
  const at = 2 + id.length;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, box.subarray(at, at + NONCE));
    decipher.setAAD(aad);
    decipher.setAuthTag(box.subarray(at + NONCE, at + NONCE + TAG));
    return Buffer.concat([decipher.update(box.subarray(at + NONCE + TAG)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
