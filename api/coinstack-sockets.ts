/**
 * coinstackd's request/response WebSocket, `/sock` (restwebsocket.go): each text or binary
 * message is a JSON command `{"ti": <thread id>, "cmd": 1…10, "blockhash", "txhash", "address",
 * "rawtx", "query": {"type", "body"}}` answered, in order, by `{"ti": <echo>, "st": <HTTP
 * status>, "result": <the REST answer's JSON>}` (then a newline, as Go's encoder writes it).
 * A command is run as the REST request it stands for (cmd 1 GET /blockchain, 2
 * /blocks/{blockhash}/transactions, 3 /blocks/{blockhash}, 4 /transactions/{txhash}, 5
 * /addresses/{address}/history, 6 …/balance, 7 …/unspentoutputs, 8 POST /transactions
 * {"tx": rawtx}, 9 GET /contracts/{address}/status, 10 POST /contracts/{address}/query), so its
 * answer, errors, scope and rate limit are the route's. A required field that is empty is 400
 * ValidationFailed `a <field> field is empty`; another cmd is 500 `unsupported type of cmd`. A
 * message that is not such an object (not JSON, a field of the wrong type) ends the connection
 * (close 1007), as coinstackd's decoder error does.
 *
 * The upgrade authenticates as `GET /sock` would (the Coinstack dialect's hook: APIKey header,
 * `?apikey=`, a signature over `GET /sock`, `?auth=`); a refusal is that answer (401 text, 403
 * JSON), and `GET /sock` without an upgrade is coinstackd's 400 `Not a websocket handshake`.
 * A key holds at most `maxPerKey` of these sockets (both paths together) on this process: the
 * upgrade above it is refused with the dialect's `ThroughputExceeded` error (400), answered a
 * second late (CAP_REFUSAL_DELAY_MS: a key that asks again at once asks once a second). A key's sockets
 * are closed (1008 "API key revoked") once it is revoked: on its key notification (`checkKeys`)
 * or within `keyCheckMs` (api/key-sockets.ts).
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { Logger } from '../src/log.js';
import { answerUpgrade, type UpgradeHandler } from '../src/net/upgrades.js';
import { parseAuthorization } from './signed-request.js';
import { openSocketSession, SESSION_HEADER, socketKeyOf, type SocketCredentials } from './socket-sessions.js';
import { coinstackErrorAnswer, coinstackErrorBody, COINSTACK_KINDS, type CoinstackKind } from './dialects/coinstack-errors.js';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { ServiceError } from '../src/errors.js';
import { createKeySockets } from './key-sockets.js';
import type { Dialect } from './dialect.js';
import { WEBSOCKET_PATH, type CoinstackPush } from './coinstack-push.js';

export const SOCK_PATH = '/sock';

/** What coinstackd answers a request to a socket path that is not an upgrade. */
export const NOT_A_HANDSHAKE = 'Not a websocket handshake\n';

/** Commands waiting on one connection before it is closed (1008): a client must read its answers. */
const MAX_WAITING = 64;

/**
 * An upgrade refused for its key's cap is answered after this long. Each upgrade is a whole
 * authenticated request: a key that asks again as soon as it is refused (20 loops, ~800 upgrades
 * a second) took another key's REST p99 from 13 to 93 ms on an idle 2-core machine, and past
 * the noisy-neighbour bound on a loaded one; held a second, each loop asks once a second.
 */
const CAP_REFUSAL_DELAY_MS = 1000;

/** Refusals held at once at most (each an open connection); past them a refusal is answered at once. */
const MAX_HELD_REFUSALS = 1000;

/** A command as coinstackd's WebsocketInput reads it (absent fields: zero values). */
type Command = {
  ti: number;
  cmd: number;
  blockhash: string;
  txhash: string;
  address: string;
  rawtx: string;
  query: { type: string; body: unknown };
};

type Answer = { ti: number; st: number; result: unknown };

class BadMessage extends Error {}

function intField(o: Record<string, unknown>, name: string): number {
  const v = o[name];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw new BadMessage(`json: cannot unmarshal ${JSON.stringify(v)} into field ${name} of type int`);
  return v;
}

function stringField(o: Record<string, unknown>, name: string): string {
  const v = o[name];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new BadMessage(`json: cannot unmarshal ${typeof v} into field ${name} of type string`);
  return v;
}

