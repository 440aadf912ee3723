/**
 * A stream process's view of the relay: the Redis channel's batches, turned into a gap-free,
 * duplicate-free sequence of `FeedBatch`es. `position` is the highest seq delivered so far; a
 * batch starting above it (a message lost while Redis reconnected, or a hub that started late)
 * is preceded by a fill from Postgres, matched here exactly as the relay matches; a batch
 * already covered is trimmed or dropped. A periodic check of the relay cursor fills gaps even
 * when no further message comes. Batches are handled one at a time, in order.
 * @module
 */
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { Logger } from '../../src/log.js';
import { decodeOutboxRows } from '../events.js';
import { deliveryJson, indexSubscriptions, matchEvents } from '../match.js';
import { readOutbox, readStreamState } from '../outbox.js';
import { loadSubscriptionsFor } from '../subscriptions.js';
import { decodeFeedBatch, type FeedBatch } from '../feed-message.js';

export type FeedDeps = {
  db: Kysely<Database>;
  /** A connection this feed owns: it is put in subscriber mode. */
  subscriber: Redis;
  channel: string;
  log: Logger;
  /** Called for every batch, in order, synchronously. */
  onBatch: (batch: FeedBatch) => void;
  /** How often the relay cursor is checked for gaps no message announced. */
  checkMs: number;
  fillPage?: number;
};

export type Feed = {
  /** Every event up to this seq has been handed to onBatch. */
  readonly position: bigint;
  stop(): Promise<void>;
};

/** Subscribes, reads the starting position (the relay cursor) and starts delivering. */
export async function startFeed(deps: FeedDeps): Promise<Feed> {
  const log = deps.log.child({ component: 'streams.feed' });
  const page = deps.fillPage ?? 1000;
  let position = 0n;
  // Messages wait behind the start position (read after subscribing, below).
  let started: () => void = () => undefined;
  let chain: Promise<void> = new Promise<void>((r) => (started = r));
  let stopped = false;

  const emit = (b: FeedBatch) => {
    if (b.to <= position) return;
    const from = position;
    const items = b.from >= from ? b.items : b.items.filter((i) => i.seq > from);
    position = b.to;
    deps.onBatch({ from, to: b.to, items });
  };

  /** Matches and emits events in (position, upTo] from Postgres. */
  async function fill(upTo: bigint): Promise<void> {
    while (position < upTo && !stopped) {
      const rows = await readOutbox(deps.db, { after: position, upTo, limit: page });
      const events = decodeOutboxRows(rows, (row, err) => log.error({ seq: row.seq.toString(), err }, 'outbox row skipped'));
      const deliveries = matchEvents(events, indexSubscriptions(await loadSubscriptionsFor(deps.db, events)));
      const to = rows.length < page ? upTo : rows[rows.length - 1]!.seq;
      emit({ from: position, to, items: deliveries.map((d) => ({ keyId: d.keyId, seq: d.event.seq, json: deliveryJson(d) })) });
    }
  }

  function handle(batch: FeedBatch): Promise<void> {
    chain = chain
      .then(async () => {
        if (batch.to <= position) return;
        if (batch.from > position) {
          log.info({ from: position.toString(), to: batch.from.toString() }, 'feed gap: filling from Postgres');
          await fill(batch.from);
        }
        emit(batch);
      })
      .catch((err) => log.warn({ err }, 'feed batch failed; the next check fills the gap'));
    return chain;
  }

  const onMessage = (channel: string, message: string) => {
    if (channel !== deps.channel) return;
    let batch: FeedBatch;
    try {
      batch = decodeFeedBatch(message);
    } catch (err) {
      log.warn({ err }, 'unreadable feed message ignored');
      return;
    }
    void handle(batch);
  };
  deps.subscriber.on('message', onMessage);
  await deps.subscriber.subscribe(deps.channel);
  // Subscribed first, then the start position: a batch published in between is trimmed, not lost.
  position = (await readStreamState(deps.db)).relay;
  started();

  const check = setInterval(() => {
    chain = chain
      .then(async () => {
        const relay = (await readStreamState(deps.db)).relay;
        if (relay > position) await fill(relay);
      })
      .catch((err) => log.warn({ err }, 'feed check failed'));
  }, deps.checkMs);
  check.unref();

  return {
    get position() {
      return position;
    },
    async stop() {
      stopped = true;
      clearInterval(check);
      deps.subscriber.off('message', onMessage);
      await chain;
      await deps.subscriber.unsubscribe(deps.channel).catch(() => undefined);
    },
  };
}
