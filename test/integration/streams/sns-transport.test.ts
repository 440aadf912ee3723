/**
 * What the SNS transport (streams/sns/sns-transport.ts) guarantees of one Publish, against the
 * local SNS endpoint on 127.0.0.1 (SigV4 verified) behind a fault proxy: a Publish lands with its
 * attributes; an endpoint that stops answering (accepts, takes the bytes, says nothing) gives a
 * retryable failure once the time limit has passed instead of holding the delivery slot; a
 * refused connection is retryable too; once the endpoint answers again the next Publish lands.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSnsTransport } from '../../../streams/sns/sns-transport.js';
import type { Transport } from '../../../streams/transport.js';
import { startSnsEndpoint, type SnsEndpoint } from '../../support/sns-endpoint.js';
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js';
import { httpHookRow } from './harness.js';

const TOPIC = 'arn:aws:sns:us-east-1:000000000000:blockwire-transport';
const TIMEOUT_MS = 1500;
const hook = { ...httpHookRow('https://unused.example.com/'), type: 'sns' as const, url: null, topic_arn: TOPIC, region: 'us-east-1' };
const job = (n: number) => ({ delivery: `sub_0123456789abcdef0123-${n}`, hook: hook.id, payload: `{"id":${n}}`, type: 'tx.unconfirmed' });

let sns: SnsEndpoint;
let proxy: FaultProxy;
let transport: Transport;

beforeAll(async () => {
  sns = await startSnsEndpoint();
  sns.createTopic(TOPIC);
  proxy = await startFaultProxy(Number(new URL(sns.url).port));
  transport = createSnsTransport({ endpoint: `http://127.0.0.1:${proxy.port}`, credentials: sns.credentials, timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  await transport?.close?.();
  await proxy?.close();
  await sns?.close();
});

describe('the SNS transport', () => {
  it('publishes the body with the delivery id and event type as attributes', async () => {
    const out = await transport.send(hook, job(1));
    expect(out).toMatchObject({ kind: 'delivered', status: 200, response: expect.stringMatching(/^MessageId: /) });
    expect(sns.messages.at(-1)).toMatchObject({
      topicArn: TOPIC,
      message: '{"id":1}',
      attributes: { 'webhook-id': 'sub_0123456789abcdef0123-1', 'event-type': 'tx.unconfirmed' },
    });
  });

  it('a stalled endpoint: a retryable failure naming the time limit, not a Publish that never settles', async () => {
    proxy.stall();
    try {
      const started = Date.now();
      const out = await Promise.race([
        transport.send(hook, job(2)),
        new Promise<'still waiting'>((r) => setTimeout(() => r('still waiting'), 10 * TIMEOUT_MS).unref()),
      ]);
      expect(out).toEqual({ kind: 'retry', status: null, error: `SNS Publish timed out after ${TIMEOUT_MS} ms` });
      // Not before its time limit either (the clock can only be late).
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    } finally {
      await proxy.restore();
    }
    const after = await transport.send(hook, job(3));
    expect(after).toMatchObject({ kind: 'delivered', status: 200 });
    expect(sns.messages.map((m) => m.attributes['webhook-id'])).toContain('sub_0123456789abcdef0123-3');
  });

  it('a refused connection is retryable; the endpoint back, the next Publish lands', async () => {
    await proxy.kill();
    try {
      expect(await transport.send(hook, job(4))).toMatchObject({ kind: 'retry', status: null });
    } finally {
      await proxy.restore();
    }
    expect(await transport.send(hook, job(5))).toMatchObject({ kind: 'delivered', status: 200 });
  });
});
