/**
 * The webhook timeout bounds the whole exchange, https included: a server that accepts TCP,
 * reads the TLS ClientHello and never answers it (the handshake never ends), and an answer
 * whose headers come but whose body never ends. Each attempt ends as a retry
 * "no answer within …" (it would never end otherwise). Real sockets on 127.0.0.1.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createServer as createTcpServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { createHttpTransport } from '../../../streams/webhook/http-transport.js';
import { httpHookRow as hookFor, listenLocal } from './harness.js';

const TIMEOUT_MS = 300;
const transport = createHttpTransport({ policy: { allowPrivate: true }, timeoutMs: TIMEOUT_MS });
const closers: (() => void)[] = [];

afterAll(async () => {
  for (const c of closers) c();
  await transport.close?.();
});

/** Listens on 127.0.0.1 until the file ends; its port. */
async function listen(server: Parameters<typeof listenLocal>[0]): Promise<number> {
  const l = await listenLocal(server);
  closers.push(l.close);
  return l.port;
}

const job = { delivery: 'sub_0123456789abcdef0123-1', hook: 'hook_0123456789abcdef0123', payload: '{"id":1}', type: 'tx.unconfirmed' };

describe('hanging receivers within the webhook timeout', () => {
  it('ends an https attempt whose server reads the ClientHello and never answers it', async () => {
    let hello = 0;
    const port = await listen(createTcpServer((s) => s.on('data', (d: Buffer) => (hello += d.length))));
    expect(await transport.send(hookFor(`https://127.0.0.1:${port}/hook`), job)).toMatchObject({
      kind: 'retry',
      status: null,
      error: `no answer within ${TIMEOUT_MS} ms`,
    });
    expect(hello).toBeGreaterThan(0);
  });

  it('ends an attempt whose answer starts and never ends', async () => {
    const port = await listen(
      createHttpServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
      }),
    );
    expect(await transport.send(hookFor(`http://127.0.0.1:${port}/hook`), job)).toMatchObject({
      kind: 'retry',
      status: null,
      error: `no answer within ${TIMEOUT_MS} ms`,
    });
  });
});
