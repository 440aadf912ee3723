/**
 * The Coinstack sockets `/sock` and `/websocket` of a listening API (startApi: the key
 * notifications of its cached verifier, the run's PostgreSQL and Redis): a key holds at most
 * API_MAX_SOCKETS_PER_KEY of them, both paths together, and the upgrade above it is refused with
 * the Coinstack `ThroughputExceeded` error (400, as coinstackd answers its rate limit) while another key still connects; a place is free
 * again once a socket closes. A key's revocation closes its open sockets of both paths (1008
 * "API key revoked"), as docs/security.md promises for every channel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApiHarness, type ApiHarness } from '../api/harness.js';
import { startApi, type ApiHandle } from '../../../api/main.js';
import { createApiKey, revokeApiKey } from '../../../src/auth/keys.js';
import { testConfig } from '../../../src/config.js';
import { silentLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';

const MAX = 3;

type Opened = { ws: WebSocket; closed: Promise<{ code: number; reason: string }> };
type Refused = { status: number; contentType: string; body: string };

/** Upgrades to `url`: the open socket, or the HTTP answer that refused it. */
function connect(url: string): Promise<Opened | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.once('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.once('open', () => resolve({ ws, closed }));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type']),
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    ws.once('error', (err) => {
      if (!('message' in err) || !/Unexpected server response/.test(err.message)) reject(err);
    });
  });
}

const opened = (r: Opened | Refused): Opened => {
  if (!('ws' in r)) throw new Error(`the upgrade was refused: ${r.status} ${r.body}`);
  return r;
};

describe('Coinstack sockets per key', () => {
  let h: ApiHarness;
  let api: ApiHandle;
  let base: string;
  const open: WebSocket[] = [];

  beforeAll(async () => {
    h = await createApiHarness();
    api = await startApi({
      config: testConfig({ host: '127.0.0.1', port: 0, network: 'regtest', apiMaxSocketsPerKey: MAX }),
      log: silentLogger(),
      db: h.t.db,
      redis: h.redis,
      databaseUrl: h.t.url,
    });
    base = api.url.replace(/^http/, 'ws');
  });
  afterAll(async () => {
    for (const ws of open) ws.terminate();
    await api?.close();
    await h?.close();
  });

  it(`a key holds at most ${MAX} sockets, /sock and /websocket together: the next upgrade is refused with ThroughputExceeded; another key still connects; a closed socket frees its place`, async () => {
    const a = (await createApiKey(h.t.db, { name: 'a' })).key;
    const b = (await createApiKey(h.t.db, { name: 'b' })).key;
    const held = [
      opened(await connect(`${base}/websocket?apikey=${a}`)),
      opened(await connect(`${base}/sock?apikey=${a}`)),
      opened(await connect(`${base}/websocket?apikey=${a}`)),
    ];
    open.push(...held.map((o) => o.ws));
    for (const path of ['/websocket', '/sock']) {
      const asked = Date.now();
      const r = await connect(`${base}${path}?apikey=${a}`);
      expect('status' in r, `${path} above the cap was upgraded`).toBe(true);
      // (answered a second late: a key asking again at once asks once a second)
      expect(Date.now() - asked, 'ms until the refusal').toBeGreaterThanOrEqual(950);
      const refused = r as Refused;
      // (coinstackd answers ThroughputExceeded, its rate limit's error, with 400)
      expect(refused.status, refused.body).toBe(400);
      expect(refused.contentType).toBe('application/json; charset=utf-8');
      const body = JSON.parse(refused.body) as Record<string, unknown>;
      expect(body).toMatchObject({ error_type: 'io.coinstack#ThroughputExceededError', error_code: 3002, retry: true });
      expect(String(body.error_cause)).toContain(`${MAX} sockets`);
    }
    // Another key is not held back by the first one's sockets.
    const other = opened(await connect(`${base}/websocket?apikey=${b}`));
    open.push(other.ws);
    // A place freed by a close is taken again.
    held[0]!.ws.close();
    await held[0]!.closed;
    const again = await waitFor(
      'a place for the key again',
      async () => {
        const r = await connect(`${base}/sock?apikey=${a}`);
        return 'ws' in r ? r : undefined;
      },
      10_000,
      50,
    );
    open.push(again.ws);
  });

  it('revoking a key closes its open /websocket and /sock (1008 "API key revoked"); another key stays connected', async () => {
    const created = await createApiKey(h.t.db, { name: 'to revoke' });
    const keep = (await createApiKey(h.t.db, { name: 'kept' })).key;
    const push = opened(await connect(`${base}/websocket?apikey=${created.key}`));
    const sock = opened(await connect(`${base}/sock?apikey=${created.key}`));
    const kept = opened(await connect(`${base}/websocket?apikey=${keep}`));
    open.push(push.ws, sock.ws, kept.ws);
    expect(await revokeApiKey(h.t.db, created.id)).toBe(1);
    expect(await push.closed).toEqual({ code: 1008, reason: 'API key revoked' });
    expect(await sock.closed).toEqual({ code: 1008, reason: 'API key revoked' });
    // The other key's socket still answers: a binary frame gets coinstackd's pong.
    const pong = new Promise<string>((r) => kept.ws.once('message', (d: Buffer) => r(d.toString('utf8'))));
    kept.ws.send(Buffer.from('{}'), { binary: true });
    expect(await pong).toBe('{"Type":3,"Payload":{}}');
  });
});
