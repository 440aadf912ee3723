/**
 * Per-key bounds of the WebSocket stream: a key holds at most BLOCKWIRE_WS_MAX_CONNECTIONS_PER_KEY
 * streams on a stream process (exact when the upgrades come at once: 429 ERR_TOO_MANY_STREAMS in
 * the API's error body above it), another key is not affected, a closed stream frees its place;
 * every upgrade is a request counted against the key's rate limit (429 ERR_RATE_LIMITED with
 * Retry-After above it), in the window the API uses; an address that presented API_AUTH_FAILURE_LIMIT
 * wrong keys is refused 429 without a lookup, but for keys this process verified before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { startStreams, type StreamsHandle } from '../../../streams/main.js';
import { connectStream, createStreamsFixture, streamsConfig, type StreamClient, type StreamsFixture } from './harness.js';
import { waitFor } from '../../support/wait.js';

type Refusal = { status: number; headers: Record<string, string>; body: string };
const refusalOf = (p: Promise<StreamClient>): Promise<StreamClient | Refusal> => p.catch((err: Refusal) => err);
const isOpen = (r: StreamClient | Refusal): r is StreamClient => 'ws' in r;

describe('stream bounds per key', () => {
  let f: StreamsFixture;
  let s: StreamsHandle;
  let url: string;

  beforeAll(async () => {
    f = await createStreamsFixture();
    s = await startStreams({
      config: streamsConfig({ wsMaxConnectionsPerKey: 3, apiAuthFailureLimit: 3 }),
      log: silentLogger(),
      db: f.t.db,
      databaseUrl: f.t.url,
      redisUrl: f.redisUrl,
      redisPrefix: f.prefix,
    });
    url = `ws://127.0.0.1:${s.port}/v1/stream`;
  });
  afterAll(async () => {
    await s?.stop();
    await f?.drop();
  });

  it('8 upgrades of one key at once: 3 streams, 5 refused 429 ERR_TOO_MANY_STREAMS; a closed one frees its place', async () => {
    const k = await f.newKey();
    const answers = await Promise.all(Array.from({ length: 8 }, () => refusalOf(connectStream(url, k.key))));
    const open = answers.filter(isOpen);
    expect(open).toHaveLength(3);
    for (const r of answers.filter((x): x is Refusal => !isOpen(x))) {
      expect(r.status).toBe(429);
      expect(JSON.parse(r.body)).toEqual({
        error_type: 'rate_limited',
        error_code: 'ERR_TOO_MANY_STREAMS',
        error_message: 'this key already has 3 streams open here (BLOCKWIRE_WS_MAX_CONNECTIONS_PER_KEY): close one first',
        retry: true,
        error_cause: null,
      });
    }
    const other = await f.newKey();
    const theirs = await connectStream(url, other.key);
    open[0]!.close();
    await open[0]!.closed;
    const again = await waitFor(
      'a place freed',
      async () => {
        const r = await refusalOf(connectStream(url, k.key));
        return isOpen(r) ? r : undefined;
      },
      15_000,
    );
    expect((await refusalOf(connectStream(url, k.key))) as Refusal).toMatchObject({ status: 429 });
    for (const c of [...open.slice(1), again, theirs]) c.close();
  });

  it("each upgrade counts against the key's rate limit: 429 ERR_RATE_LIMITED with Retry-After above it", async () => {
    const k = await createApiKey(f.t.db, { name: 'stream-rate', rateLimit: 3 });
    for (let i = 0; i < 3; i++) {
      const c = await connectStream(url, k.key);
      c.close();
      await c.closed;
    }
    const refused = (await refusalOf(connectStream(url, k.key))) as Refusal;
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error_code: 'ERR_RATE_LIMITED', retry: true });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('wrong keys from an address: 401 up to the limit, then 429 without a lookup; a key verified before still connects', async () => {
    const known = await f.newKey();
    const first = await connectStream(url, known.key);
    first.close();
    await first.closed;
    for (let i = 0; i < 3; i++) expect(((await refusalOf(connectStream(url, `bw_${'y'.repeat(39)}${i}`))) as Refusal).status).toBe(401);
    const refused = (await refusalOf(connectStream(url, `bw_${'y'.repeat(40)}`))) as Refusal;
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({
      error_code: 'ERR_RATE_LIMITED',
      error_message: 'too many requests with invalid API keys from this address',
    });
    const fresh = await f.newKey();
    expect(((await refusalOf(connectStream(url, fresh.key))) as Refusal).status).toBe(429);
    const again = await connectStream(url, known.key);
    again.close();
  });
});
