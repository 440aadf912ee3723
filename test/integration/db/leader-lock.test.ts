/**
 * The leader lock on real sessions: one holder at a time; a holder's session set up so that the
 * server ends it when its holder is gone (TCP keepalives, an idle limit), so that a stopped
 * holder (alive socket, no statements) loses the lock to the next one that tries; released, the
 * lock and the session's settings go back.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdsLeaderLock, leaderIdleMs, releaseLeaderLock, sqlOnClient, tryLeaderLock } from '../../../src/db/leader-lock.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';

/** The backend pid of a session (pg sets it on connect; its types leave it out). */
const pidOf = (c: pg.Client) => (c as pg.Client & { processID: number }).processID;

/** A lock of this test's own, apart from the product's. */
const KEY = 0x4257_5445_5354_4c4bn;

describe('leader lock', () => {
  let t: TestDatabase;
  const clients: pg.Client[] = [];
  const session = async () => {
    const c = new pg.Client({ connectionString: t.url });
    c.on('error', () => undefined); // a session the server ends is expected here
    await c.connect();
    clients.push(c);
    return c;
  };
  const show = async (c: pg.Client, setting: string) => (await c.query<Record<string, string>>(`SHOW ${setting}`)).rows[0]![setting];
  const refused: unknown[] = [];
  const onUnset = (err: unknown) => refused.push(err);

  beforeAll(async () => {
    t = await createTestDatabase('leader');
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => {});
    await t?.drop();
  });

  it('one holder at a time, its session set up to end with a dead holder; released, all of it goes back', async () => {
    const [a, b] = [await session(), await session()];
    const pidA = await tryLeaderLock(sqlOnClient(a), KEY, 20_000, onUnset);
    expect(pidA).toBe(pidOf(a));
    expect(await tryLeaderLock(sqlOnClient(b), KEY, 20_000, onUnset)).toBeNull();
    expect(await holdsLeaderLock(sqlOnClient(b), KEY, pidA!)).toBe(true);
    expect(await holdsLeaderLock(sqlOnClient(b), KEY, pidOf(b))).toBe(false);
    expect(refused).toEqual([]);
    expect(await show(a, 'idle_session_timeout')).toBe('20s');
    expect(await show(a, 'idle_in_transaction_session_timeout')).toBe('20s');
    expect([await show(a, 'tcp_keepalives_idle'), await show(a, 'tcp_keepalives_interval'), await show(a, 'tcp_keepalives_count')]).toEqual(
      ['10', '5', '3'],
    );
    // The one that lost the race keeps its session as it was.
    expect(await show(b, 'idle_session_timeout')).toBe('0');

    await releaseLeaderLock(sqlOnClient(a), KEY);
    expect(await holdsLeaderLock(sqlOnClient(b), KEY, pidA!)).toBe(false);
    expect(await show(a, 'idle_session_timeout')).toBe('0');
    expect(await show(a, 'tcp_keepalives_idle')).not.toBe('10');
    expect(await tryLeaderLock(sqlOnClient(b), KEY, 20_000, onUnset)).toBe(pidOf(b));
    await releaseLeaderLock(sqlOnClient(b), KEY);
  });

  it('a holder that stops using its session loses the lock to a standby; back, it learns it has', async () => {
    const [stopped, standby] = [await session(), await session()];
    const pid = await tryLeaderLock(sqlOnClient(stopped), KEY, 1000, onUnset);
    expect(pid).not.toBeNull();
    // The holder issues nothing more, as a stopped process would; its socket stays open.
    let took: number | null = null;
    await waitFor(
      'the standby to take the lock',
      async () => (took = await tryLeaderLock(sqlOnClient(standby), KEY, 20_000, onUnset)) !== null,
      30_000,
      200,
    );
    expect(took).toBe(pidOf(standby));
    expect(await holdsLeaderLock(sqlOnClient(standby), KEY, pid!)).toBe(false);
    await expect(stopped.query('SELECT 1')).rejects.toThrow();
    await releaseLeaderLock(sqlOnClient(standby), KEY);
  });

  it('the idle limit is three beats, never under 15 s', () => {
    expect(leaderIdleMs(100)).toBe(15_000);
    expect(leaderIdleMs(10_000)).toBe(30_000);
  });
});