/** A message as a command, or BadMessage (coinstackd's decoder would fail on it). */
function parseCommand(data: string): Command {
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    throw new BadMessage('the message is not JSON');
  }
  if (v === null) v = {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new BadMessage('the message is not a JSON object');
  const o = v as Record<string, unknown>;
  const q = o.query;
  if (q !== undefined && q !== null && (typeof q !== 'object' || Array.isArray(q)))
    throw new BadMessage('json: cannot unmarshal query: not an object');
  const query = (q ?? {}) as Record<string, unknown>;
  return {
    ti: intField(o, 'ti'),
    cmd: intField(o, 'cmd'),
    blockhash: stringField(o, 'blockhash'),
    txhash: stringField(o, 'txhash'),
    address: stringField(o, 'address'),
    rawtx: stringField(o, 'rawtx'),
    query: { type: stringField(query, 'type'), body: query.body ?? null },
  };
}

/** The REST request a command stands for, or the error answer coinstackd gives it. */
function commandRequest(c: Command): { method: 'GET' | 'POST'; url: string; body?: unknown } | { kind: CoinstackKind; cause: string } {
  const p = encodeURIComponent;
  const empty = (field: string) => ({ kind: 'ValidationFailed' as const, cause: `a ${field} field is empty` });
  switch (c.cmd) {
    case 1:
      return { method: 'GET', url: '/blockchain' };
    case 2:
      return c.blockhash === '' ? empty('blockhash') : { method: 'GET', url: `/blocks/${p(c.blockhash)}/transactions` };
    case 3:
      return c.blockhash === '' ? empty('blockhash') : { method: 'GET', url: `/blocks/${p(c.blockhash)}` };
    case 4:
      return c.txhash === '' ? empty('txhash') : { method: 'GET', url: `/transactions/${p(c.txhash)}` };
    case 5:
      return c.address === '' ? empty('address') : { method: 'GET', url: `/addresses/${p(c.address)}/history` };
    case 6:
      return c.address === '' ? empty('address') : { method: 'GET', url: `/addresses/${p(c.address)}/balance` };
    case 7:
      return c.address === '' ? empty('address') : { method: 'GET', url: `/addresses/${p(c.address)}/unspentoutputs` };
    case 8:
      return c.rawtx === '' ? empty('rawtx') : { method: 'POST', url: '/transactions', body: { tx: c.rawtx } };
    case 9:
      return c.address === '' ? empty('address') : { method: 'GET', url: `/contracts/${p(c.address)}/status` };
    case 10:
      if (c.address === '') return empty('address');
      return c.query.body === null ? empty('query') : { method: 'POST', url: `/contracts/${p(c.address)}/query`, body: { query: c.query } };
    default:
      return { kind: 'InternalServer', cause: 'unsupported type of cmd' };
  }
}

/** What an upgrade request proved, read as the dialect reads a request's credentials. */
function socketCredentials(dialect: Dialect, req: IncomingMessage, url: URL): SocketCredentials | undefined {
  const query = Object.fromEntries(url.searchParams);
  const creds = dialect.credentials({ query, headers: req.headers } as unknown as FastifyRequest);
  if (creds.kind === 'token') {
    const key = Array.isArray(creds.key) ? creds.key[0] : creds.key;
    return key ? { kind: 'token', key } : undefined;
  }
  if (creds.kind === 'hmac') {
    const parts = parseAuthorization(creds.authorization);
    return typeof parts === 'string' ? undefined : { kind: 'signing', accessKey: parts.APIKey };
  }
  return undefined;
}

/**
 * The upgrade handler of `/sock` on the API `app` (its Coinstack routes answer the commands) and,
 * with `push`, of coinstackd's push feed `/websocket` (api/coinstack-push.ts), both
 * authenticated as their REST path is.
 */
