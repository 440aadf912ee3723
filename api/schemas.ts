/**
 * JSON schemas shared by route modules: path parameters and the resource shapes. They validate requests, serialize responses
 * (fast-json-stringify) and become /openapi.json.
 * @module
 */

/** `{hash}` path parameter: 64 hex characters (display order, as Core prints it). */
export const hashParams = {
  type: 'object',
  required: ['hash'],
  properties: { hash: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', description: 'block or transaction hash, 64 hex characters' } },
} as const;

/** `{address}` path parameter: checked for encoding, checksum and network by the handler. */
export const addressParams = {
  type: 'object',
  required: ['address'],
  properties: {
    address: { type: 'string', minLength: 1, maxLength: 120, description: "a Base58Check or bech32/bech32m address of the node's network" },
  },
} as const;

export const blockchainStatusSchema = {
  type: 'object',
  required: ['best_block_hash', 'best_height'],
  properties: { best_block_hash: { type: 'string' }, best_height: { type: 'integer' } },
} as const;

export const blockSchema = {
  type: 'object',
  required: ['block_hash', 'height', 'confirmation_time', 'parent', 'transaction_list'],
  properties: {
    block_hash: { type: 'string' },
    height: { type: 'integer' },
    confirmation_time: { type: 'string', format: 'date-time' },
    parent: { type: 'string' },
    children: { type: 'array', items: { type: 'string' } },
    transaction_list: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const balanceSchema = {
  type: 'object',
  required: ['balance'],
  properties: { balance: { type: 'integer', description: 'sum of the unspent outputs, in satoshi' } },
} as const;

export const historySchema = {
  type: 'array',
  description: 'transaction hashes, newest first (mempool first)',
  items: { type: 'string' },
} as const;

export const unspentSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['transaction_hash', 'index', 'value', 'script', 'confirmations'],
    properties: {
      transaction_hash: { type: 'string' },
      index: { type: 'integer' },
      value: { type: 'string', description: 'satoshi, decimal string' },
      script: { type: 'string' },
      confirmations: { type: 'integer' },
    },
  },
} as const;

export const transactionSchema = {
  type: 'object',
  required: ['transaction_hash', 'block_hash', 'coinbase', 'inputs', 'outputs', 'time', 'broadcast_time', 'addresses'],
  properties: {
    transaction_hash: { type: 'string' },
    block_hash: {
      type: 'array',
      items: {
        type: 'object',
        required: ['block_hash', 'block_height'],
        properties: { block_hash: { type: 'string' }, block_height: { type: 'integer' } },
      },
    },
    coinbase: { type: 'boolean' },
    inputs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['transaction_hash', 'output_index', 'address', 'value'],
        properties: {
          transaction_hash: { type: 'string' },
          output_index: { type: 'integer' },
          address: { type: 'array', items: { type: 'string' } },
          value: { type: 'string' },
        },
      },
    },
    outputs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'address', 'script', 'value', 'used'],
        properties: {
          index: { type: 'integer' },
          address: { type: 'array', items: { type: 'string' } },
          script: { type: 'string' },
          value: { type: 'string' },
          used: { type: 'boolean' },
          data: { type: 'string', description: 'OP_RETURN payload, hex (data outputs only)' },
        },
      },
    },
    time: { type: ['string', 'null'], format: 'date-time', description: 'block time; null while unconfirmed' },
    broadcast_time: { type: 'string', format: 'date-time', description: 'first seen; 0001-01-01T00:00:00Z when unknown' },
    addresses: { type: 'array', items: { type: 'string' } },
  },
} as const;

/** Paging query of history and unspent outputs (+ min_conf). */
export const pageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 10000, default: 1000, description: 'items per page (default 1000, max 10000)' },
    cursor: { type: 'string', maxLength: 200, description: 'opaque cursor from the previous page\'s Link rel="next" header' },
    min_conf: {
      type: 'integer',
      minimum: 0,
      maximum: 1000000,
      default: 0,
      description: 'only outputs/transactions with at least this many confirmations (0 includes the mempool)',
    },
  },
} as const;

export const minConfQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { min_conf: pageQuery.properties.min_conf },
} as const;
