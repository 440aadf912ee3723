/**
 * The /v1 block view: the spec's Block (hash, height, confirmation time, parent, children,
 * transaction list) with the header's fields under Esplora's names (version, timestamp,
 * mediantime, bits, nonce, difficulty, merkle_root, tx_count, size, weight).
 * @module
 */
import { bitsToDifficulty, decodeHeader } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { isoFromUnix } from '../src/time.js';
import type { BlockHeaderRow } from './queries/blocks.js';

/** Header fields of a block row (everything but the transaction list). */
export function blockSummary(row: BlockHeaderRow) {
  const h = decodeHeader(row.header);
  return {
    block_hash: hashToHex(row.hash),
    height: row.height,
    confirmation_time: isoFromUnix(row.time),
    parent: hashToHex(row.prev_hash),
    children: row.next_hash ? [hashToHex(row.next_hash)] : [],
    version: h.version,
    timestamp: h.time,
    mediantime: row.median_time,
    bits: h.bits,
    nonce: h.nonce,
    // (Core prints the double with 16 significant digits)
    difficulty: Number(bitsToDifficulty(h.bits).toPrecision(16)),
    merkle_root: hashToHex(h.merkleRoot),
    tx_count: row.tx_count,
    size: row.size,
    weight: row.weight,
  };
}

const headerProperties = {
  version: { type: 'integer' },
  timestamp: { type: 'integer', description: 'header time, unix seconds' },
  mediantime: {
    type: 'integer',
    description: 'median time past (the middle of the sorted times of this block and the ten before it), unix seconds',
  },
  bits: { type: 'integer', description: 'compact target (nBits)' },
  nonce: { type: 'integer' },
  difficulty: { type: 'number' },
  merkle_root: { type: 'string' },
  tx_count: { type: 'integer' },
  size: { type: 'integer', description: 'bytes, witness included' },
  weight: { type: 'integer' },
} as const;

const summaryProperties = {
  block_hash: { type: 'string' },
  height: { type: 'integer' },
  confirmation_time: { type: 'string', format: 'date-time' },
  parent: { type: 'string' },
  children: { type: 'array', items: { type: 'string' } },
  ...headerProperties,
} as const;

const summaryRequired = ['block_hash', 'height', 'confirmation_time', 'parent', 'children', ...Object.keys(headerProperties)];

/** A block without its transaction list (the recent-blocks list). */
export const blockSummarySchema = { type: 'object', required: summaryRequired, properties: summaryProperties } as const;

/** The /v1 block view. */
export const blockViewSchema = {
  type: 'object',
  required: [...summaryRequired, 'transaction_list'],
  properties: { ...summaryProperties, transaction_list: { type: 'array', items: { type: 'string' } } },
} as const;
