/**
 * What the webhook transport (streams/webhook/http-transport.ts) guarantees of one exchange, with
 * real sockets on 127.0.0.1: the SSRF guard runs in the connection's own name lookup (a name
 * resolving to loopback is refused at delivery without a connection; with private hooks allowed,
 * the address the guard's resolver gave is the one connected to), an answer is read up to 64 KB
 * and no further (its first 2 KB kept), a redirect is not followed, and an https receiver's
 * certificate is verified.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { generate } from 'selfsigned';
import { createHttpTransport } from '../../../streams/webhook/http-transport.js';
import { RESPONSE_EXCERPT_BYTES, type Transport } from '../../../streams/transport.js';
import type { Resolver } from '../../../src/net/hook-url.js';
import { waitFor } from '../../support/wait.js';
import { httpHookRow as hookFor, listenLocal } from './harness.js';

const closers: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

function transportWith(policy: Parameters<typeof createHttpTransport>[0]['policy'], timeoutMs = 10_000): Transport {
  const t = createHttpTransport({ policy, timeoutMs });
  closers.push(() => t.close?.());
  return t;
}

const job = { delivery: 'sub_0123456789abcdef0123-1', hook: 'hook_0123456789abcdef0123', payload: '{"id":1}', type: 'tx.unconfirmed' };

/** Listens on 127.0.0.1 until the file ends. */
async function listen(server: Parameters<typeof listenLocal>[0]): Promise<{ port: number; connections: () => number }> {
  const l = await listenLocal(server);
  closers.push(l.close);
  return l;
}

describe('the webhook transport', () => {
  it('refuses at delivery a name that resolves to loopback, before connecting', async () => {
    const asked: string[] = [];
    const resolve: Resolver = async (h) => {
      asked.push(h);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const t = transportWith({ allowPrivate: false, resolve });
    expect(await t.send(hookFor('https://rebind.example.com/hook'), job)).toEqual({
      kind: 'permanent',
      status: null,
      error: 'refused at delivery: url host rebind.example.com resolves to 127.0.0.1, a private, loopback or reserved address',
      signedAt: expect.any(Number),
    });
    expect(asked).toEqual(['rebind.example.com']);
  });

  it("connects to the address the guard's resolver gave", async () => {
    const received: string[] = [];
    const server = await listen(
      createHttpServer((req, res) => {
        received.push(String(req.headers.host));
        req.resume();
        req.on('end', () => res.end('ok'));
      }),
    );
    const t = transportWith({ allowPrivate: true, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    expect(await t.send(hookFor(`http://receiver.example.com:${server.port}/hook`), job)).toMatchObject({
      kind: 'delivered',
      status: 200,
      response: 'ok',
    });
    expect(received).toEqual([`receiver.example.com:${server.port}`]);
  });

  it('reads an answer up to 64 KB: an endless one is cut there, its first bytes kept', async () => {
    let written = 0;
    let dropped = false;
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const server = await listen(
      createHttpServer((req, res) => {
        req.resume();
        req.socket.once('close', () => (dropped = true));
        res.writeHead(200, { 'content-type': 'text/plain' });
        const more = () => {
          while (!res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) break;
          }
        };
        res.on('drain', more);
        more();
      }),
    );
    // (the time limit far away: only the cap can end this answer in time)
    const t = transportWith({ allowPrivate: true }, 60_000);
    const r = await t.send(hookFor(`http://127.0.0.1:${server.port}/hook`), job);
    expect(r).toMatchObject({ kind: 'delivered', status: 200 });
    expect(r.response).toBe('a'.repeat(RESPONSE_EXCERPT_BYTES));
    // The connection is dropped, not kept for the next delivery (the answer would go on for ever).
    await waitFor('the connection dropped', () => dropped, 10_000);
    expect(written).toBeGreaterThan(64 * 1024);
  });

  it('does not follow a redirect', async () => {
    const elsewhere = await listen(createHttpServer((_req, res) => res.end()));
    let seen = 0;
    const server = await listen(
      createHttpServer((req, res) => {
        req.resume();
        res.writeHead(307, { location: `http://127.0.0.1:${elsewhere.port}/meta-data` });
        res.end('moved');
        seen += 1;
      }),
    );
    const t = transportWith({ allowPrivate: true });
    expect(await t.send(hookFor(`http://127.0.0.1:${server.port}/hook`), job)).toMatchObject({
      kind: 'retry',
      status: 307,
      error: `receiver answered 307: redirect to http://127.0.0.1:${elsewhere.port}/meta-data not followed`,
      response: 'moved',
    });
    expect(seen).toBe(1);
    expect(elsewhere.connections()).toBe(0);
  });

  it("verifies an https receiver's certificate", async () => {
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', curve: 'P-256' });
    let requests = 0;
    const server = await listen(
      createHttpsServer({ key: pems.private, cert: pems.cert }, (_req, res) => {
        requests += 1;
        res.end();
      }),
    );
    const t = transportWith({ allowPrivate: true });
    const r = await t.send(hookFor(`https://127.0.0.1:${server.port}/hook`), job);
    expect(r).toMatchObject({ kind: 'retry', status: null });
    expect((r as { error: string }).error).toMatch(/self[- ]signed/i);
    expect(server.connections()).toBe(1);
    expect(requests).toBe(0);
  });
});
