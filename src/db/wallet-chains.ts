/**
 * The address sets of wallets (docs/wallets.md "Gap limit"): each chain (one single-path
 * descriptor) is derived up to `used_max + 1 + gap_limit`, `used_max` being the highest index
 * that the index shows used (confirmed history or mempool) or that a client reserved. Writers:
 * the API (creation, reservation) and the indexer (a block or mempool change that uses an
 * address, in the same transaction that writes its rows and events: the extension happens
 * before its events are built, so a payment to an address the extension brings in gets its
 * event). Every writer holds the wallet lock (`lockWallets`) from before it reads the address
 * sets until it commits: either the indexer's change or the API's new addresses come first,
 * and the other sees it.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { sqlHasHistory } from './history-reads.js';
import type { DerivedAddress } from './wallet-derive.js';
import { INDEXER_OWNER, walletDerivePool, type DeriveOptions } from './wallet-derive-pool.js';
import { lockWallets } from './wallet-lock.js';
import { uuidArray } from './pg-array.js';
import { balanceOfSql } from './balance-reads.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Inserts derived addresses of one chain and, in the same statement, adds to the wallet's balance
 * summary (indexer/wallet-balances.ts) the balance and mempool change of the address keys the
 * wallet did not hold yet (the statement's reads see the wallet's addresses before the insert).
 * The caller holds the wallet lock. One index probe per new address (as subqueries: the API's
 * generic plans could otherwise pick a hash join over the whole balances table).
 */
export async function insertAddresses(trx: Db, walletId: string, chain: number, rows: readonly DerivedAddress[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 10_000) {
    const part = rows.slice(i, i + 10_000);
    await sql`
      WITH u AS (SELECT * FROM unnest(${part.map((r) => r.idx)}::int4[], ${part.map((r) => r.addrKey)}::uuid[],
                   ${part.map((r) => r.address)}::text[], ${part.map((r) => r.path)}::text[]) AS u(idx, addr_key, address, path)),
           ins AS (INSERT INTO wallet_addresses (wallet_id, chain, idx, addr_key, address, path) SELECT ${walletId}, ${chain}::int2, u.* FROM u),
           fresh AS (SELECT DISTINCT u.addr_key FROM u
                      WHERE NOT EXISTS (SELECT 1 FROM wallet_addresses wa WHERE wa.addr_key = u.addr_key AND wa.wallet_id = ${walletId}))
      UPDATE wallets SET
        confirmed = confirmed + (SELECT coalesce(sum(${sql.raw(balanceOfSql('f.addr_key', 'balance'))}), 0) FROM fresh f)::int8,
        unconfirmed = unconfirmed + (SELECT coalesce(sum((SELECT sum(m.received - m.sent) FROM mempool_addresses m WHERE m.addr_key = f.addr_key)), 0) FROM fresh f)::int8
       WHERE id = ${walletId}`.execute(trx);
  }
}

type ChainRef = { walletId: string; chain: number };

/**
 * Brings `chains` to `derived = used_max + 1 + gap_limit`: derives (in the derivation pool,
 * src/db/wallet-derive-pool.ts, within `opts`' budget and signal) and stores the missing
 * addresses, raises `used_max` for those the index already shows used, and repeats until
 * nothing moves. The caller holds the wallet lock. Returns the number of addresses added.
 */
