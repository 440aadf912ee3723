/**
 * POST /stamps {"hash"} → {"stampid"} and GET /stamps/{id} → {tx, vout, confirmations,
 * timestamp} (under /v1 with the hash, the transaction and its inclusion proof: v1StampAnswer,
 * docs/stamps.md): routes only. The stamping service is `deps.stamps`; without one both
 * answer 503 ERR_STAMPING_NOT_CONFIGURED. Input is validated here, ownership by the service
 * (a key never sees another key's stamps: it gets 404 as for an unknown id).
 * @module
 */
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { RouteModule } from '../dialect.js';
import type { StampService } from '../../src/stamp-service.js';
import type { StampAnswer } from '../dialect.js';
import { inclusionProof, inclusionProofSchema } from './transaction-reads.js';
import { setTipHeaders, withTipHeaders } from '../tip.js';

const STAMP_ID_RE = /^[0-9a-f]{64}-(0|[1-9]\d{0,5})$/;

const statusProperties = {
  tx: { type: 'string', description: 'the transaction holding the stamp' },
  vout: { type: 'integer', description: 'its OP_RETURN output carrying the hash' },
  confirmations: { type: 'integer' },
  timestamp: {
    type: ['string', 'null'],
    format: 'date-time',
    description: "the block's time once confirmed, else when the stamp was requested",
  },
} as const;

/** The spec's stamp status object: where the stamp is, how deep, since when. */
export const specStampAnswer: StampAnswer = {
  schema: { type: 'object', required: ['tx', 'vout', 'confirmations', 'timestamp'], properties: statusProperties },
  show: async (_deps, s) => ({ tx: s.tx, vout: s.vout, confirmations: s.confirmations, timestamp: s.timestamp }),
};

/**
 * /v1's: the status and what a client needs to check the stamp without trusting the server
 * beyond a block header: the hash, the transaction's bytes and, once confirmed, its inclusion
 * proof (null while unconfirmed, and for the moment a reorg takes its block away).
 */
export const v1StampAnswer: StampAnswer = {
  schema: {
    type: 'object',
    description:
      "Checked offline (the SDK's verifyStampProof): the document's SHA-256 is the single push of the OP_RETURN output `vout` of `tx_hex`; the double SHA-256 of `tx_hex` without its witness is the txid; folding `merkle` from the txid by the bits of `pos` gives the Merkle root in bytes 36–68 of `header`; the double SHA-256 of `header` is `block_hash`, a block of the chain the client trusts. `proof` is null while the stamp is unconfirmed.",
    required: ['tx', 'vout', 'confirmations', 'timestamp', 'hash', 'tx_hex', 'proof'],
    properties: {
      ...statusProperties,
      hash: { type: 'string', description: 'the stamped SHA-256, 64 hex' },
      tx_hex: { type: 'string', description: 'the signed transaction `tx`, hex (witness included)' },
      proof: { ...inclusionProofSchema, type: ['object', 'null'], description: 'the inclusion proof of `tx`; null while unconfirmed' },
    },
  },
  async show(deps, s) {
    const proof = s.confirmations > 0 ? ((await inclusionProof(deps, s.tx)) ?? null) : null;
    return {
      tx: s.tx,
      vout: s.vout,
      confirmations: s.confirmations,
      timestamp: s.timestamp,
      hash: s.hash,
      tx_hex: Buffer.from(s.raw).toString('hex'),
      proof,
    };
  },
};

function service(deps: ResolvedApiDeps): StampService {
  if (!deps.stamps) throw new ServiceError('ERR_STAMPING_NOT_CONFIGURED');
  return deps.stamps;
}

export const stampRoutes: RouteModule = (app, deps, dialect) => {
  app.post<{ Body: { hash: string }; Headers: { 'idempotency-key'?: string } }>(
    '/stamps',
    {
      config: { scope: 'write' },
      schema: {
        summary: 'Stamp a document hash into an OP_RETURN output',
        tags: ['stamps'],
        headers: {
          type: 'object',
          properties: {
            'idempotency-key': {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              description: 'repeat a request safely: the same key returns the same stamp',
            },
          },
        },
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['hash'],
          properties: { hash: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the document, 64 hex characters' } },
        },
        response: {
          200: { type: 'object', required: ['stampid'], properties: { stampid: { type: 'string', description: '<txid>-<vout>' } } },
        },
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
        description: dialect.answers.stamp.schema.description as string | undefined,
        response: { 200: withTipHeaders(dialect.answers.stamp.schema) },
      },
    },
    async (request, reply) => {
      const id = request.params.id.toLowerCase();
      if (!STAMP_ID_RE.test(id)) throw new ServiceError('ERR_INVALID_STAMP_ID');
      const stamp = await service(deps).get(request.apiKey.id, id);
      // (the tip its confirmations were counted at, by the stamping role's statement)
      setTipHeaders(reply, stamp.tip);
      return dialect.answers.stamp.show(deps, stamp);
    },
  );
};