export function coinstackSockets(
  app: FastifyInstance,
  deps: {
    db: Kysely<Database>;
    dialect: Dialect;
    log: Logger;
    maxMessageBytes: number;
    push?: CoinstackPush;
    /** Most sockets (both paths) one key holds open on this process. */
    maxPerKey: number;
    /** How often the keys of open sockets are checked for revocation besides `checkKeys`. */
    keyCheckMs: number;
  },
): { handleUpgrade: UpgradeHandler; checkKeys(keyIds?: readonly bigint[]): Promise<void>; close(): void } {
  const log = deps.log.child({ component: 'api.sock' });
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.maxMessageBytes, perMessageDeflate: false, clientTracking: true });
  const keys = createKeySockets({
    db: deps.db,
    log,
    maxPerKey: deps.maxPerKey,
    checkMs: deps.keyCheckMs,
    revoked: { code: 1008, reason: 'API key revoked' },
  });

  async function run(token: string, host: string | undefined, c: Command): Promise<Answer> {
    const r = commandRequest(c);
    if ('kind' in r)
      return { ti: c.ti, st: COINSTACK_KINDS[r.kind].status, result: coinstackErrorBody(r.kind, COINSTACK_KINDS[r.kind].retry, r.cause) };
    const res = await app.inject({
      method: r.method,
      url: r.url,
      headers: {
        [SESSION_HEADER]: token,
        ...(host ? { host } : {}),
        ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(r.body !== undefined ? { payload: JSON.stringify(r.body) } : {}),
    });
    let result: unknown = res.body;
    if (/^application\/json/.test(String(res.headers['content-type'] ?? ''))) result = JSON.parse(res.body);
    return { ti: c.ti, st: res.statusCode, result };
  }

  function serve(ws: WebSocket, creds: SocketCredentials, host: string | undefined): void {
    const session = openSocketSession(creds);
    ws.on('close', () => session.close());
    ws.on('error', () => undefined);
    let chain = Promise.resolve();
    let waiting = 0;
    ws.on('message', (data: RawData) => {
      if (++waiting > MAX_WAITING) {
        ws.close(1008, 'too many commands waiting for their answers');
        return;
      }
      chain = chain.then(async () => {
        try {
          if (ws.readyState !== WebSocket.OPEN) return;
          const answer = await run(
            session.token,
            host,
            parseCommand(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8')),
          );
          if (ws.readyState === WebSocket.OPEN) ws.send(`${JSON.stringify(answer)}\n`);
        } catch (err) {
          if (err instanceof BadMessage) ws.close(1007, err.message.slice(0, 120));
          else {
            log.warn({ err }, 'socket command failed');
            ws.close(1011, 'internal error');
          }
        } finally {
          waiting--;
        }
      });
    });
  }

  let heldRefusals = 0;

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL, path: string): Promise<void> {
    // Authenticated as the REST request GET <path>: the route answers NOT_A_HANDSHAKE once the
    // dialect's hook let it through; anything else is the refusal, sent as it is.
    const check = await app.inject({
      method: 'GET',
      url: req.url ?? path,
      remoteAddress: req.socket.remoteAddress ?? '127.0.0.1',
      headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== SESSION_HEADER)) as Record<string, string>,
    });
    const creds = socketCredentials(deps.dialect, req, url);
    const keyId = socketKeyOf(check.raw.req);
    if (check.statusCode !== 400 || check.body !== NOT_A_HANDSHAKE || !creds || keyId === undefined) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(check.headers))
        if (k !== 'content-length' && k !== 'connection' && k !== 'date' && v !== undefined) headers[k] = String(v);
      return answerUpgrade(socket, check.statusCode, headers, check.body);
    }
    const place = keys.take(keyId);
    if (!place) {
      const refusal = coinstackErrorAnswer(
        new ServiceError('ERR_TOO_MANY_STREAMS', {
          message: `this key already has ${deps.maxPerKey} sockets open here (API_MAX_SOCKETS_PER_KEY): close one first`,
        }),
      );
      if (heldRefusals < MAX_HELD_REFUSALS) {
        heldRefusals++;
        try {
          await sleep(CAP_REFUSAL_DELAY_MS, undefined, { ref: false });
        } finally {
          heldRefusals--;
        }
      }
      if (!socket.destroyed) answerUpgrade(socket, refusal.status, refusal.headers, refusal.body);
      return;
    }
    let upgraded = false;
    socket.once('close', () => {
      if (!upgraded) place.release();
    });
    const upgradeTo = (serveIt: (ws: WebSocket) => void) =>
      wss.handleUpgrade(req, socket, head, (ws) => {
        upgraded = true;
        place.hold(ws);
        serveIt(ws);
      });
    try {
      const push = deps.push;
      if (path === WEBSOCKET_PATH && push) {
        await push.open();
        if (!socket.destroyed) upgradeTo((ws) => push.serve(ws));
      } else if (!socket.destroyed) upgradeTo((ws) => serve(ws, creds, req.headers.host));
    } finally {
      if (socket.destroyed && !upgraded) place.release();
    }
  }

  return {
    handleUpgrade(req, socket, head) {
      const url = new URL(req.url ?? '/', 'http://sock.invalid');
      const path = url.pathname.replace(/\/$/, '');
      if (path !== SOCK_PATH && !(path === WEBSOCKET_PATH && deps.push)) return false;
      upgrade(req, socket, head, url, path).catch((err: unknown) => {
        log.warn({ err }, 'socket upgrade failed');
        answerUpgrade(socket, 500, { 'Content-Type': 'text/plain; charset=utf-8' }, 'internal error\n');
      });
      return true;
    },
    checkKeys: (keyIds) => keys.checkKeys(keyIds),
    close() {
      keys.close();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
