/**
 * The contract between the stamping role (stamp/, which implements it) and the API's stamp
 * routes (api/, which call it); `blockwire start` (cli/compose.ts) hands one to the other.
 * @module
 */

/** A stamp's status as GET /stamps/{id} answers it. */
export type StampStatus = { tx: string; vout: number; confirmations: number; timestamp: string | null };

/**
 * The stamping service. Methods throw ServiceError (src/errors.ts) for expected failures, e.g.
 * `ERR_STAMP_NOT_FOUND`; the routes validate the hash and id before calling.
 */
export interface StampService {
  /** Accepts a 64-hex SHA-256 `hash` for key `keyId`; resolves once the stamp is persisted. */
  create(keyId: bigint, hash: string, idempotencyKey?: string): Promise<{ stampid: string }>;
  /** The status of stamp `id` (`<txid>-<vout>`) if it belongs to `keyId`. */
  get(keyId: bigint, id: string): Promise<StampStatus>;
}
