/**
 * What a newcomer meets when something is wrong, as real `blockwire start` processes:
 * - a port it was told to use is busy: refused before anything starts, naming the setting;
 * - dependencies that are wrong are all named at once, each with its setting, its target
 *   (password hidden) and the likely fix — an RPC URL pointing at a ZMQ port (the parser's
 *   HPE_INVALID_CONSTANT), a DATABASE_URL and a REDIS_URL where nothing listens;
 * - Ctrl-C while it waits for a node that does not listen yet exits at once with 130.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Publisher } from 'zeromq';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { freePort } from '../../../cli/embedded/free-port.js';
import { spawnBlockwire } from './processes.js';

let db: TestDatabase;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  db = await createTestDatabase('firstrun');
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  busyPort = (busy.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((r) => busy.close(() => r()));
  await db?.drop();
});

describe('blockwire start: first-run failures name the setting and the fix', () => {
  it('a busy PORT the user set: exit 2 before anything starts, naming the setting', async () => {
    const proc = spawnBlockwire('busy-port', ['start'], {
      PORT: String(busyPort),
      DATABASE_URL: db.url,
      REDIS_URL: inject('redisUrl'),
      BITCOIND_RPC_URL: 'http://u:p@127.0.0.1:1',
    });
    expect(await proc.exited).toBe(2);
    const out = proc.output();
    expect(out).toContain(
      `PORT ${busyPort} on 127.0.0.1 (the REST API and stream) is in use by another process: stop what holds it or set PORT to a free port`,
    );
    expect(proc.lines).toEqual([]); // no log line: nothing was started
  });

  it('every wrong dependency at once: the RPC URL on a ZMQ port, DATABASE_URL and REDIS_URL with nothing listening', async () => {
    const zmq = new Publisher();
    const zmqPort = await freePort();
    await zmq.bind(`tcp://127.0.0.1:${zmqPort}`);
    const [pgPort, redisPort] = [await freePort(), await freePort()];
    try {
      const proc = spawnBlockwire('wrong-deps', ['start'], {
        PORT: '0',
        DATABASE_URL: `postgres://blockwire:secret@127.0.0.1:${pgPort}/blockwire`,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        BITCOIND_RPC_URL: `http://user:hunter2@127.0.0.1:${zmqPort}`,
      });
      expect(await proc.exited).toBe(1);
      const out = proc.output();
      expect(out).toContain('blockwire start: cannot use what is configured:');
      expect(out).toContain(
        `BITCOIND_RPC_URL http://user:***@127.0.0.1:${zmqPort}: what answers at 127.0.0.1:${zmqPort} is not bitcoind's JSON-RPC (HPE_INVALID_CONSTANT)`,
      );
      expect(out).toMatch(/Point BITCOIND_RPC_URL at bitcoind's -rpcport/);
      expect(out).toContain(
        `DATABASE_URL postgres://blockwire:***@127.0.0.1:${pgPort}/blockwire: nothing listens at 127.0.0.1:${pgPort} (connection refused). Is PostgreSQL running there`,
      );
      expect(out).toContain(
        `REDIS_URL redis://127.0.0.1:${redisPort}: nothing listens at 127.0.0.1:${redisPort} (connection refused). Is redis-server running there`,
      );
      expect(out).not.toContain('hunter2');
      expect(out).not.toContain('secret');
      expect(out).not.toMatch(/\n\s+at .*\.(ts|js):\d+/); // no stack trace
    } finally {
      zmq.close();
    }
  });

  it('Ctrl-C while waiting for a node that does not listen yet exits at once with 130', async () => {
    const nodePort = await freePort();
    const proc = spawnBlockwire('ctrl-c', ['start'], {
      PORT: '0',
      DATABASE_URL: db.url,
      REDIS_URL: inject('redisUrl'),
      BITCOIND_RPC_URL: `http://u:p@127.0.0.1:${nodePort}`,
    });
    const waiting = await proc.waitForLog(/^waiting for bitcoind: BITCOIND_RPC_URL http:\/\/u:\*\*\*@127\.0\.0\.1:\d+: nothing listens/);
    expect(waiting.setting).toBe('BITCOIND_RPC_URL');
    proc.child.kill('SIGINT');
    // A start that ignored the signal would be ended by the graceful-stop limit (30 s) with 1.
    expect(await proc.exited, proc.output().slice(-2000)).toBe(130);
    expect(proc.output()).not.toContain('graceful stop took too long');
  });
});
