/**
 * The webhook receiver of bench/events.ts, in its own process so that its CPU is counted apart
 * from the benchmark's clients and outbox inserts: answers 200 to every POST. Prints one JSON
 * line `{port}` once it listens, and `{requests}` once it has seen `expected` distinct
 * webhook-ids (requests = every POST so far, repeats included).
 * Usage: `node --import tsx bench/webhook-receiver.ts <expected>`
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const expected = Number(process.argv[2]);
const seen = new Set<string>();
let requests = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    requests += 1;
    seen.add(String(req.headers['webhook-id']));
    res.writeHead(200);
    res.end();
    if (seen.size === expected) process.stdout.write(`${JSON.stringify({ requests })}\n`);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`));
