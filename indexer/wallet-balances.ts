/**
 * Each wallet's balance summary (`wallets.confirmed`, `wallets.unconfirmed`): the sum of
 * `balances` and of the mempool's net change (`mempool_addresses`: received − sent) over the
 * wallet's distinct address keys, kept by every writer in the transaction that changes either
 * side, so that GET /wallets/{id}/balance reads one row whatever the wallet's size:
 * - the indexer, where `balances` (block applied: +, undone: −) and `mempool_addresses`
 *   (inserted: +, deleted: −) change: `addWalletDeltas` with the same per-address deltas;
 * - insertAddresses (wallet creation, reservation, gap extension): a newly derived address
 *   brings its current balance and mempool change (`addNewAddresses` in wallet-chains.ts);
 * - the bulk path, which rebuilds `balances` and empties the mempool tables: recomputed for every
 *   wallet when it ends (`RECOMPUTE_WALLET_BALANCES`).
 * Deltas are applied under the wallet lock, so a wallet created concurrently either sees the
 * change's rows when it sums its first addresses or is seen by the change's delta: never both,
 * never neither. Exact under reorgs: an undone block subtracts exactly what it added.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { LOCK_WALLETS_SQL, lockWallets } from '../src/db/wallet-lock.js';
import { int8Array, uuidArray } from '../src/db/pg-array.js';
import { balanceOfSql } from '../src/db/balance-reads.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Which summary a delta goes to: `balances` changes are confirmed, `mempool_addresses` ones unconfirmed. */
export type WalletBalancePart = 'confirmed' | 'unconfirmed';

/**
 * Adds per-address deltas (sats; keys may repeat) to the summaries of the wallets holding those
 * address keys (each wallet once per key, however many of its chains derive it). Takes the
 * wallet lock. The `EXISTS` is a one-time filter: with no wallet address at all (an index
 * without wallets) the statement probes nothing, where it would otherwise look up each of a
 * live block's ~5,000 address keys in `wallet_addresses_key` (~20 ms of a 4,000-tx block).
 */
export async function addWalletDeltas(trx: Db, part: WalletBalancePart, deltas: readonly { key: string; sats: bigint }[]): Promise<void> {
  const nonZero = deltas.filter((d) => d.sats !== 0n);
  await lockWallets(trx);
  if (nonZero.length === 0) return;
  await walletDeltaStatement(part, uuidArray(nonZero.map((d) => d.key)), int8Array(nonZero.map((d) => d.sats))).execute(trx);
}

/**
 * `addWalletDeltas` with the deltas as array parameters (`uuidArray`, `int8Array`: a key may repeat,
 * a zero delta adds nothing), for the block writer, which sends the same arrays to `balances`.
 * Without any wallet address (checked under the lock: a wallet created meanwhile waits for this
 * transaction, then sums balances with its rows) the statement is not sent: PostgreSQL parses a
 * statement's array parameters before any filter runs, ~7 ms for a 4,000-transaction block's
 * ~16,000 keys and amounts.
 */
export async function addWalletDeltaArrays(trx: Db, part: WalletBalancePart, keys: Buffer, sats: Buffer): Promise<void> {
  await lockWallets(trx);
  const any = await sql<{ any: boolean }>`SELECT EXISTS (SELECT FROM wallet_addresses) AS any`.execute(trx);
  if (any.rows[0]?.any !== true) return;
  await walletDeltaStatement(part, keys, sats).execute(trx);
}

/**
 * The statement adding the deltas (`keys`: a `uuid[]` parameter, `sats`: the matching `int8[]`
 * one, pg-array.ts) to the `part` summaries (callers hold the wallet lock).
 */
export function walletDeltaStatement(part: WalletBalancePart, keys: Buffer, sats: Buffer) {
  const column = sql.ref(part);
  return sql`
    UPDATE wallets w SET ${column} = w.${column} + s.sats
      FROM (SELECT wk.wallet_id, sum(d.sats)::int8 AS sats
              FROM (SELECT addr_key, sum(sats) AS sats FROM unnest(${keys}::uuid[], ${sats}::int8[]) AS d(addr_key, sats)
                     GROUP BY addr_key) d
              CROSS JOIN LATERAL (SELECT DISTINCT wa.wallet_id FROM wallet_addresses wa WHERE wa.addr_key = d.addr_key) wk
             WHERE EXISTS (SELECT FROM wallet_addresses)
             GROUP BY wk.wallet_id) s
     WHERE w.id = s.wallet_id`;
}

/** Both sums of the wallet whose id is the SQL expression `id`, from the index (what the summary must equal). */
const SUMS = (id: string) => `
  (SELECT coalesce(sum(${balanceOfSql('k.addr_key', 'balance')}), 0)::int8
     FROM (SELECT DISTINCT addr_key FROM wallet_addresses WHERE wallet_id = ${id}) k) AS confirmed,
  (SELECT coalesce(sum((SELECT sum(m.received - m.sent) FROM mempool_addresses m WHERE m.addr_key = k.addr_key)), 0)::int8
     FROM (SELECT DISTINCT addr_key FROM wallet_addresses WHERE wallet_id = ${id}) k) AS unconfirmed`;

/** Every live wallet's summary recomputed from the index, under the wallet lock (the bulk path's end). */
export const RECOMPUTE_WALLET_BALANCES = `${LOCK_WALLETS_SQL};
  UPDATE wallets w SET (confirmed, unconfirmed) = (SELECT ${SUMS('w.id')}) WHERE w.deleted_at IS NULL`;

/** A wallet's two sums recomputed from the index, without touching its summary (tests compare the two). */
export async function walletSumsFromIndex(db: Db, walletId: string): Promise<{ confirmed: bigint; unconfirmed: bigint }> {
  const r = await sql<{
    confirmed: bigint;
    unconfirmed: bigint;
  }>`SELECT ${sql.raw(SUMS('q.id'))} FROM (SELECT ${walletId}::text AS id) q`.execute(db);
  return r.rows[0]!;
}
