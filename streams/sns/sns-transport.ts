/**
 * The SNS transport: `Publish` of the same JSON body to the hook's topic, with the delivery id as
 * message attribute `webhook-id` (and, for FIFO topics, as deduplication id). One SNSClient per
 * region; the SDK's own retries are off (the delivery queue retries). Each Publish, connection
 * to parsed answer, is aborted when it has not settled within `timeoutMs`: the one time limit
 * (the SDK's own `requestTimeout` only logs a warning, so a stalled endpoint would hold a
 * delivery slot forever). Errors map like HTTP
 * answers: a missing topic disables the hook, other client faults are permanent, throttling,
 * server faults and network errors are retried.
 * @module
 */
import { PublishCommand, SNSClient, type MessageAttributeValue } from '@aws-sdk/client-sns';
import type { HookRow } from '../../src/db/queries/tenancy-hooks.js';
import type { SendResult, Transport } from '../transport.js';
import type { DeliveryJobData } from '../queues.js';

export type SnsTransportOptions = {
  /** Endpoint override (a local SNS endpoint in tests, LocalStack…); AWS when unset. */
  endpoint?: string;
  /** Static credentials; the SDK's default provider chain when unset. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** The time limit of one Publish, connection to parsed answer. */
  timeoutMs: number;
};

const RETRYABLE_CODES = new Set([
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'KMSThrottlingException',
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
]);
const GONE_CODES = new Set(['NotFound', 'NotFoundException']);

type AwsError = Error & { name: string; Code?: string; $fault?: 'client' | 'server'; $metadata?: { httpStatusCode?: number } };

/** The result of a failed Publish. */
export function classifySnsError(err: unknown): SendResult {
  const e = err as AwsError;
  const status = e.$metadata?.httpStatusCode ?? null;
  const code = e.Code ?? e.name;
  const error = `SNS ${code}: ${e.message}`.slice(0, 500);
  if (GONE_CODES.has(code)) return { kind: 'permanent', status, error, disableHook: `SNS topic not found (${code})` };
  if (RETRYABLE_CODES.has(code) || e.$fault !== 'client' || status === 429) return { kind: 'retry', status, error };
  return { kind: 'permanent', status, error };
}

export function createSnsTransport(opts: SnsTransportOptions): Transport {
  const clients = new Map<string, SNSClient>();
  const clientFor = (region: string) => {
    let c = clients.get(region);
    if (!c) {
      c = new SNSClient({
        region,
        maxAttempts: 1,
        ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
        ...(opts.credentials ? { credentials: opts.credentials } : {}),
      });
      clients.set(region, c);
    }
    return c;
  };

  return {
    async send(hook: HookRow, job: DeliveryJobData): Promise<SendResult> {
      if (hook.type !== 'sns' || !hook.topic_arn || !hook.region)
        return { kind: 'permanent', status: null, error: 'hook has no SNS topic' };
      const attributes: Record<string, MessageAttributeValue> = {
        'webhook-id': { DataType: 'String', StringValue: job.delivery },
        'event-type': { DataType: 'String', StringValue: job.type },
      };
      const fifo = hook.topic_arn.endsWith('.fifo');
      const deadline = AbortSignal.timeout(opts.timeoutMs);
      try {
        const out = await clientFor(hook.region).send(
          new PublishCommand({
            TopicArn: hook.topic_arn,
            Message: job.payload,
            MessageAttributes: attributes,
            ...(fifo ? { MessageGroupId: job.delivery.slice(0, job.delivery.lastIndexOf('-')), MessageDeduplicationId: job.delivery } : {}),
          }),
          { abortSignal: deadline },
        );
        return {
          kind: 'delivered',
          status: out.$metadata.httpStatusCode ?? 200,
          ...(out.MessageId ? { response: `MessageId: ${out.MessageId}` } : {}),
        };
      } catch (err) {
        if (deadline.aborted) return { kind: 'retry', status: null, error: `SNS Publish timed out after ${opts.timeoutMs} ms` };
        return classifySnsError(err);
      }
    },
    async close() {
      for (const c of clients.values()) c.destroy();
      clients.clear();
    },
  };
}
