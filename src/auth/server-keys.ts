/**
 * Where the server keys that seal signing secrets (secret-box.ts) come from: the setting
 * BLOCKWIRE_SERVER_SECRET_KEYS when it is set (every API process of a deployment gets the same
 * value), else the file `server-keys` under BLOCKWIRE_DATA_DIR (mode 0600), which the first
 * `blockwire keys create --secret` creates with one fresh key. Rotation: put a new key first
 * (`blockwire keys server-key --rotate` does it in the file; with the setting, prepend the line
 * `blockwire keys server-key` prints and restart), then `blockwire keys reseal` seals every
 * secret again under it, after which the old key can be removed.
 * @module
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newServerKeyLine, parseKeyring, type Keyring } from './secret-box.js';

export type ServerKeySource = { serverSecretKeys?: string | undefined; dataDir: string };

/** The file that holds the server keys when the setting is absent. */
export function serverKeyFile(source: ServerKeySource): string {
  return join(source.dataDir, 'server-keys');
}

const HEADER =
  '# Blockwire server keys: they seal the secrets of signing API keys. The first seals, all open.\n# Keep this file private (mode 0600) and back it up with the database: without it, secrets cannot be read.\n';

/**
 * The keyring, or undefined when there is none yet (no setting, no file). With `create`, a
 * missing file is created with one fresh key. Throws KeyringError when the text is malformed.
 */
export function loadKeyring(source: ServerKeySource, opts: { create?: boolean } = {}): Keyring | undefined {
  if (source.serverSecretKeys !== undefined && source.serverSecretKeys.trim() !== '') return parseKeyring(source.serverSecretKeys);
  const file = serverKeyFile(source);
  if (!existsSync(file)) {
    if (!opts.create) return undefined;
    mkdirSync(source.dataDir, { recursive: true });
    writeFileSync(file, `${HEADER}${newServerKeyLine()}\n`, { mode: 0o600, flag: 'wx' });
  }
  return parseKeyring(readFileSync(file, 'utf8'));
}

/**
 * Puts a new key first in the keyring file (the old keys stay after it, so every box still
 * opens); returns the new key's id. Only for the file: a keyring given by the setting is
 * rotated by changing the setting.
 */
export function rotateKeyringFile(source: ServerKeySource): string {
  const file = serverKeyFile(source);
  const old = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    : [];
  const line = newServerKeyLine();
  mkdirSync(source.dataDir, { recursive: true });
  writeFileSync(file, `${HEADER}${[line, ...old].join('\n')}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return line.slice(0, line.indexOf(':'));
}

/**
 * The keyring as a getter for long-running processes: parsed once from the setting; from the
 * file, read again when its modification time changed (looked at most once a second), so a key
 * created or rotated by the `keys` command is used without a restart. A malformed setting
 * throws at once; a malformed file leaves the last good keyring (and reports it through `onError`).
 */
export function keyringGetter(source: ServerKeySource, onError: (err: unknown) => void = () => {}): () => Keyring | undefined {
  if (source.serverSecretKeys !== undefined && source.serverSecretKeys.trim() !== '') {
    const ring = parseKeyring(source.serverSecretKeys);
    return () => ring;
  }
  const file = serverKeyFile(source);
  let ring: Keyring | undefined;
  let seenMtime = -1;
  let lookedAt = 0;
  return () => {
    const now = Date.now();
    if (now - lookedAt < 1000) return ring;
    lookedAt = now;
    try {
      const mtime = existsSync(file) ? statSync(file).mtimeMs : -1;
      if (mtime !== seenMtime) {
        seenMtime = mtime;
        ring = mtime < 0 ? undefined : parseKeyring(readFileSync(file, 'utf8'));
      }
    } catch (err) {
      onError(err);
    }
    return ring;
  };
}
