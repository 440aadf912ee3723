/**
 * The indexed tip an answer was read at, as two response headers: `Blockwire-Tip-Height` and
 * `Blockwire-Tip-Hash` (display hex; absent while nothing is indexed). Headers rather than body
 * fields, so that answers keep the shapes Esplora and the spec give them (bare arrays included).
 * The tip comes from the same statement (snapshot) as the answer.
 * @module
 */
import type { FastifyReply } from 'fastify';
import { hashToHex } from '../src/bitcoin/hash.js';

export const TIP_HEIGHT_HEADER = 'Blockwire-Tip-Height';
export const TIP_HASH_HEADER = 'Blockwire-Tip-Hash';

/** The headers' descriptions for a route's response schema (/openapi.json). */
export const tipHeaders = {
  [TIP_HEIGHT_HEADER]: { type: 'integer', description: 'height of the indexed tip the answer was read at (-1 while nothing is indexed)' },
  [TIP_HASH_HEADER]: { type: 'string', description: 'hash of that tip, display hex' },
} as const;

/** Sets the tip headers of `reply`. */
export function setTipHeaders(reply: FastifyReply, tip: { height: number; hash: Uint8Array | null }): void {
  reply.header(TIP_HEIGHT_HEADER, String(tip.height));
  if (tip.hash !== null) reply.header(TIP_HASH_HEADER, hashToHex(tip.hash));
}
