/**
 * The floor of bench/events's webhook deliveries, in a process of its own: the same signed POSTs
 * through the worker's transport (streams/webhook/http-transport.ts: Standard Webhooks
 * signature, kept-alive connections) to the same receiver, with no queue, no delivery log and no
 * relay: what a delivery costs at the least on this machine. Prints one JSON line `{ms, cpuMs}`
 * (its own CPU over the sends) once every request is answered.
 * Usage: `node --import tsx bench/webhook-floor.ts '{"url", "count", "concurrency", "payload"}'`
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createHttpTransport } from '../streams/webhook/http-transport.js';
import type { HookRow } from '../src/db/queries/tenancy-hooks.js';

type Args = { url: string; count: number; concurrency: number; payload: string };
const args = JSON.parse(process.argv[2] ?? '{}') as Args;

const transport = createHttpTransport({ policy: { allowPrivate: true }, timeoutMs: 10_000 });
const hook = {
  id: 'hook_floor',
  type: 'http',
  url: args.url,
  secret: `whsec_${randomBytes(32).toString('base64')}`,
  previous_secret: null,
  previous_secret_until: null,
} as unknown as HookRow;
const run = randomBytes(4).toString('hex');
let next = 0;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
await Promise.all(
  Array.from({ length: args.concurrency }, async () => {
    while (next < args.count) {
      const i = next++;
      const r = await transport.send(hook, { delivery: `floor_${run}-${i}`, hook: hook.id, payload: args.payload, type: 'tx.unconfirmed' });
      if (r.kind !== 'delivered') throw new Error(`floor POST ${i}: ${JSON.stringify(r)}`);
    }
  }),
);
const cpu = process.cpuUsage(cpu0);
process.stdout.write(`${JSON.stringify({ ms: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
await transport.close?.();
