/**
 * Noisy neighbour: an Electrum connection flood from one address. A separate process opens 400
 * plain-TCP connections from 127.0.0.1 and reopens each one 100 ms after it closes, for as long
 * as the measurement runs (the server admits ELECTRUM_MAX_CONNECTIONS_PER_IP of them and refuses
 * the rest, which come straight back). Meanwhile another Electrum client (from 127.0.0.2) pings
 * and another API key reads an address balance over HTTP. The same two probes run first without
 * the neighbour, in the same run; the bound is relative to that baseline:
 * - the other client connects while the flood holds its address's cap (before the caps, 400
 *   connections from one address took the 200 slots this stack allows, and it was refused);
 * - every probe is answered (no ping refused, no REST error);
 * - the p99 of each probe stays within BOUND × its baseline p99 + SLACK_MS (a 2-core machine
 *   shared with other work: the slack absorbs scheduling noise of a few milliseconds' baseline).
 * Sentinels, not sleeps: the flood is "on" once the server has refused connections from it and
 * it reports connections held.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Key } from '../../../client/keys.js';
import { startElectrum, type ElectrumHandle } from '../../../electrum/main.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { silentLogger } from '../../../src/log.js';
import { connectElectrum, type ElectrumTestClient } from '../../support/electrum-client.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';

const BOUND = 5;
const SLACK_MS = 250;
const SAMPLES = 200;
const PER_IP = 20;
const TOTAL = 200;

/** The flooder, a process of its own: FLOOD sockets from 127.0.0.1, each reopened 100 ms after it closes; prints how many it holds. */
const FLOODER = `
const net = require('node:net');
const [port, count] = process.argv.slice(1).map(Number);
let held = 0;
const open = () => {
  const s = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' });
  let admitted = false;
  const t = setTimeout(() => { if (!s.destroyed) { admitted = true; held++; } }, 300);
  s.on('data', () => {});
  s.on('error', () => {});
  s.on('close', () => { clearTimeout(t); if (admitted) held--; setTimeout(open, 100); });
};
for (let i = 0; i < count; i++) open();
setInterval(() => process.stdout.write(held + '\\n'), 200);
`;

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]!;

let stack: Stack;
let electrum: ElectrumHandle;
let restKey: string;
let address: string;
let flooder: ChildProcess | undefined;
const opened: ElectrumTestClient[] = [];

async function probes(client: ElectrumTestClient): Promise<{ ping: number[]; rest: number[] }> {
  const ping: number[] = [];
  const rest: number[] = [];
  await Promise.all([
    (async () => {
      for (let i = 0; i < SAMPLES; i++) {
        const t = performance.now();
        expect(await client.request('server.ping')).toBeNull();
        ping.push(performance.now() - t);
      }
    })(),
    (async () => {
      for (let i = 0; i < SAMPLES; i++) {
        const t = performance.now();
        const r = await fetch(`${stack.url}/v1/addresses/${address}/balance`, { headers: { apiKey: restKey } });
        expect(r.status).toBe(200);
        await r.json();
        rest.push(performance.now() - t);
      }
    })(),
  ]);
  return { ping, rest };
}

beforeAll(async () => {
  stack = await startStack({ stamping: false, worker: false });
  restKey = await stack.newApiKey('neighbour-b');
  address = Key.random('regtest').address('p2wpkh');
  await stack.node.pay(address, 10_000n);
  await stack.mine(1);
  electrum = await startElectrum({
    config: { ...stack.config, electrumTcpPort: 0, electrumTlsPort: undefined, electrumMaxConnectionsPerIp: PER_IP, electrumMaxConnections: TOTAL },
    log: silentLogger(),
    db: stack.db.db,
    node: new BitcoindClient({ url: stack.node.rpcUrl, log: silentLogger() }),
  });
}, 240_000);

afterAll(async () => {
  flooder?.kill('SIGKILL');
  for (const c of opened) c.close();
  await electrum?.stop();
  await stack?.stop();
});

it('another client connects and its pings, and another key\'s REST reads, stay within the bound of the same run without the flood', async () => {
  const quiet = await connectElectrum(electrum.tcpPort!, { localAddress: '127.0.0.2' });
  opened.push(quiet);
  await quiet.request('server.version', ['quiet', ['1.4', '1.6']]);
  const base = await probes(quiet);

  flooder = spawn(process.execPath, ['-e', FLOODER, String(electrum.tcpPort), '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let held = 0;
  flooder.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const last = chunk.trim().split('\n').pop();
    if (last) held = Number(last);
  });
  await waitFor('the flood to hold its cap and be refused', () => held >= PER_IP && electrum.stats().refusedConnections > 100, 120_000);

  // a new client from another address is admitted while the flood holds its cap
  const other = await connectElectrum(electrum.tcpPort!, { localAddress: '127.0.0.2' });
  opened.push(other);
  expect(await other.request('server.version', ['other', ['1.4', '1.6']])).toEqual(['blockwire/0.1', '1.6']);
  const loud = await probes(quiet);
  const refusedDuring = electrum.stats().refusedConnections;
  // the flood's address never held more than its cap (the two probes' connections beside it)
  const openDuring = electrum.connections();
  flooder.kill('SIGKILL');

  const figures = { pingP99: [p99(base.ping), p99(loud.ping)], restP99: [p99(base.rest), p99(loud.rest)], floodRefused: refusedDuring };
  process.stdout.write(`noisy-electrum: ${JSON.stringify(figures)}\n`);
  expect(openDuring).toBeLessThanOrEqual(PER_IP + 2);
  expect(p99(loud.ping)).toBeLessThanOrEqual(BOUND * p99(base.ping) + SLACK_MS);
  expect(p99(loud.rest)).toBeLessThanOrEqual(BOUND * p99(base.rest) + SLACK_MS);
}, 300_000);
