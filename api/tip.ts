/**
 * The indexed tip an answer was read at, as two response headers: `Blockwire-Tip-Height` and
 * `Blockwire-Tip-Hash` (display hex; absent while nothing is indexed). Headers rather than body
 * fields, so that answers keep the shapes Esplora and the spec give them (bare arrays included).
 * The tip comes from the same statement (snapshot) as the answer: a route whose answer is one
 * statement reads the tip in it; one of several statements reads them in `readAtTip`'s snapshot.
 * @module
 */
import type { FastifyReply } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import { hashToHex } from '../src/bitcoin/hash.js';
import { getIndexTip, type Tip } from './queries/chain.js';
import type { Database } from '../src/db/schema.js';

export const TIP_HEIGHT_HEADER = 'Blockwire-Tip-Height';
export const TIP_HASH_HEADER = 'Blockwire-Tip-Hash';

/** The headers' descriptions for a route's response schema (/openapi.json). */
export const tipHeaders = {
  [TIP_HEIGHT_HEADER]: {
    type: 'integer',
    description:
      'height of the indexed tip the answer was read at, in the same database snapshot as the answer (-1 while nothing is indexed)',
  },
  [TIP_HASH_HEADER]: { type: 'string', description: 'hash of that tip, display hex (absent while nothing is indexed)' },
} as const;

/** `schema` (a 200 response's) with the tip headers described. */
export const withTipHeaders = <S extends object>(schema: S) => ({
  ...schema,
  headers: { ...(schema as { headers?: object }).headers, ...tipHeaders },
});

/** Sets the tip headers of `reply`. */
export function setTipHeaders(reply: FastifyReply, tip: { height: number; hash: Uint8Array | null }): void {
  reply.header(TIP_HEIGHT_HEADER, String(tip.height));
  if (tip.hash !== null) reply.header(TIP_HASH_HEADER, hashToHex(tip.hash));
}

/**
 * `fn` in one read-only REPEATABLE READ snapshot of `db` (replicas allow it), with the indexed
 * tip read in the same snapshot: every statement `fn` runs on the handle it is given sees the
 * state of that tip.
 */
export async function readAtTip<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<{ value: T; tip: Tip }> {
  // (inside a caller's transaction: that one is the snapshot)
  if (db.isTransaction) {
    const trx = db as Transaction<Database>;
    const tip = await getIndexTip(trx);
    return { value: await fn(trx), tip };
  }
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      // (the snapshot is taken at the transaction's first statement: the tip is that state's)
      const tip = await getIndexTip(trx);
      return { value: await fn(trx), tip };
    });
}