export async function settleChains(trx: Db, chains: readonly ChainRef[], opts: DeriveOptions = {}): Promise<number> {
  let added = 0;
  for (;;) {
    if (chains.length === 0) return added;
    const r = await sql<{ wallet_id: string; chain: number; descriptor: string; network: string; derived: number; target: number }>`
      SELECT c.wallet_id, c.chain, c.descriptor, w.network, c.derived, c.used_max + 1 + c.gap_limit AS target
        FROM unnest(${chains.map((c) => c.walletId)}::text[], ${chains.map((c) => c.chain)}::int2[]) AS q(wallet_id, chain)
        JOIN wallet_chains c ON c.wallet_id = q.wallet_id AND c.chain = q.chain
        JOIN wallets w ON w.id = c.wallet_id
       WHERE c.derived < c.used_max + 1 + c.gap_limit
       ORDER BY c.wallet_id, c.chain`.execute(trx);
    if (r.rows.length === 0) return added;
    const fresh: (DerivedAddress & ChainRef)[] = [];
    for (const c of r.rows) {
      const rows = await walletDerivePool().derive(c.descriptor, c.network, c.derived, c.target, opts);
      await insertAddresses(trx, c.wallet_id, c.chain, rows);
      for (const a of rows) fresh.push({ ...a, walletId: c.wallet_id, chain: c.chain });
      added += rows.length;
    }
    await sql`
      UPDATE wallet_chains c SET derived = q.target
        FROM unnest(${r.rows.map((c) => c.wallet_id)}::text[], ${r.rows.map((c) => c.chain)}::int2[], ${r.rows.map((c) => c.target)}::int4[]) AS q(wallet_id, chain, target)
       WHERE c.wallet_id = q.wallet_id AND c.chain = q.chain`.execute(trx);
    // Addresses that were used before they were derived (history of the chain beyond its old gap).
    await markUsed(trx, fresh);
  }
}

/**
 * Raises `used_max` of the chains of `addresses` that the index shows used (any confirmed or
 * mempool transaction).
 */
async function markUsed(trx: Db, addresses: readonly (DerivedAddress & ChainRef)[]): Promise<void> {
  if (addresses.length === 0) return;
  await sql`
    UPDATE wallet_chains c SET used_max = greatest(c.used_max, u.idx)
      FROM (SELECT q.wallet_id, q.chain, max(q.idx) AS idx
              FROM unnest(${addresses.map((a) => a.walletId)}::text[], ${addresses.map((a) => a.chain)}::int2[], ${addresses.map((a) => a.idx)}::int4[],
                          ${addresses.map((a) => a.addrKey)}::uuid[]) AS q(wallet_id, chain, idx, addr_key)
             WHERE ${sqlHasHistory(sql.ref('q.addr_key'))}
                OR EXISTS (SELECT 1 FROM mempool_addresses m WHERE m.addr_key = q.addr_key)
             GROUP BY q.wallet_id, q.chain) u
     WHERE c.wallet_id = u.wallet_id AND c.chain = u.chain AND c.used_max < u.idx`.execute(trx);
}

/**
 * For the indexer, inside a block's or mempool change's transaction, after its history or
 * mempool rows are written and before its events are built: takes the wallet lock, marks the
 * wallet addresses among `keys` (the change's address keys) used and extends their chains,
 * repeating while the new addresses are themselves used (in this change or earlier). The
 * derivation runs in the pool ahead of every API key's (the indexer's event loop stays free
 * while the transaction waits for it); it has no budget: the index decides how far a chain
 * goes. Returns
 * the number of addresses added (0 when no wallet holds any of `keys`).
 */
export async function extendWalletsFor(trx: Db, keys: readonly string[]): Promise<number> {
  await lockWallets(trx);
  if (keys.length === 0) return 0;
  if ((await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM wallet_chains) AS any`.execute(trx)).rows[0]?.any !== true) return 0;
  const hits = await sql<{ wallet_id: string; chain: number; idx: number }>`
    SELECT wa.wallet_id, wa.chain, max(wa.idx) AS idx
      FROM wallet_addresses wa WHERE wa.addr_key = ANY(${uuidArray([...new Set(keys)])}::uuid[])
     GROUP BY wa.wallet_id, wa.chain`.execute(trx);
  if (hits.rows.length === 0) return 0;
  await sql`
    UPDATE wallet_chains c SET used_max = q.idx
      FROM unnest(${hits.rows.map((h) => h.wallet_id)}::text[], ${hits.rows.map((h) => h.chain)}::int2[], ${hits.rows.map((h) => h.idx)}::int4[]) AS q(wallet_id, chain, idx)
     WHERE c.wallet_id = q.wallet_id AND c.chain = q.chain AND c.used_max < q.idx`.execute(trx);
  return settleChains(
    trx,
    hits.rows.map((h) => ({ walletId: h.wallet_id, chain: h.chain })),
    { owner: INDEXER_OWNER },
  );
}
