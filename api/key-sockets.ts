/**
 * WebSockets a process holds open on behalf of API keys: at most `maxPerKey` per key (a place is
 * taken in the same synchronous step as the count is read, so concurrent upgrades of a key cannot
 * pass the bound; upgrades still under way count), and every one of a key closed once the key is
 * revoked — checked for the keys named by each key notification (src/auth/key-events.ts, through
 * `checkKeys`), and for every key held each `checkMs` in case a notification was lost.
 * @module
 */
import type { Kysely } from 'kysely';
import type { WebSocket } from 'ws';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { liveApiKeyIds } from '../src/db/queries/api-keys.js';

/** A place taken for one connection of a key: `hold` it once upgraded, or `release` it. */
export type SocketPlace = {
  /** The upgraded socket takes the place until it closes. */
  hold(ws: WebSocket): void;
  /** The upgrade did not complete: the place is free again. */
  release(): void;
};

export type KeySockets = {
  /** A place for one more connection of `keyId`, or undefined when it holds `maxPerKey` already. */
  take(keyId: bigint): SocketPlace | undefined;
  /** Connections of the key held or being upgraded. */
  count(keyId: bigint): number;
  /** Closes the connections of those keys (every key held, without ids) that are no longer valid. */
  checkKeys(keyIds?: readonly bigint[]): Promise<void>;
  /** Stops the periodic check (the sockets themselves are their server's to close). */
  close(): void;
};

export function createKeySockets(deps: {
  db: Kysely<Database>;
  log: Logger;
  maxPerKey: number;
  checkMs: number;
  /** Close code and reason sent to a revoked key's connections. */
  revoked: { code: number; reason: string };
}): KeySockets {
  const held = new Map<bigint, Set<WebSocket>>();
  const upgrading = new Map<bigint, number>();
  const count = (keyId: bigint) => (held.get(keyId)?.size ?? 0) + (upgrading.get(keyId) ?? 0);
  const settle = (keyId: bigint) => {
    const n = (upgrading.get(keyId) ?? 1) - 1;
    if (n > 0) upgrading.set(keyId, n);
    else upgrading.delete(keyId);
  };

  async function checkKeys(keyIds?: readonly bigint[]): Promise<void> {
    const ids = (keyIds ?? [...held.keys()]).filter((id) => held.has(id));
    if (ids.length === 0) return;
    const live = await liveApiKeyIds(deps.db, ids);
    for (const id of ids) {
      if (live.has(id)) continue;
      for (const ws of held.get(id) ?? []) ws.close(deps.revoked.code, deps.revoked.reason);
      deps.log.info({ key: id.toString() }, 'API key revoked: its sockets closed');
    }
  }

  const sweep = setInterval(
    () => void checkKeys().catch((err: unknown) => deps.log.warn({ err }, 'socket key check failed')),
    deps.checkMs,
  );
  sweep.unref();

  return {
    count,
    take(keyId) {
      if (count(keyId) >= deps.maxPerKey) return undefined;
      upgrading.set(keyId, (upgrading.get(keyId) ?? 0) + 1);
      let settled = false;
      const once = () => {
        if (settled) return false;
        settled = true;
        settle(keyId);
        return true;
      };
      return {
        release: () => void once(),
        hold(ws) {
          if (!once()) return;
          let set = held.get(keyId);
          if (!set) held.set(keyId, (set = new Set()));
          set.add(ws);
          ws.once('close', () => {
            set.delete(ws);
            if (set.size === 0 && held.get(keyId) === set) held.delete(keyId);
          });
        },
      };
    },
    checkKeys,
    close() {
      clearInterval(sweep);
    },
  };
}
