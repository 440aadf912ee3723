/**
 * `withClientOf` (src/db/connect.ts): a COPY sent on a transaction's pg client holds the
 * transaction's connection, so statements issued without awaiting run in the order they were
 * issued and the client never holds two queries at once (pg 8 queues a second one with a
 * deprecation warning; pg 9 refuses it). The per-block writer relies on it to send its
 * statements back to back (indexer/writer/apply.ts).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { withClientOf } from '../../../src/db/connect.js';
import { BinaryCopy, copyIn } from '../../../indexer/writer/copy-binary.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('clientof');
  await sql`CREATE TABLE copied (n int4 NOT NULL)`.execute(t.db);
});
afterAll(async () => {
  await t?.drop();
});

it('runs a COPY and the statements issued after it in issue order, one query at a time', async () => {
  const c = new BinaryCopy();
  for (let i = 0; i < 50_000; i++) c.row(1).int4(i);
  const data = c.finish();
  const counts = await t.db.transaction().execute(async (trx) => {
    let busy = 0;
    let overlapped = 0;
    const copy = withClientOf(trx, async (client) => {
      // Any query this client gets once the COPY is sent and until it ends would overlap it.
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
        if (busy > 0) overlapped++;
        return query(...a);
      };
      const copying = copyIn(client, 'copied (n)', data);
      busy++;
      try {
        await copying;
      } finally {
        busy--;
        (client as unknown as { query: unknown }).query = query;
      }
    });
    // Issued before the COPY has ended: runs after it, so it sees every copied row.
    const after = sql<{ n: number }>`SELECT count(*)::int4 AS n FROM copied`.execute(trx);
    await copy;
    return { after: (await after).rows[0]!.n, overlapped };
  });
  expect(counts).toEqual({ after: 50_000, overlapped: 0 });
});
