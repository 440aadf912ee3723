import { describe, expect, it, inject } from 'vitest';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { createTestDatabase } from '../../support/db.js';

describe('test harness services', () => {
  it('gives each file its own real PostgreSQL database', async () => {
    const a = await createTestDatabase();
    const b = await createTestDatabase();
    try {
      expect(a.name).not.toBe(b.name);
      await sql`CREATE TABLE marker (x int)`.execute(a.db);
      const inB = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'marker'`.execute(b.db);
      expect(inB.rows[0]?.n).toBe(0);
      const version = await sql<{ v: string }>`SELECT current_setting('server_version') AS v`.execute(a.db);
      expect(Number.parseInt(version.rows[0]!.v, 10)).toBeGreaterThanOrEqual(15);
      const big = await sql<{ x: bigint }>`SELECT 9007199254740993::int8 AS x`.execute(a.db);
      expect(big.rows[0]?.x).toBe(9007199254740993n);
    } finally {
      await Promise.all([a.drop(), b.drop()]);
    }
  });

  it('gives a real Redis with noeviction', async () => {
    const redis = new Redis(inject('redisUrl'));
    try {
      expect(await redis.ping()).toBe('PONG');
      const policy = (await redis.config('GET', 'maxmemory-policy')) as string[];
      expect(policy[1]).toBe('noeviction');
    } finally {
      redis.disconnect();
    }
  });
});
