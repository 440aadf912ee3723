/**
 * The notification channel of chain changes: every statement that writes a table a transaction
 * lookup's answer or a held history page is read from (`txs`, `blocks`, `history`,
 * `mempool_spends`, `asset_txs`, `chain_tip`) sends `NOTIFY blockwire_chain` through a statement
 * trigger (migration 0019; `history_buckets` too, 0059), delivered when its transaction commits.
 * The bulk sync's finish replaces `utxos` and `history` with new tables (without the trigger) and
 * notifies itself, as its history fold does when it writes `history` anew
 * (indexer/writer/history-build.ts; the fold's other writes fire the buckets' trigger); every
 * other write of `utxos` (no trigger) is part of a block applied, undone or loaded, whose
 * transaction also writes `chain_tip` or `txs`. A process that LISTENs on it and has seen
 * no notification since it read an answer knows those tables still give that answer.
 * @module
 */
export const CHAIN_CHANNEL = 'blockwire_chain';

/** What a listener of CHAIN_CHANNEL knows (src/auth/key-cache.ts listens on the API's key connection). */
export type ChainChanges = {
  /** Moves on every chain notification and whenever the connection is lost or comes back. */
  readonly generation: number;
  /**
   * Resolves true once a read barrier started after the call has returned on the listening
   * connection (PostgreSQL delivers every notification committed before a query ahead of its
   * answer): `generation` has then moved for every change committed before the call. False when
   * not listening or the barrier failed: nothing is known.
   */
  settled(): Promise<boolean>;
  /**
   * Resolves true when `generation` was read before the request came and nothing has changed
   * since, up to a barrier started after the call: `settled()` and the generation still the same.
   */
  unchangedSince(generation: number): Promise<boolean>;
};
