/**
 * indexer/writer/copy-out.ts: binary COPY out read off the socket, cross-checked against
 * pg-copy-streams (the library it replaces on this hot path) on a real PostgreSQL: the same rows,
 * messages cut anywhere by the socket (rows from 0 bytes to several socket chunks), backpressure
 * through `after`, and errors (the server's, mid-COPY and before it; the reader's own) that fail
 * the query and leave the client usable.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyOut, CopyRowReader, eachCopyRow } from '../../../indexer/writer/copy-binary.js';
import { copyOutInto } from '../../../indexer/writer/copy-out.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;
let client: pg.Client;
beforeAll(async () => {
  t = await createTestDatabase('copyout');
  client = new pg.Client({ connectionString: t.url });
  await client.connect();
  // Sizes from empty to ~200 kB (several socket chunks), NULLs, and a key like the history's.
  await client.query(`CREATE TABLE rows AS
    SELECT i, md5(i::text)::uuid AS k,
           CASE WHEN i % 7 = 0 THEN NULL ELSE decode(repeat(lpad(to_hex(i % 256), 2, '0'), (i * 7919) % 300), 'hex') END AS b
    FROM generate_series(1, 40000) i
    UNION ALL SELECT 40000 + j, NULL, decode(repeat('ab', 100000 * j), 'hex') FROM generate_series(1, 3) j`);
});
afterAll(async () => {
  await client?.end();
  await t?.drop();
});

type Row = [number, string | null, string | null];
const collect = (out: Row[]) =>
  new CopyRowReader(3, (d, at, len) =>
    out.push([
      d.readInt32BE(at[0]!),
      at[1]! < 0 ? null : d.toString('hex', at[1]!, at[1]! + len[1]!),
      at[2]! < 0 ? null : d.toString('hex', at[2]!, at[2]! + len[2]!),
    ]),
  );
const QUERY = 'SELECT i, k, b FROM rows ORDER BY i';

describe('copyOutInto', () => {
  it('reads the same rows as pg-copy-streams, every message whole wherever the socket cut it', async () => {
    const expected: Row[] = [];
    eachCopyRow(await copyOut(client, QUERY), 3, (d, at, len) =>
      expected.push([
        d.readInt32BE(at[0]!),
        at[1]! < 0 ? null : d.toString('hex', at[1]!, at[1]! + len[1]!),
        at[2]! < 0 ? null : d.toString('hex', at[2]!, at[2]! + len[2]!),
      ]),
    );
    const got: Row[] = [];
    let afters = 0;
    const n = await copyOutInto(client, QUERY, collect(got), async () => {
      afters++;
      // A slow consumer: the socket waits for it.
      await new Promise((r) => setTimeout(r, afters % 50 === 0 ? 5 : 0));
    });
    expect(n).toBe(40_003);
    expect(got.length).toBe(40_003);
    expect(got).toEqual(expected);
    expect(got.filter((r) => r[2] === null).length).toBe(Math.floor(40_000 / 7));
    expect(got.filter((r) => r[1] === null).length).toBe(3);
    expect(got[got.length - 1]![2]!.length).toBe(2 * 300_000);
    expect(afters).toBeGreaterThan(1);
    // The client is back to normal.
    expect((await client.query<{ n: number }>('SELECT 41 + 1 AS n')).rows[0]!.n).toBe(42);
  });

  it('reads an empty result and a result of one row', async () => {
    expect(await copyOutInto(client, 'SELECT i, k, b FROM rows WHERE false', collect([]))).toBe(0);
    const one: Row[] = [];
    expect(await copyOutInto(client, 'SELECT i, k, b FROM rows WHERE i = 2', collect(one))).toBe(1);
    expect(one[0]![0]).toBe(2);
  });

  it("fails with the server's error raised mid-COPY, and the client stays usable", async () => {
    const got: Row[] = [];
    await expect(
      // (no ORDER BY: the rows go out as the scan reaches them, the error at the 30,000th)
      copyOutInto(client, 'SELECT i, k, CASE WHEN i < 30000 THEN b ELSE b || int4send(1 / (i - 30000)) END FROM rows', collect(got)),
    ).rejects.toThrow(/division by zero/);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(30_000);
    expect((await client.query<{ n: number }>('SELECT 7 AS n')).rows[0]!.n).toBe(7);
  });

  it('fails with the error of a query the server refuses before any data', async () => {
    await expect(copyOutInto(client, 'SELECT nope FROM rows', collect([]))).rejects.toThrow(/column "nope" does not exist/);
    expect((await client.query<{ n: number }>('SELECT 8 AS n')).rows[0]!.n).toBe(8);
  });

  it("fails with the reader's error (a row of another shape), after reading the rest: the client stays usable", async () => {
    const r = new CopyRowReader(2, () => {});
    await expect(copyOutInto(client, QUERY, r)).rejects.toThrow('binary COPY row of 3 fields, expected 2');
    expect((await client.query<{ n: number }>('SELECT 9 AS n')).rows[0]!.n).toBe(9);
  });

  it("fails with `after`'s error and the client stays usable", async () => {
    await expect(
      copyOutInto(client, QUERY, collect([]), async () => {
        throw new Error('the consumer broke');
      }),
    ).rejects.toThrow('the consumer broke');
    expect((await client.query<{ n: number }>('SELECT 10 AS n')).rows[0]!.n).toBe(10);
  });

  it('refuses a connection whose socket node-postgres does not read alone, before sending anything', async () => {
    const stream = (client as unknown as { connection: { stream: NodeJS.EventEmitter } }).connection.stream;
    const other = () => {};
    stream.on('data', other);
    try {
      await expect(copyOutInto(client, QUERY, collect([]))).rejects.toThrow('copy out: the connection has 2 data listeners');
    } finally {
      stream.removeListener('data', other);
    }
    expect((await client.query<{ n: number }>('SELECT 11 AS n')).rows[0]!.n).toBe(11);
  });

  it('fails when the connection is cut mid-COPY', async () => {
    const c = new pg.Client({ connectionString: t.url });
    await c.connect();
    c.on('error', () => {});
    const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    let killed = false;
    await expect(
      copyOutInto(c, QUERY, collect([]), async () => {
        if (killed) return;
        killed = true;
        await client.query('SELECT pg_terminate_backend($1)', [pid]);
      }),
    ).rejects.toThrow();
    await c.end().catch(() => {});
  });
});
