/**
 * The relay cursor under a backlog (streams/relay.ts): a full batch's cursor is written with the
 * next batch's delivery log rows, in their transaction (one commit per batch), and never before
 * its own batch is logged; a batch that leaves the relay idle writes its cursor at once. A
 * trigger on `stream_state` records every write of the cursor with the transaction that made it
 * and how many delivery rows of the hook were logged then.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { silentLogger } from '../../../src/log.js';
import { startRelay, type Relay } from '../../../streams/relay.js';
import { createDeliveryQueues, type DeliveryQueues } from '../../../streams/queues.js';
import { createStreamsFixture, insertEvents, newAddress, relaySettings, txEvents, type StreamsFixture } from './harness.js';
import { waitFor } from '../../support/wait.js';

/** Events per relay batch here. */
const BATCH = 3;

describe('relay cursor: written with the next batch’s log rows, never ahead of its own', () => {
  let f: StreamsFixture;
  let publisher: Redis;
  let queues: DeliveryQueues;
  let relay: Relay | undefined;

  beforeAll(async () => {
    f = await createStreamsFixture();
    publisher = new Redis(f.redisUrl, { maxRetriesPerRequest: 1 });
    queues = createDeliveryQueues({ redisUrl: f.redisUrl, prefix: f.prefix });
    await sql`CREATE TABLE cursor_writes (n serial PRIMARY KEY, seq int8, xact xid8, logged int4)`.execute(f.t.db);
    await sql`CREATE FUNCTION record_cursor() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.name = 'relay' AND NEW.seq IS DISTINCT FROM OLD.seq THEN
          INSERT INTO cursor_writes (seq, xact, logged)
          VALUES (NEW.seq, pg_current_xact_id(), (SELECT count(*) FROM deliveries WHERE event_id <= NEW.seq));
        END IF;
        RETURN NEW;
      END $$`.execute(f.t.db);
    await sql`CREATE TRIGGER record_cursor AFTER UPDATE ON stream_state FOR EACH ROW EXECUTE FUNCTION record_cursor()`.execute(f.t.db);
  });
  afterAll(async () => {
    await relay?.stop();
    await queues?.close();
    publisher?.disconnect();
    await f?.drop();
  });

  it('moves the cursor in the transaction of the next batch, and to the end once idle', async () => {
    const k = await f.newKey();
    const addr = newAddress();
    // (a hook that is never reached: no worker runs here, the rows stay as the relay wrote them)
    const hook = await f.httpHook(k.id, 'http://127.0.0.1:9/hook');
    await f.subscribe(k.id, { ...addr, hookId: hook.id });
    // A backlog before the relay starts: 3 full batches and one of 2.
    const seqs = await insertEvents(f.t.db, txEvents(addr, 3 * BATCH + 2));
    const last = seqs[seqs.length - 1]!;

    relay = startRelay({ db: f.t.db, publisher, queues, log: silentLogger(), settings: relaySettings(f.prefix, { batchSize: BATCH }) });
    const cursor = async () =>
      (await f.t.db.selectFrom('stream_state').select('seq').where('name', '=', 'relay').executeTakeFirstOrThrow()).seq;
    await waitFor('cursor at the last event', async () => (await cursor()) === last, 30_000);

    const writes = (
      await sql<{ seq: string; xact: string; logged: number }>`SELECT seq::text, xact::text, logged FROM cursor_writes ORDER BY n`.execute(
        f.t.db,
      )
    ).rows.map((w) => ({ seq: BigInt(w.seq), xact: w.xact, logged: Number(w.logged) }));
    // Never ahead of the log: every event up to the cursor has its delivery row when it moves.
    for (const w of writes) expect(w.logged).toBe(seqs.filter((s) => s <= w.seq).length);
    expect(writes[writes.length - 1]!.seq).toBe(last);
    // The cursors of the first three (full) batches went with the next batch's rows: in the
    // transaction that inserted the next batch's first delivery.
    const rowXact = async (seq: bigint) =>
      (await sql<{ x: string }>`SELECT xmin::text AS x FROM deliveries WHERE event_id = ${seq.toString()}::int8`.execute(f.t.db)).rows[0]!
        .x;
    for (let b = 0; b < 3; b++) {
      const full = seqs[b * BATCH + BATCH - 1]!;
      const w = writes.find((x) => x.seq === full);
      expect(w, `cursor write of batch ${b + 1}`).toBeDefined();
      // (xid8 is the epoch-qualified xmin; within the first epoch the two are equal)
      expect(w!.xact).toBe(await rowXact(seqs[(b + 1) * BATCH]!));
    }
    // Four batches, four cursor writes: the last (not full) one on its own.
    expect(writes.map((w) => w.seq)).toEqual([seqs[2], seqs[5], seqs[8], last]);
  });
});
