/**
 * Long polling of the event log, for hosts where WebSockets are blocked (GET /v1/events): the
 * events of one API key after an event id, exactly as its stream would carry them (the same
 * outbox rows up to the relay cursor, the same matching, the same JSON), waiting up to a given
 * time for the first one. Waiting costs one read of the relay cursor per tick for all waiters of
 * the process together, nothing per waiter.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import { ServiceError } from '../src/errors.js';
import { decodeOutboxRows } from './events.js';
import { deliveryJson, indexSubscriptions, matchEvents } from './match.js';
import { readNewestEventId, readOutboxForKey, readRelayAndTip, readStreamState } from './outbox.js';
import { loadKeySubscriptions } from './subscriptions.js';

/**
 * Events of a key after `after` (JSON payloads, in order), the id to resume after, and the
 * indexed tip read with the relay cursor the answer was read up to.
 */
export type PollAnswer = { events: string[]; next: bigint; tip: { height: number; hash: Buffer | null } };

export type EventPoll = {
  /**
   * The key's events after `after` (undefined: after the newest), waiting up to `waitMs` for the
   * first; the events of at most `limit` outbox rows. `signal` ends the wait early (the client went away).
   */
  poll(keyId: bigint, after: bigint | undefined, opts: { waitMs: number; limit: number; signal?: AbortSignal }): Promise<PollAnswer>;
  stop(): void;
};

export function createEventPoll(deps: { db: Kysely<Database>; log: Logger; tickMs?: number }): EventPoll {
  const { db } = deps;
  const tickMs = deps.tickMs ?? 250;
  // Waiters of the next change of the relay cursor, woken by one shared tick.
  const waiters = new Set<() => void>();
  let relay = -1n;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    timer = undefined;
    try {
      const now = (await readStreamState(db)).relay;
      if (now !== relay) {
        relay = now;
        for (const w of [...waiters]) w();
      }
    } catch (err) {
      deps.log.warn({ err }, 'event poll: relay cursor not read');
    }
    if (waiters.size > 0 && !stopped) timer = setTimeout(() => void tick(), tickMs);
  };
  let stopped = false;
  /** Resolves at the relay cursor's next move, at `until`, or when `signal` aborts. */
  const nextMove = (until: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      const done = () => {
        waiters.delete(done);
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, Math.max(0, until - Date.now()));
      signal?.addEventListener('abort', done);
      waiters.add(done);
      if (timer === undefined) timer = setTimeout(() => void tick(), tickMs);
    });

  return {
    async poll(keyId, after, { waitMs, limit, signal }) {
      const state = await readStreamState(db);
      let cursor = after ?? state.relay;
      if (after !== undefined) {
        const newest = await readNewestEventId(db);
        if (after > newest)
          throw new ServiceError('ERR_INVALID_CURSOR', {
            message: `after ${after} is beyond the newest event, ${newest}: resume from an event id you received, or poll without after`,
            errorCause: String(newest),
          });
        if (after < state.pruned)
          throw new ServiceError('ERR_INVALID_CURSOR', {
            message: `cursor expired: events up to ${state.pruned} are past the retention; resume from ${state.pruned} or later, or poll without after`,
            errorCause: String(state.pruned),
          });
      }
      const until = Date.now() + waitMs;
      for (;;) {
        const { relay: upTo, tip } = await readRelayAndTip(db);
        if (upTo > cursor) {
          const subs = await loadKeySubscriptions(db, keyId);
          const index = indexSubscriptions(subs);
          const filter = {
            keyId,
            addrKeys: [...new Set(subs.flatMap((s) => (s.addrKey ? [s.addrKey] : [])))],
            chain: subs.some((s) => s.kind === 'chain'),
          };
          const events: string[] = [];
          // (rows of the key's addresses or its own; each row read is consumed, however many of
          // the key's subscriptions it matches)
          while (cursor < upTo && events.length < limit) {
            const rows = await readOutboxForKey(db, filter, { after: cursor, upTo, limit });
            const decoded = decodeOutboxRows(rows, (row, err) => deps.log.error({ seq: row.seq.toString(), err }, 'outbox row skipped'));
            for (const d of matchEvents(decoded, index)) if (d.keyId === keyId) events.push(deliveryJson(d));
            cursor = rows.length < limit ? upTo : rows[rows.length - 1]!.seq;
          }
          if (events.length > 0) return { events, next: cursor, tip };
        }
        if (Date.now() >= until || signal?.aborted || stopped) return { events: [], next: cursor, tip };
        await nextMove(until, signal);
      }
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      for (const w of [...waiters]) w();
    },
  };
}
