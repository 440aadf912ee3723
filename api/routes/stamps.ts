/**
 * POST /stamps {"hash"} → {"stampid"} and GET /stamps/{id} → {tx, vout, confirmations,
 * timestamp}: routes only. The stamping service is `deps.stamps`; without one both
 * answer 503 ERR_STAMPING_NOT_CONFIGURED. Input is validated here, ownership by the service
 * (a key never sees another key's stamps: it gets 404 as for an unknown id).
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';
import type { StampService } from '../../src/stamp-service.js';

const STAMP_ID_RE = /^[0-9a-f]{64}-(0|[1-9]\d{0,5})$/;

function service(deps: ResolvedApiDeps): StampService {
  if (!deps.stamps) throw new ServiceError('ERR_STAMPING_NOT_CONFIGURED');
  return deps.stamps;
}

export const stampRoutes: RouteModule = (app, deps) => {
  app.post<{ Body: { hash: string }; Headers: { 'idempotency-key'?: string } }>(
    '/stamps',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Stamp a document hash into an OP_RETURN output',
        tags: ['stamps'],
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 200, description: 'repeat a request safely: the same key returns the same stamp' } } },
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['hash'],
          properties: { hash: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the document, 64 hex characters' } },
        },
        response: { 200: { type: 'object', required: ['stampid'], properties: { stampid: { type: 'string', description: '<txid>-<vout>' } } } },
      },
    },
    async (request) => {
      const s = service(deps);
      const idem = request.headers['idempotency-key'];
      return s.create(request.apiKey.id, request.body.hash.toLowerCase(), idem);
    },
  );

  app.get<{ Params: { id: string } }>(
    '/stamps/:id',
    {
      schema: {
        summary: 'Status of a stamp',
        tags: ['stamps'],
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', description: 'stamp id, <txid>-<vout>' } } },
        response: {
          200: {
            type: 'object',
            required: ['tx', 'vout', 'confirmations', 'timestamp'],
            properties: { tx: { type: 'string' }, vout: { type: 'integer' }, confirmations: { type: 'integer' }, timestamp: { type: ['string', 'null'], format: 'date-time' } },
          },
        },
      },
    },
    async (request) => {
      const id = request.params.id.toLowerCase();
      if (!STAMP_ID_RE.test(id)) throw new ServiceError('ERR_INVALID_STAMP_ID');
      return service(deps).get(request.apiKey.id, id);
    },
  );
};
