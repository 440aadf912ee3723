/**
 * coinstackd's `/sock` WebSocket on a running stack (the stream attached to the same server):
 * the upgrade authenticated as a REST request (API key in the query or header, a signature over
 * GET /sock, refusals as the REST answers), every command answered `{ti, st, result}` with the
 * same JSON the bare REST route gives, in order, coinstackd's errors for empty fields and unknown
 * commands, a broadcast, scopes and revocation checked per command, a malformed message closing
 * the connection, and the stream still served beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';
import { Key } from '../../../client/keys.js';
import { createApiKey, revokeApiKey } from '../../../src/auth/keys.js';
import { newServerKeyLine, parseKeyring } from '../../../src/auth/secret-box.js';
import { sign, timestamp } from './sign.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';

type Answer = { ti: number; st: number; result: unknown };

/** A connected socket with a reader of its answers in arrival order. */
async function connect(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ ws: WebSocket; next(): Promise<Answer>; ask(msg: unknown): Promise<Answer>; closed: Promise<number> }> {
  const ws = new WebSocket(url, { headers });
  const queue: Answer[] = [];
  const waiters: ((a: Answer) => void)[] = [];
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  ws.on('message', (data) => {
    const text = data.toString();
    expect(text.endsWith('\n')).toBe(true);
    const a = JSON.parse(text) as Answer;
    const w = waiters.shift();
    if (w) w(a);
    else queue.push(a);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = () => (queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise<Answer>((r) => waiters.push(r)));
  return { ws, next, closed, ask: (msg) => (ws.send(JSON.stringify(msg)), next()) };
}

/** The refusal of an upgrade: status and body. */
async function refused(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(url, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade was accepted')));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', () => undefined);
  });
}

