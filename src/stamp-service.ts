/**
 * The contract between the stamping role (stamp/, which implements it) and the API's stamp
 * routes (api/, which call it); `blockwire start` (cli/compose.ts) hands one to the other.
 * @module
 */

/** A stamp's status as GET /stamps/{id} answers it. */
export type StampStatus = { tx: string; vout: number; confirmations: number; timestamp: string | null };

/**
 * What the stamping role tells of a stamp: its status, the document hash it carries (64 hex)
 * and the signed transaction `tx` names (the bytes stored before its first broadcast), from
 * which a client checks the stamp itself (the OP_RETURN output, the txid); and the indexed tip
 * its confirmations were counted at (height -1, hash null while nothing is indexed).
 */
export type StampRecord = StampStatus & { hash: string; raw: Uint8Array; tip: { height: number; hash: Uint8Array | null } };

/**
 * The stamping service. Methods throw ServiceError (src/errors.ts) for expected failures, e.g.
 * `ERR_STAMP_NOT_FOUND`; the routes validate the hash and id before calling.
 */
export interface StampService {
  /** Accepts a 64-hex SHA-256 `hash` for key `keyId`; resolves once the stamp is persisted. */
  create(keyId: bigint, hash: string, idempotencyKey?: string): Promise<{ stampid: string }>;
  /** The status of stamp `id` (`<txid>-<vout>`) if it belongs to `keyId`, with its hash and transaction. */
  get(keyId: bigint, id: string): Promise<StampRecord>;
}
