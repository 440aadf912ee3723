/**
 * The node source stops asking for /rest/spenttxouts once the node shows it does not serve it:
 * a 400 (malformed for this node) or a bare 404 (REST without the endpoint, Core before 30),
 * and takes a block's spent outputs from RPC `getblock <hash> 3` instead (its inputs' prevouts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeSource } from '../../../indexer/chain-source.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { BitcoindRest } from '../../../indexer/node-rest.js';

const HASH = '11'.repeat(32);
const P2PKH = '76a914' + '22'.repeat(20) + '88ac';
/** `getblock HASH 3` of a block of a coinbase and one transaction spending two outputs. */
const BLOCK3 = {
  tx: [
    { vin: [{ coinbase: '01', sequence: 0 }] },
    {
      vin: [
        { txid: '33'.repeat(32), vout: 0, prevout: { generated: false, height: 1, value: 0.5, scriptPubKey: { hex: P2PKH } }, sequence: 0 },
        {
          txid: '33'.repeat(32),
          vout: 1,
          prevout: { generated: true, height: 1, value: 12.00000001, scriptPubKey: { hex: '6a' } },
          sequence: 0,
        },
      ],
    },
  ],
};
const SPENT = [
  [],
  [
    { value: 50_000_000n, script: Buffer.from(P2PKH, 'hex') },
    { value: 1_200_000_001n, script: Buffer.from('6a', 'hex') },
  ],
];

async function nodeWithoutSpentTxOuts(answer: { status: number; body: string }) {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url?.startsWith('/rest/spenttxouts/')) {
      res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    } else if (req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
        seen.push(`rpc ${call.method} ${JSON.stringify(call.params)}`);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: BLOCK3, error: null }));
      });
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
    it(`asks once, then no more, after ${name}, and reads getblock 3`, async () => {
      const node = await nodeWithoutSpentTxOuts(answer);
      server = node.server;
      const source = createNodeSource({
        rpc: new BitcoindClient({ url: node.url }),
        rest: new BitcoindRest({ url: node.url }),
        restMode: 'on',
      });
      for (let i = 0; i < 3; i++)
        expect((await source.getSpentTxOuts!(HASH))?.map((l) => l.map((o) => ({ ...o, script: Buffer.from(o.script) })))).toEqual(SPENT);
      expect(node.seen.filter((u) => u.startsWith('/rest/spenttxouts/'))).toHaveLength(1);
      expect(node.seen.filter((u) => u === `rpc getblock ["${HASH}",3]`)).toHaveLength(3);
    });
  }
});
