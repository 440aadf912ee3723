/**
 * Blockwire's own dialect, served under `/v1`: the error body `{error_type, error_code,
 * error_message, retry, error_cause}` with string codes (src/errors.ts ERROR_CODES), the key in
 * the `apiKey` header, JSON bodies with `Content-Type: application/json`, JSON 404s, 405 with
 * `Allow` for a path served with other methods; shapes as the spec's resources (blocks and
 * transactions with more), address lists paged by a cursor in a Link header.
 * @module
 */
import { notFoundAnswer } from '../route-map.js';
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { isoTime } from '../../src/time.js';
import { sendApiError } from '../errors.js';
import { hashParams, minConfQuery, pageQuery } from '../schemas.js';
import { toHex } from '../transaction-view.js';
import { v1BlockAnswer } from '../routes/blocks.js';
import { v1TransactionAnswer } from '../routes/transaction-reads.js';
import { v1StampAnswer } from '../routes/stamps.js';
import type { Dialect } from '../dialect.js';
import { DEFAULT_CONFIRMATIONS } from '../routes/subscriptions.js';

export const v1Dialect: Dialect = {
  name: 'v1',
  prefix: '/v1',
  described: true,
  install(scope) {
    // A path served with other methods is 405 with Allow, not 404.
    scope.setNotFoundHandler((request, reply) => sendApiError(reply, notFoundAnswer(request)));
  },
  sendError: sendApiError,
  credentials: (request) => ({ kind: 'token', key: request.headers['apikey'] }),
  routes: {
    hashParams,
    // (the schema already refused anything but 64 hex characters with ERR_INVALID_HASH)
    parseHash: (raw) => Buffer.from(hexToHash(raw)),
    wantsHex: () => false,
    addressQuery: { balance: minConfQuery, history: pageQuery, unspent: pageQuery },
    listing: 'cursor',
    matureCoinbaseOnly: false,
    broadcastBody: {
      type: 'object',
      additionalProperties: false,
      required: ['tx'],
      properties: { tx: { type: 'string', minLength: 2, pattern: '^([0-9a-fA-F]{2})+$', description: 'the signed transaction, hex' } },
    },
    subscriptionBody: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: {
          type: 'string',
          enum: ['address', 'chain', 'wallet'],
          description:
            'address (default), chain (block.connected / block.disconnected, no address) or wallet (every address of a wallet; default when `wallet` is given)',
        },
        address: { type: 'string', maxLength: 100 },
        wallet: {
          type: 'string',
          maxLength: 40,
          description: "a wallet id of the same key: its events carry `wallet`, `path`, `net` and the wallet's amounts",
        },
        action: { type: ['string', 'null'], maxLength: 40, description: 'hook id (the "external service id") to push events to' },
        confirmations: {
          type: 'integer',
          minimum: 1,
          maximum: 100,
          default: DEFAULT_CONFIRMATIONS,
          description: 'tx.confirmations events up to this depth',
        },
      },
    },
    response: (schema) => ({ 200: schema }),
  },
  // (the spec's Block and Transaction with more: header fields; fee, sizes, replaceability)
  answers: { block: v1BlockAnswer, transaction: v1TransactionAnswer, stamp: v1StampAnswer },
  shapes: {
    unspent: (u) => ({
      transaction_hash: hashToHex(u.txid),
      index: u.vout,
      value: u.value.toString(),
      script: toHex(u.script),
      confirmations: u.confirmations,
    }),
    broadcast: (txid) => ({ transaction_hash: txid }),
    subscription: (s) => ({
      id: s.id,
      type: s.kind,
      address: s.address,
      wallet: s.wallet_id,
      action: s.hook_id,
      confirmations: s.confirmations,
      created_at: isoTime(s.created_at),
    }),
    deleted: (reply) => reply.code(204).send(),
  },
};
