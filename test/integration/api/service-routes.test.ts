/**
 * The stamp routes with a StampService plugged in (the interface stamp/ implements; here a small
 * in-memory one): the route hands the service the authenticated key, so one key never reads
 * another's stamp (404 as for an unknown id); a service failure that is not an ServiceError leaves as
 * 500 ERR_INTERNAL with no message or stack from inside; a slow service hits the request timeout
 * (503 ERR_REQUEST_TIMEOUT, retry true).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHarness, type ApiHarness } from './harness.js';
import { ServiceError } from '../../../src/errors.js';
import type { StampRecord, StampService } from '../../../src/stamp-service.js';

class MemoryStamps implements StampService {
  readonly byKey = new Map<bigint, Map<string, StampRecord>>();
  mode: 'ok' | 'throw' | 'slow' = 'ok';
  async create(keyId: bigint, hash: string): Promise<{ stampid: string }> {
    if (this.mode === 'throw') throw new Error('wallet file /secret/path.wif unreadable');
    if (this.mode === 'slow') await new Promise((r) => setTimeout(r, 3000));
    const id = `${hash}-${this.byKey.get(keyId)?.size ?? 0}`;
    const mine = this.byKey.get(keyId) ?? new Map<string, StampRecord>();
    mine.set(id, {
      tx: hash,
      vout: mine.size,
      confirmations: 0,
      timestamp: null,
      hash,
      raw: Buffer.from('0200', 'hex'),
      tip: { height: -1, hash: null },
    });
    this.byKey.set(keyId, mine);
    return { stampid: id };
  }
  async get(keyId: bigint, id: string): Promise<StampRecord> {
    const s = this.byKey.get(keyId)?.get(id);
    if (!s) throw new ServiceError('ERR_STAMP_NOT_FOUND');
    return s;
  }
}

describe('stamp routes over a StampService', () => {
  let h: ApiHarness;
  const stamps = new MemoryStamps();
  const post = (key: string, hash: string) =>
    h.app.inject({ method: 'POST', url: '/v1/stamps', headers: { apiKey: key }, payload: { hash } });
  beforeAll(async () => {
    h = await createApiHarness({ stamps });
  });
  afterAll(async () => h?.close());

  it('creates and reads a stamp; another key gets 404 for it', async () => {
    const other = await h.newKey({ name: 'other tenant' });
    const r = await post(h.key, 'AB'.repeat(32));
    expect(r.statusCode).toBe(200);
    const { stampid } = r.json() as { stampid: string };
    expect(stampid).toBe(`${'ab'.repeat(32)}-0`);
    const mine = await h.get(`/v1/stamps/${stampid}`);
    expect(mine.statusCode).toBe(200);
    // (unconfirmed: no proof yet)
    expect(mine.json()).toEqual({
      tx: 'ab'.repeat(32),
      vout: 0,
      confirmations: 0,
      timestamp: null,
      hash: 'ab'.repeat(32),
      tx_hex: '0200',
      proof: null,
    });
    const theirs = await h.get(`/v1/stamps/${stampid}`, other);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json()).toMatchObject({ error_code: 'ERR_STAMP_NOT_FOUND' });
    expect(theirs.body).toBe((await h.get(`/v1/stamps/${'cd'.repeat(32)}-0`, other)).body);
  });

  it('an unexpected failure is 500 ERR_INTERNAL without its message or stack', async () => {
    stamps.mode = 'throw';
    try {
      const r = await post(h.key, 'ef'.repeat(32));
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({
        error_type: 'internal',
        error_code: 'ERR_INTERNAL',
        error_message: 'internal error',
        retry: false,
        error_cause: null,
      });
      expect(r.body).not.toContain('secret');
    } finally {
      stamps.mode = 'ok';
    }
  });
});

describe('request timeout', () => {
  it('a request slower than API_REQUEST_TIMEOUT_MS is 503 ERR_REQUEST_TIMEOUT, retry true', async () => {
    const stamps = new MemoryStamps();
    stamps.mode = 'slow';
    const h = await createApiHarness({ stamps, settings: { requestTimeoutMs: 300 } });
    try {
      const r = await h.app.inject({ method: 'POST', url: '/v1/stamps', headers: { apiKey: h.key }, payload: { hash: '12'.repeat(32) } });
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ error_code: 'ERR_REQUEST_TIMEOUT', retry: true });
    } finally {
      await h.close();
    }
  });
});