describe('coinstackd /sock on a running stack', () => {
  const keyLine = newServerKeyLine();
  let stack: Stack;
  let base: string;
  let host: string;
  const rest = async (path: string) => {
    const r = await fetch(`${stack.url}${path}`, { headers: { apiKey: stack.apiKey } });
    return { status: r.status, body: (await r.json()) as unknown };
  };

  beforeAll(async () => {
    stack = await startStack({ stamping: false, worker: false, config: { serverSecretKeys: keyLine } });
    base = stack.url.replace(/^http/, 'ws');
    host = stack.url.replace(/^http:\/\//, '');
  }, 180_000);
  afterAll(async () => stack?.stop());

  it('GET /sock without an upgrade is 400 "Not a websocket handshake"; an upgrade without credentials, or with a bad signature, is refused as REST refuses it', async () => {
    const r = await fetch(`${stack.url}/sock`, { headers: { apiKey: stack.apiKey } });
    expect(r.status).toBe(400);
    expect(await r.text()).toBe('Not a websocket handshake\n');
    expect(await refused(`${base}/sock`)).toEqual({ status: 401, body: 'Missing required header: "Authorization"\n' });
    expect(await refused(`${base}/sock?apikey=nope`)).toMatchObject({ status: 401 });
    const k = await createApiKey(stack.db.db, { name: 'signer', secret: { keyring: parseKeyring(keyLine) } });
    const ts = timestamp(new Date());
    const bad = sign(k.secret!, { method: 'GET', host, path: '/blockchain', ts, type: '' });
    expect(await refused(`${base}/sock`, { authorization: `APIKey=${k.key},Signature=${bad},Timestamp=${ts}` })).toEqual({
      status: 401,
      body: 'Invalid Signature\n',
    });
  });

  it('answers every command with the REST answer of its route, in order; coinstackd errors for empty fields and unknown commands', async () => {
    const payer = Key.random('regtest').address('p2pkh');
    const unused = Key.random('regtest').address('p2pkh');
    const paid = await stack.devnode.wallet.send(payer, 70_000n);
    const [blockHash] = await stack.mine(1);
    const s = await connect(`${base}/sock?apikey=${stack.apiKey}`);
    try {
      const tip = await rest('/blockchain');
      expect(await s.ask({ ti: 1, cmd: 1 })).toEqual({ ti: 1, st: 200, result: tip.body });
      expect(await s.ask({ ti: 2, cmd: 3, blockhash: blockHash })).toEqual({
        ti: 2,
        st: 200,
        result: (await rest(`/blocks/${blockHash}`)).body,
      });
      expect(await s.ask({ ti: 3, cmd: 2, blockhash: blockHash })).toEqual({
        ti: 3,
        st: 200,
        result: (await rest(`/blocks/${blockHash}/transactions`)).body,
      });
      expect(await s.ask({ ti: 4, cmd: 4, txhash: paid })).toEqual({ ti: 4, st: 200, result: (await rest(`/transactions/${paid}`)).body });
      expect(await s.ask({ ti: 5, cmd: 5, address: payer })).toEqual({ ti: 5, st: 200, result: [paid] });
      expect(await s.ask({ ti: 6, cmd: 6, address: payer })).toEqual({ ti: 6, st: 200, result: { balance: 70_000 } });
      expect(await s.ask({ ti: 7, cmd: 7, address: payer })).toEqual({
        ti: 7,
        st: 200,
        result: (await rest(`/addresses/${payer}/unspentoutputs`)).body,
      });
      expect(await s.ask({ ti: 8, cmd: 6, address: unused })).toEqual({ ti: 8, st: 200, result: { balance: 0 } });

      const cs = (kind: string, code: number, cause: string, retry = false) => ({
        error_type: `io.coinstack#${kind}`,
        error_code: code,
        error_message: expect.any(String),
        retry,
        error_cause: cause,
      });
      expect(await s.ask({ ti: 10, cmd: 4 })).toEqual({ ti: 10, st: 400, result: cs('ValidationFailed', 3004, 'a txhash field is empty') });
      expect(await s.ask({ ti: 11, cmd: 3, blockhash: '' })).toEqual({
        ti: 11,
        st: 400,
        result: cs('ValidationFailed', 3004, 'a blockhash field is empty'),
      });
      expect(await s.ask({ ti: 12, cmd: 7 })).toEqual({
        ti: 12,
        st: 400,
        result: cs('ValidationFailed', 3004, 'a address field is empty'),
      });
      expect(await s.ask({ ti: 13, cmd: 8 })).toEqual({ ti: 13, st: 400, result: cs('ValidationFailed', 3004, 'a rawtx field is empty') });
      expect(await s.ask({ ti: 14, cmd: 10, address: 'x' })).toEqual({
        ti: 14,
        st: 400,
        result: cs('ValidationFailed', 3004, 'a query field is empty'),
      });
      expect(await s.ask({ ti: 15, cmd: 99 })).toEqual({
        ti: 15,
        st: 500,
        result: cs('InternalServerError', 4001, 'unsupported type of cmd', true),
      });
      expect(await s.ask({ ti: 16 })).toEqual({
        ti: 16,
        st: 500,
        result: cs('InternalServerError', 4001, 'unsupported type of cmd', true),
      });
      expect(await s.ask({ ti: 17, cmd: 4, txhash: '00'.repeat(32) })).toEqual({
        ti: 17,
        st: 404,
        result: cs('ResourceNotFoundError', 3003, 'Requested transaction not found.'),
      });
      expect(await s.ask({ ti: 18, cmd: 9, address: payer })).toEqual({
        ti: 18,
        st: 500,
        result: cs('InternalServerError', 4001, 'smart contract is not enabled', true),
      });
      // a path separator in a field stays inside its parameter
      expect((await s.ask({ ti: 19, cmd: 6, address: '../blockchain' })).st).toBe(400);
      expect(await s.ask({ ti: 20, cmd: 8, rawtx: 'zz' })).toMatchObject({ ti: 20, st: 400, result: { error_code: 3004, retry: false } });

      // sent at once, answered in order
      for (let ti = 100; ti < 110; ti++) s.ws.send(JSON.stringify({ ti, cmd: ti % 2 === 0 ? 1 : 6, address: payer }));
      for (let ti = 100; ti < 110; ti++) expect((await s.next()).ti).toBe(ti);
    } finally {
      s.ws.close();
    }
  });

  it('a signed upgrade (signature over GET /sock) runs commands as that key: a broadcast is accepted and found; a read-only key may not broadcast; a revoked key is refused', async () => {
    const keyring = parseKeyring(keyLine);
    const k = await createApiKey(stack.db.db, { name: 'signer', secret: { keyring } });
    const ts = timestamp(new Date());
    const signature = sign(k.secret!, { method: 'GET', host, path: '/sock', ts });
    const s = await connect(`${base}/sock`, { authorization: `APIKey=${k.key},Signature=${signature},Timestamp=${ts}` });
    try {
      // a transaction made and signed by the devnode's wallet, not yet sent
      const to = Key.random('regtest').address('p2wpkh');
      const hex = stack.devnode.wallet.createTx(to, 25_000n);
      const raw = { hex, txid: hashToHex(decodeTx(Buffer.from(hex, 'hex')).txid) };
      const sent = await s.ask({ ti: 1, cmd: 8, rawtx: raw.hex });
      expect(sent).toEqual({ ti: 1, st: 200, result: { status: 'successful' } });
      await waitFor('the broadcast in the index', async () => (await s.ask({ ti: 2, cmd: 4, txhash: raw.txid })).st === 200);
      expect(await s.ask({ ti: 3, cmd: 5, address: to })).toEqual({ ti: 3, st: 200, result: [raw.txid] });
    } finally {
      s.ws.close();
    }

    const readOnly = await createApiKey(stack.db.db, { name: 'reader', scopes: ['read'] });
    const r = await connect(`${base}/sock`, { apikey: readOnly.key });
    try {
      expect(await r.ask({ ti: 1, cmd: 8, rawtx: '00' })).toMatchObject({
        ti: 1,
        st: 400,
        result: { error_type: 'io.coinstack#AccessDeniedError', error_code: 3001 },
      });
      expect((await r.ask({ ti: 2, cmd: 1 })).st).toBe(200);
      await revokeApiKey(stack.db.db, readOnly.id);
      expect(await r.ask({ ti: 3, cmd: 1 })).toMatchObject({ ti: 3, st: 401 });
    } finally {
      r.ws.close();
    }
  });

  it('a message coinstackd could not decode ends the connection; the stream is served on the same server', async () => {
    const s = await connect(`${base}/sock`, { apikey: stack.apiKey });
    s.ws.send(JSON.stringify({ ti: '1', cmd: 1 }));
    expect(await s.closed).toBe(1007);
    const t = await connect(`${base}/sock`, { apikey: stack.apiKey });
    t.ws.send('not json');
    expect(await t.closed).toBe(1007);

    const stream = new WebSocket(`${stack.streamUrl}?apiKey=${stack.apiKey}`);
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    });
    stream.close();
    expect(await refused(`${base}/nowhere`, { apikey: stack.apiKey })).toMatchObject({ status: 404 });
  });
});
