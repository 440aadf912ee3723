/**
 * The relay is told of new events, not polling: a committed outbox row wakes it through
 * PostgreSQL NOTIFY (streams/outbox-wakeup.ts) and reaches a stream client while the poll
 * interval is far longer than the test waits. When the listening connection is lost
 * (pg_terminate_backend) the poll still relays, and a reconnect listens again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { silentLogger } from '../../../src/log.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { startRelay, type Relay, type RelaySettings } from '../../../streams/relay.js';
import { createDeliveryQueues, type DeliveryQueues } from '../../../streams/queues.js';
import { listenOutbox, type OutboxWakeup } from '../../../streams/outbox-wakeup.js';
import {
  connectStream,
  createStreamsFixture,
  insertEvents,
  newAddress,
  relaySettings,
  streamsConfig,
  txEvents,
  type StreamsFixture,
} from './harness.js';
import { waitFor } from '../../support/wait.js';

/** The longest poll interval the setting allows: far beyond every wait of this file. */
const LONG_POLL_MS = 60_000;
/** How long an event may take to arrive when told (generous: a loaded machine). */
const TOLD_WITHIN_MS = 20_000;

/** Ends the listening connections of `applicationName` in the test's database. */
async function terminate(f: StreamsFixture, applicationName: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(pg_terminate_backend(pid))::int4 AS n FROM pg_stat_activity
     WHERE application_name = ${applicationName} AND datname = current_database()`.execute(f.t.db);
  return r.rows[0]!.n;
}

describe('relay wake-up: a committed outbox row reaches a stream client without the poll', () => {
  let f: StreamsFixture;
  let streams: StreamsHandle;

  beforeAll(async () => {
    f = await createStreamsFixture();
    streams = await startStreams({
      config: streamsConfig({ relayPollMs: LONG_POLL_MS }),
      log: silentLogger(),
      db: f.t.db,
      databaseUrl: f.t.url,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    });
  });
  afterAll(async () => {
    await streams?.stop();
    await f?.drop();
  });

  it('delivers each new event while the poll interval is a minute', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    await f.subscribe(k.id, addr);
    const client = await connectStream(`ws://127.0.0.1:${streams.port}/v1/stream`, k.key);
    await waitFor('stream live', () => client.messages.some((m) => m.type === 'stream.live'), 30_000);

    try {
      // After each pass the relay waits a whole poll interval unless it is told: every row here
      // comes by NOTIFY.
      for (let i = 1; i <= 3; i++) {
        const [seq] = await insertEvents(f.t.db, txEvents(addr, 1));
        await waitFor(`event ${i} on the stream`, () => client.events().some((e) => e.id === Number(seq)), TOLD_WITHIN_MS);
      }
      expect(client.events().map((e) => e.type)).toEqual(['tx.unconfirmed', 'tx.unconfirmed', 'tx.unconfirmed']);
    } finally {
      client.close();
    }
  });
});

describe('relay wake-up: a lost listening connection', () => {
  let f: StreamsFixture;
  let publisher: Redis;
  let queues: DeliveryQueues;
  const running: { relay: Relay; wakeup: OutboxWakeup }[] = [];

  beforeAll(async () => {
    f = await createStreamsFixture();
    publisher = new Redis(f.redisUrl, { maxRetriesPerRequest: 1 });
    queues = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
  });
  afterAll(async () => {
    for (const r of running) {
      await r.relay.stop();
      await r.wakeup.close();
    }
    await queues?.close();
    publisher?.disconnect();
    await f?.drop();
  });

  const settings = (pollMs: number): RelaySettings => relaySettings(f.prefix, { pollMs });

  async function start(applicationName: string, retryMs: number, pollMs: number): Promise<{ relay: Relay; wakeup: OutboxWakeup }> {
    const wakeup = await listenOutbox({ databaseUrl: f.t.url, applicationName, log: silentLogger(), retryMs });
    const relay = startRelay({ db: f.t.db, publisher, queues, log: silentLogger(), settings: settings(pollMs), wakeup });
    running.push({ relay, wakeup });
    await waitFor('relay active', () => relay.active, 30_000);
    return { relay, wakeup };
  }

  const cursor = async () =>
    (await f.t.db.selectFrom('stream_state').select('seq').where('name', '=', 'relay').executeTakeFirstOrThrow()).seq;

  it('still relays by polling while notifications are lost', async () => {
    // No reconnect within the test: only the poll can relay what follows the kill.
    const { relay, wakeup } = await start('blockwire-test-wakeup-lost', 3_600_000, 300);
    expect(wakeup.listening).toBe(true);
    expect(await terminate(f, 'blockwire-test-wakeup-lost')).toBe(1);
    await waitFor('listening connection lost', () => !wakeup.listening, 10_000);

    const before = relay.relayed;
    const [seq] = await insertEvents(f.t.db, txEvents(newAddress(), 1));
    await waitFor('event relayed by the poll', async () => (await cursor()) >= seq!, TOLD_WITHIN_MS);
    expect(relay.relayed).toBeGreaterThan(before);
    expect(wakeup.listening).toBe(false);
    await relay.stop();
  });

  it('listens again after a reconnect and is told of new events', async () => {
    const { wakeup } = await start('blockwire-test-wakeup-back', 200, LONG_POLL_MS);
    expect(await terminate(f, 'blockwire-test-wakeup-back')).toBe(1);
    await waitFor('listening connection lost', () => !wakeup.listening, 10_000);
    await waitFor('listening again', () => wakeup.listening, 10_000);

    for (let i = 1; i <= 2; i++) {
      const [seq] = await insertEvents(f.t.db, txEvents(newAddress(), 1));
      await waitFor(`event ${i} relayed`, async () => (await cursor()) >= seq!, TOLD_WITHIN_MS);
    }
  });
});
