/**
 * A local HTTP endpoint speaking the SNS query API (`Action=Publish`, version 2010-03-31) the way
 * AWS does: form-encoded requests signed with SigV4 (the signature is verified against the
 * configured credentials), XML answers, AWS error documents and statuses. Topics must exist
 * (`createTopic`), else NotFound (404). Tests can make the next publishes fail.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type SnsMessage = {
  topicArn: string;
  message: string;
  attributes: Record<string, string>;
  messageId: string;
  groupId?: string;
  dedupId?: string;
};

export type SnsFailure = { status: number; code: string; message: string; type?: 'Sender' | 'Receiver' };

export type SnsEndpoint = {
  url: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  messages: SnsMessage[];
  createTopic(arn: string): void;
  deleteTopic(arn: string): void;
  /** The next `count` publishes fail with `failure`. */
  failNext(count: number, failure: SnsFailure): void;
  /** Requests refused for a bad signature. */
  readonly badSignatures: number;
  close(): Promise<void>;
};

const XMLNS = 'http://sns.amazonaws.com/doc/2010-03-31/';

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const sha256hex = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s).digest();

/** Verifies an AWS SigV4 Authorization header for a request with this body. */
function signatureValid(req: IncomingMessage, body: Buffer, secretAccessKey: string, accessKeyId: string): boolean {
  const auth = req.headers.authorization ?? '';
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/sns\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return false;
  const [, akid, date, region, signedHeaders, signature] = m;
  if (akid !== accessKeyId) return false;
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const names = signedHeaders!.split(';');
  const canonicalHeaders = names
    .map(
      (n) =>
        `${n}:${String(req.headers[n] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const url = new URL(req.url ?? '/', 'http://x');
  const canonical = [req.method, url.pathname, url.searchParams.toString(), canonicalHeaders, signedHeaders, sha256hex(body)].join('\n');
  const scope = `${date}/${region}/sns/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date!), region!), 'sns'), 'aws4_request');
  return hmac(key, toSign).toString('hex') === signature;
}

function attributesOf(form: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 1; form.has(`MessageAttributes.entry.${i}.Name`); i++) {
    out[form.get(`MessageAttributes.entry.${i}.Name`)!] = form.get(`MessageAttributes.entry.${i}.Value.StringValue`) ?? '';
  }
  return out;
}

export async function startSnsEndpoint(): Promise<SnsEndpoint> {
  const credentials = { accessKeyId: 'AKIDBLOCKWIRETEST', secretAccessKey: 'blockwire-test-secret-key' };
  const topics = new Set<string>();
  const messages: SnsMessage[] = [];
  const failures: SnsFailure[] = [];
  let badSignatures = 0;

  const error = (res: ServerResponse, f: SnsFailure) => {
    res.writeHead(f.status, { 'content-type': 'text/xml' });
    res.end(
      `<ErrorResponse xmlns="${XMLNS}"><Error><Type>${f.type ?? (f.status >= 500 ? 'Receiver' : 'Sender')}</Type><Code>${f.code}</Code>` +
        `<Message>${xmlEscape(f.message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
    );
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (!signatureValid(req, body, credentials.secretAccessKey, credentials.accessKeyId)) {
        badSignatures += 1;
        return error(res, {
          status: 403,
          code: 'SignatureDoesNotMatch',
          message: 'The request signature we calculated does not match the signature you provided.',
        });
      }
      const form = new URLSearchParams(body.toString('utf8'));
      if (form.get('Version') !== '2010-03-31')
        return error(res, { status: 400, code: 'InvalidParameter', message: 'Invalid or missing Version' });
      if (form.get('Action') !== 'Publish')
        return error(res, { status: 400, code: 'InvalidAction', message: `Unsupported action ${form.get('Action')}` });
      const topicArn = form.get('TopicArn') ?? '';
      const message = form.get('Message');
      if (message === null) return error(res, { status: 400, code: 'InvalidParameter', message: 'Invalid parameter: Message' });
      const failure = failures.shift();
      if (failure) return error(res, failure);
      if (!topics.has(topicArn)) return error(res, { status: 404, code: 'NotFound', message: 'Topic does not exist' });
      const messageId = randomUUID();
      const groupId = form.get('MessageGroupId') ?? undefined;
      const dedupId = form.get('MessageDeduplicationId') ?? undefined;
      messages.push({
        topicArn,
        message,
        attributes: attributesOf(form),
        messageId,
        ...(groupId ? { groupId } : {}),
        ...(dedupId ? { dedupId } : {}),
      });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(
        `<PublishResponse xmlns="${XMLNS}"><PublishResult><MessageId>${messageId}</MessageId></PublishResult>` +
          `<ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishResponse>`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    credentials,
    messages,
    createTopic: (arn) => void topics.add(arn),
    deleteTopic: (arn) => void topics.delete(arn),
    failNext(count, failure) {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    get badSignatures() {
      return badSignatures;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
