/**
 * A ZMQ endpoint that never speaks (here a real ZeroMQ publisher that publishes nothing, as a
 * wrong BITCOIND_ZMQ_URL or a bitcoind without -zmqpub… would be): the index still follows the
 * node by polling, and the indexer says so — its status marks ZMQ silent once blocks arrived that
 * no message announced, the heartbeat carries it, and `blockwire status` prints the warning while
 * staying HEALTHY (exit 0).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Publisher } from 'zeromq';
import { startBlockwire, type Blockwire } from '../../../cli/compose.js';
import { startDevnode, type Devnode } from '../../../devnode/index.js';
import { testConfig } from '../../../src/config.js';
import { freePort } from '../../../cli/embedded/free-port.js';
import { silentLogger } from '../../../src/log.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';
import { waitFor } from '../../support/wait.js';

const run = promisify(execFile);

let node: Devnode;
let t: TestDatabase;
let bw: Blockwire;
let mute: Publisher;
let muteUrl: string;

beforeAll(async () => {
  node = await startDevnode({ initialBlocks: 101 });
  t = await createMigratedDatabase('zmqsilent');
  mute = new Publisher();
  muteUrl = `tcp://127.0.0.1:${await freePort()}`;
  await mute.bind(muteUrl);
  const config = testConfig({
    network: 'regtest',
    bitcoindRpcUrl: node.rpcUrl,
    bitcoindZmqUrl: muteUrl,
    databaseUrl: t.url,
    pollIntervalMs: 200,
  });
  bw = await startBlockwire({
    config,
    log: silentLogger(),
    roles: new Set(['indexer']),
    db: t.db,
    databaseUrl: t.url,
    zmqUrl: muteUrl,
    heartbeatMs: 200,
  });
}, 180_000);

afterAll(async () => {
  await bw?.stop();
  mute?.close();
  await node?.stop();
  await t?.drop();
});

describe('a silent ZMQ endpoint', () => {
  it('is a warning in the indexer status and in `blockwire status`, which stays healthy', async () => {
    await waitFor('the index at the tip', () => bw.indexer!.status().tip.hash === node.tip().hash);
    expect(bw.indexer!.status().zmq).toMatchObject({ url: muteUrl, silent: false });
    // Blocks that no message announces, found by polling.
    for (let i = 0; i < 3; i++) {
      await node.mine(1);
      await waitFor('the index at the new tip', () => bw.indexer!.status().tip.hash === node.tip().hash);
    }
    const zmq = await waitFor(
      'ZMQ marked silent',
      () => {
        const z = bw.indexer!.status().zmq;
        return z?.silent ? z : undefined;
      },
      120_000,
    );
    expect(zmq.messages).toBe(0);
    expect(zmq.unannouncedBlocks).toBeGreaterThanOrEqual(2);

    const env = { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: 'silent' };
    const status = await waitFor('the warning in blockwire status', async () => {
      const r = await run(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'status'], { env, timeout: 60_000 }).catch(
        (err: { code: number; stdout: string }) => ({ ...err, stdout: err.stdout }),
      );
      return r.stdout.includes('is silent') ? r : undefined;
    });
    expect('code' in status ? status.code : 0).toBe(0);
    expect(status.stdout).toContain('status        HEALTHY');
    expect(status.stdout).toMatch(
      new RegExp(
        `warning: ZMQ at ${muteUrl.replace(/[.]/g, '\\.')} is silent: \\d+ blocks arrived that no message announced \\(check BITCOIND_ZMQ_URL`,
      ),
    );
  });
});
