/**
 * coinstackd's `/websocket` push feed on Blockwire over a real regtest Bitcoin Core, with the
 * streams relay publishing its feed and the API's outbox safety poll an hour apart, so every push
 * here comes from the event log through the feed: the upgrade authenticated as GET /websocket is,
 * a transaction Core accepts pushed as coinstackd's TxMessage frame and the block Core mines as
 * its BlockMessage frame — binary frames, byte for byte what coinstackd's json.Marshal writes
 * (restserver.go `/websocket`, model.go `Block`, `Transaction`, `WebSocketPayload`), with the
 * block's values from Core's getblockheader — and a binary frame from the client answered
 * `{"Type":3,"Payload":{}}`. (coinstack-sdk-js has no WebSocket client.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { createApiKey } from '../../../src/auth/keys.js';
import { hexToHash } from '../../../src/bitcoin/hash.js';
import { startCoreStack, type CoreStack } from './core-stack.js';

type Frame = { binary: boolean; text: string };

/** Go's encoding of a time.Time (RFC 3339, the fraction's trailing zeros cut), UTC, to the millisecond. */
function goTime(d: Date): string {
  const [secs, ms] = d.toISOString().replace('Z', '').split('.');
  const frac = (ms ?? '').replace(/0+$/, '');
  return `${secs}${frac ? `.${frac}` : ''}Z`;
}

describeBitcoind('coinstackd /websocket on Bitcoin Core', () => {
  let s: CoreStack;
  let key: string;
  let base: string;

  beforeAll(async () => {
    s = await startCoreStack({ streams: true, pushPollMs: 3_600_000 });
    key = (await createApiKey(s.db.db, { name: 'websocket' })).key;
    base = `ws://${s.endpoint}`;
  }, 240_000);
  afterAll(async () => s?.stop());

  it('without an upgrade: 400 "Not a websocket handshake"; an upgrade without a key is refused as the REST request is (401)', async () => {
    const r = await fetch(`http://${s.endpoint}/websocket`, { headers: { APIKey: key } });
    expect(r.status).toBe(400);
    expect(await r.text()).toBe('Not a websocket handshake\n');
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${base}/websocket`);
      ws.once('open', () => reject(new Error('the upgrade was accepted')));
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('error', () => undefined);
    });
    expect(status).toBe(401);
  });

  it('pushes a new transaction and the block mining it as coinstackd frames them; a binary frame gets the pong', async () => {
    const frames: Frame[] = [];
    const ws = new WebSocket(`${base}/websocket?apikey=${key}`);
    ws.on('message', (data, isBinary) =>
      frames.push({ binary: isBinary, text: Buffer.isBuffer(data) ? data.toString('utf8') : String(data) }),
    );
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    try {
      // coinstackd answers any binary frame (its "PingMessage" 2 is the binary opcode) with a pong; text frames are ignored
      ws.send('ignored');
      ws.send(Buffer.from('{}'), { binary: true });
      await waitFor('the pong', () => frames.some((f) => f.text === '{"Type":3,"Payload":{}}'), 30_000);
      expect(frames).toEqual([{ binary: true, text: '{"Type":3,"Payload":{}}' }]);

      const address = await s.core.call<string>('getnewaddress', [], s.core.wallet!);
      const txid = await s.fund(address, 150_000n);
      await waitFor('the TxMessage of the payment', () => frames.some((f) => f.text.includes(`"transaction_hash":"${txid}"`)), 60_000);
      const row = await s.db.db
        .selectFrom('outbox')
        .select('created_at')
        .where('type', '=', 'mempool.added')
        .where('txid', '=', Buffer.from(hexToHash(txid)))
        .executeTakeFirstOrThrow();
      const t = goTime(row.created_at);
      const txFrame = frames.find((f) => f.text.includes(`"transaction_hash":"${txid}"`))!;
      expect(txFrame).toEqual({
        binary: true,
        text: `{"Type":1,"Payload":{"transaction_hash":"${txid}","block_hash":null,"coinbase":false,"is_deleted":false,"inputs":null,"outputs":null,"time":"${t}","broadcast_time":"${t}","addresses":null}}`,
      });

      const [hash] = await s.core.mine(1);
      const header = await s.core.call<{ height: number; time: number; previousblockhash: string }>('getblockheader', [hash]);
      await waitFor('the BlockMessage of the block', () => frames.some((f) => f.text.includes(`"block_hash":"${hash}"`)), 60_000);
      const blockFrame = frames.find((f) => f.text.includes(`"block_hash":"${hash}"`))!;
      const time = new Date(header.time * 1000).toISOString().replace('.000Z', 'Z');
      expect(blockFrame).toEqual({
        binary: true,
        text: `{"Type":0,"Payload":{"block_hash":"${hash}","height":${header.height},"confirmation_time":"${time}","parent":"${header.previousblockhash}","transaction_list":null}}`,
      });
      // In the event log's order: the transaction entered the mempool before the block mined it.
      expect(frames.indexOf(txFrame)).toBeLessThan(frames.indexOf(blockFrame));
      // Nothing but coinstackd's frames, all binary.
      for (const f of frames) {
        expect(f.binary).toBe(true);
        expect(Object.keys(JSON.parse(f.text) as object)).toEqual(['Type', 'Payload']);
      }
    } finally {
      ws.close();
    }
  });
});
