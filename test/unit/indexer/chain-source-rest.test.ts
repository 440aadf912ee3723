/**
 * The node source stops asking for /rest/spenttxouts once the node shows it does not serve it:
 * a 400 (malformed for this node) or a bare 404 (REST without the endpoint, Core before 30).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeSource } from '../../../indexer/chain-source.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { BitcoindRest } from '../../../indexer/node-rest.js';

const HASH = '11'.repeat(32);

async function nodeWithoutSpentTxOuts(answer: { status: number; body: string }) {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url?.startsWith('/rest/spenttxouts/')) {
      res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://u:p@127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, seen, url };
}

describe('node source and /rest/spenttxouts', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
  });

  for (const [name, answer] of [
    ['a bare 404 (no such endpoint)', { status: 404, body: '' }],
    ['a 400 (endpoint refuses the request)', { status: 400, body: 'Invalid hash\r\n' }],
  ] as const) {
    it(`asks once, then no more, after ${name}`, async () => {
      const node = await nodeWithoutSpentTxOuts(answer);
      server = node.server;
      const source = createNodeSource({
        rpc: new BitcoindClient({ url: node.url }),
        rest: new BitcoindRest({ url: node.url }),
        restMode: 'on',
      });
      expect(await source.getSpentTxOuts!(HASH)).toBeNull();
      expect(await source.getSpentTxOuts!(HASH)).toBeNull();
      expect(await source.getSpentTxOuts!(HASH)).toBeNull();
      expect(node.seen.filter((u) => u.startsWith('/rest/spenttxouts/'))).toHaveLength(1);
    });
  }
});
