/**
 * The webhook request as it goes on the wire (streams/webhook/http-transport.ts builds its
 * headers as one list and the Host header from the parsed URL): read raw from a TCP server, the
 * request line keeps the URL's path and query, Host is the URL's host and port, the Standard
 * Webhooks headers verify with the official library, and a second delivery to the same hook
 * reuses the kept-alive connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createHttpTransport } from '../../../streams/webhook/http-transport.js';
import type { HookRow } from '../../../src/db/queries/tenancy-hooks.js';
import type { Transport } from '../../../streams/transport.js';

type Seen = { socket: Socket; head: string; body: string };

describe('the webhook request on the wire', () => {
  let server: Server;
  let port: number;
  const seen: Seen[] = [];
  let transport: Transport;

  beforeAll(async () => {
    // Answers each request (one per data event: the requests here are small) with 200 and keeps the connection.
    server = createServer((socket) => {
      socket.on('data', (d) => {
        const text = d.toString('utf8');
        const end = text.indexOf('\r\n\r\n');
        seen.push({ socket, head: text.slice(0, end), body: text.slice(end + 4) });
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    transport = createHttpTransport({ policy: { allowPrivate: true }, timeoutMs: 5000 });
  });
  afterAll(async () => {
    await transport?.close?.();
    server?.close();
  });

  it('carries the path, Host, the signed Standard Webhooks headers and the body, over one kept-alive connection', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const hook = {
      id: 'hook_wire',
      type: 'http',
      url: `http://127.0.0.1:${port}/in/hooks?source=blockwire`,
      secret,
      previous_secret: null,
      previous_secret_until: null,
    } as unknown as HookRow;
    const payload = JSON.stringify({ id: 7, type: 'tx.confirmed', note: 'quotes " and \\ and ü' });
    for (const delivery of ['sub_w-7', 'sub_w-8']) {
      const r = await transport.send(hook, { delivery, hook: hook.id, payload, type: 'tx.confirmed' });
      expect(r).toMatchObject({ kind: 'delivered', status: 200, response: 'ok' });
      // (a connection takes its next request one turn of the event loop after an answer: sooner, another opens)
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(seen).toHaveLength(2);
    for (const [i, s] of seen.entries()) {
      const [line, ...fields] = s.head.split('\r\n');
      expect(line).toBe('POST /in/hooks?source=blockwire HTTP/1.1');
      const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]));
      expect(headers).toMatchObject({
        host: `127.0.0.1:${port}`,
        'webhook-id': `sub_w-${7 + i}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(payload)),
        'user-agent': 'Blockwire-Webhooks/1',
        connection: 'keep-alive',
      });
      expect(s.body).toBe(payload);
      expect(new Webhook(secret).verify(s.body, headers)).toEqual(JSON.parse(payload));
    }
    expect(seen[1]!.socket).toBe(seen[0]!.socket);
  });
});
