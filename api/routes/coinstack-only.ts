/**
 * Routes only coinstackd has (restserver.go): a block by height and a block's transaction list
 * under `/blocks/:hash/:sub`, and the families Blockwire does not serve — smart contracts
 * (`/contracts…`), aliases and roles (coinstackd's permission index) — answered as coinstackd
 * answers them when those features are off: contracts 500 "smart contract is not enabled"
 * (grantees `[]`, any other `/contracts/:x` 404 "not found"), aliases and roles 503 "Permission is
 * not supported". Served in the Coinstack dialect only.
 * @module
 */
import type { FastifyReply } from 'fastify';
import { findBlockByHash, listBlockTxids } from '../queries/chain.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { sql } from 'kysely';
import { coinstackErrorBody, COINSTACK_KINDS, type CoinstackKind } from '../dialects/coinstack-errors.js';
import { atoi } from '../whole-lists.js';
import type { RouteModule } from '../dialect.js';
import { NOT_A_HANDSHAKE, SOCK_PATH } from '../coinstack-sockets.js';
import { WEBSOCKET_PATH } from '../coinstack-push.js';
import { noteSocketKey } from '../socket-sessions.js';

const NO_CONTRACTS = 'smart contract is not enabled';
const NO_PERMISSIONS = 'Permission is not supported. Set privnetnodekey to use permission.';

/** coinstackd's answer for a feature that is off: the kind's status and retry flag, with `cause`. */
function answer(reply: FastifyReply, kind: CoinstackKind, cause: string): FastifyReply {
  return reply
    .code(COINSTACK_KINDS[kind].status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(coinstackErrorBody(kind, COINSTACK_KINDS[kind].retry, cause)));
}

/**
 * coinstackd's `CoinStackError.String()`, which `/contracts/:a/source` and `/functions` answer
 * as text unless the request's Content-Type is application/json.
 */
function answerMaybeText(reply: FastifyReply, contentType: string | undefined, kind: CoinstackKind, cause: string): FastifyReply {
  if (contentType === 'application/json') return answer(reply, kind, cause);
  const k = COINSTACK_KINDS[kind];
  return reply
    .code(k.status)
    .type('text/plain; charset=utf-8')
    .send(`error_code:${k.code}\nerror_message:${k.message}\nerror_cause:${cause}`);
}

export const coinstackOnlyRoutes: RouteModule = (app, deps, dialect) => {
  app.get<{ Params: { hash: string; sub: string } }>('/blocks/:hash/:sub', async (request) => {
    const { hash, sub } = request.params;
    if (hash === 'height') {
      const height = atoi(sub);
      if (height === undefined) throw new ServiceError('ERR_INVALID_PARAMETER', { message: `height must be an integer, got '${sub}'` });
      const r = await sql<{ hash: Buffer }>`SELECT hash FROM blocks WHERE height = ${height}`.execute(deps.readDb);
      if (!r.rows[0]) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
      return [hashToHex(r.rows[0].hash)];
    }
    if (sub !== 'transactions') throw new ServiceError('ERR_ROUTE_NOT_FOUND');
    const block = await findBlockByHash(deps.readDb, dialect.routes.parseHash(hash, 'ERR_BLOCK_NOT_FOUND'));
    if (!block) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
    return (await listBlockTxids(deps.readDb, block.height)).map((t) => hashToHex(t));
  });

  app.get('/contracts/:address/status', async (_request, reply) => answer(reply, 'InternalServer', NO_CONTRACTS));
  app.post('/contracts/:address/query', async (_request, reply) => answer(reply, 'InternalServer', NO_CONTRACTS));
  app.get('/contracts/:address/grantees', async () => []);
  for (const what of ['source', 'functions']) {
    app.get(`/contracts/:address/${what}`, async (request, reply) =>
      answerMaybeText(reply, request.headers['content-type'], 'InternalServer', NO_CONTRACTS),
    );
  }
  app.get<{ Params: { address: string } }>('/contracts/:address', async (request, reply) =>
    request.params.address === 'nodegroupkey'
      ? answer(reply, 'InternalServer', NO_CONTRACTS)
      : answer(reply, 'ResourceNotFound', 'not found'),
  );

  // The sockets' paths asked without an upgrade (the upgrades themselves: api/coinstack-sockets.ts,
  // which authenticates them through these routes)
  for (const path of [SOCK_PATH, WEBSOCKET_PATH]) {
    app.get(path, async (request, reply) => {
      noteSocketKey(request.raw, request.apiKey.id);
      return reply.code(400).header('X-Content-Type-Options', 'nosniff').type('text/plain; charset=utf-8').send(NOT_A_HANDSHAKE);
    });
  }

  for (const path of ['/aliases', '/aliases/:alias', '/roles', '/roles/:address']) {
    app.get(path, async (_request, reply) => answer(reply, 'ServerUnavailable', NO_PERMISSIONS));
  }
};
