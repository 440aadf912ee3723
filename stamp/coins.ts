/**
 * The stamping wallet's coins and their locks. Coins come from Blockwire's own index (confirmed
 * `utxos` of the wallet's address keys, mature, not spent by a mempool transaction) plus the
 * change of our own unconfirmed stamp transactions (known before the indexer sees them).
 * A coin is taken by a lease (`stamp_coin_locks.lease_until`, expires so a crashed batch frees
 * it) and, once the transaction that spends it is stored, held by that transaction's family until
 * the family is abandoned. Two batches never spend the same coin: the lock row is the arbiter.
 * @module
 */
import { sql } from 'kysely';
import type { Coin } from './build.js';
import type { StampDb, StampTrx } from './tables.js';
import type { StampWallet } from './wallet.js';
import { sqlTxNumHeight, sqlTxNumPosition } from '../src/db/tx-num.js';
import { txidConfirmed, unspentAt } from '../src/db/tx-reads.js';
import { balanceOfSql } from '../src/db/balance-reads.js';

/** Core's COINBASE_MATURITY. */
const COINBASE_MATURITY = 100;

type CoinRow = { txid: Buffer; vout: number; value: bigint; script: Buffer };

/** Our live unconfirmed transactions and the parents among them, for chain depths. */
async function liveParents(db: StampDb | StampTrx): Promise<Map<string, string[]>> {
  const r = await sql<{ txid: Buffer; prev_txid: Buffer | null }>`
    SELECT t.txid, p.txid AS prev_txid
    FROM stamp_txs t
    LEFT JOIN stamp_tx_inputs i ON i.txid = t.txid
    LEFT JOIN stamp_txs p ON p.txid = i.prev_txid AND p.status IN ('signed', 'broadcast')
    WHERE t.status IN ('signed', 'broadcast')`.execute(db);
  const parents = new Map<string, string[]>();
  for (const row of r.rows) {
    const k = row.txid.toString('hex');
    const list = parents.get(k) ?? [];
    if (row.prev_txid) list.push(row.prev_txid.toString('hex'));
    parents.set(k, list);
  }
  return parents;
}

/** Depth of each live unconfirmed transaction: itself plus its longest chain of live ancestors. */
export function chainDepths(parents: ReadonlyMap<string, readonly string[]>): Map<string, number> {
  const depth = new Map<string, number>();
  const visit = (tx: string, seen: Set<string>): number => {
    const known = depth.get(tx);
    if (known !== undefined) return known;
    if (seen.has(tx)) return 1; // cannot happen (txids commit to their inputs); stay finite anyway
    seen.add(tx);
    let d = 1;
    for (const p of parents.get(tx) ?? []) if (parents.has(p)) d = Math.max(d, 1 + visit(p, seen));
    depth.set(tx, d);
    return d;
  };
  for (const tx of parents.keys()) visit(tx, new Set());
  return depth;
}

/**
 * Our live transactions (hex txids) that can no longer confirm because a coin they spend left the
 * index's chain — a reorg took away the block that made it, or another transaction spent it —
 * and those spending their change. By the index: an input that is neither an unspent output in
 * `utxos` nor change of a live transaction of ours, of a transaction not itself in a block of the
 * index (a confirmed one spent its inputs). Their change is no coin, and the tracker abandons them
 * when the node says their inputs are missing: their stamps go into new transactions.
 */
export async function txsWithGoneInputs(db: StampDb | StampTrx): Promise<Set<string>> {
  const r = await sql<{ txid: Buffer }>`
    SELECT DISTINCT t.txid FROM stamp_txs t JOIN stamp_tx_inputs i ON i.txid = t.txid
    WHERE t.status IN ('signed', 'broadcast')
      AND NOT EXISTS (SELECT 1 FROM stamp_txs p WHERE p.txid = i.prev_txid AND p.status IN ('signed', 'broadcast'))
      AND NOT EXISTS (${unspentAt(sql.ref('i.prev_txid'), sql.ref('i.prev_vout'))})
      AND NOT ${txidConfirmed(sql.ref('t.txid'))}`.execute(db);
  const gone = new Set(r.rows.map((x) => x.txid.toString('hex')));
  if (gone.size === 0) return gone;
  // Their descendants among our live transactions go with them.
  const parents = await liveParents(db);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [tx, ps] of parents) {
      if (!gone.has(tx) && ps.some((p) => gone.has(p))) {
        gone.add(tx);
        grew = true;
      }
    }
  }
  return gone;
}

/** Coins no lock holds, largest first within each depth, confirmed first. */
export async function loadFreeCoins(db: StampDb | StampTrx, wallet: StampWallet, tipHeight: number): Promise<Coin[]> {
  const keys = [...wallet.addrKeys];
  const confirmed = await sql<CoinRow>`
    SELECT u.txid, u.vout, u.value, u.script
    FROM utxos u
    WHERE u.addr_key = ANY(${keys}::uuid[])
      AND (${sqlTxNumPosition(sql.ref('u.tx_num'))} <> 0 OR ${sqlTxNumHeight(sql.ref('u.tx_num'))} <= ${tipHeight - COINBASE_MATURITY + 1})
      AND NOT EXISTS (SELECT 1 FROM stamp_coin_locks l WHERE l.txid = u.txid AND l.vout = u.vout AND (l.lease_until IS NULL OR l.lease_until > now()))
      AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)`.execute(db);
  const own = await sql<CoinRow>`
    SELECT c.txid, c.vout, c.value, c.script
    FROM stamp_change c JOIN stamp_txs t ON t.txid = c.txid
    WHERE t.status IN ('signed', 'broadcast')
      AND NOT EXISTS (SELECT 1 FROM stamp_coin_locks l WHERE l.txid = c.txid AND l.vout = c.vout AND (l.lease_until IS NULL OR l.lease_until > now()))
      AND NOT EXISTS (SELECT 1 FROM stamp_txs r WHERE r.replaces = t.txid AND r.status = 'signed')`.execute(db);
  const depths = own.rows.length > 0 ? chainDepths(await liveParents(db)) : new Map<string, number>();
  const gone = own.rows.length > 0 ? await txsWithGoneInputs(db) : new Set<string>();
  const seen = new Set<string>();
  const coins: Coin[] = [];
  for (const r of confirmed.rows) {
    seen.add(`${r.txid.toString('hex')}:${r.vout}`);
    coins.push({ ...r, depth: 0 });
  }
  for (const r of own.rows) {
    if (seen.has(`${r.txid.toString('hex')}:${r.vout}`)) continue; // confirmed already; the tracker has not caught up
    if (gone.has(r.txid.toString('hex'))) continue; // change of a transaction that can no longer confirm
    coins.push({ ...r, depth: depths.get(r.txid.toString('hex')) ?? 1 });
  }
  return coins.sort((a, b) => a.depth - b.depth || (a.value > b.value ? -1 : a.value < b.value ? 1 : 0));
}

/**
 * Leases coins to `owner` for `leaseMs`. Returns the ones obtained: a coin another batch holds
 * (or a family spends) is left out.
 */
export async function leaseCoins(
  db: StampDb | StampTrx,
  owner: string,
  coins: readonly { txid: Buffer; vout: number }[],
  leaseMs: number,
): Promise<Set<string>> {
  if (coins.length === 0) return new Set();
  const r = await sql<{ txid: Buffer; vout: number }>`
    INSERT INTO stamp_coin_locks (txid, vout, owner, lease_until)
    SELECT t, v, ${owner}::uuid, now() + make_interval(secs => ${leaseMs / 1000})
    FROM unnest(${coins.map((c) => c.txid)}::bytea[], ${coins.map((c) => c.vout)}::int4[]) AS x(t, v)
    ON CONFLICT (txid, vout) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, family = NULL
      WHERE stamp_coin_locks.lease_until IS NOT NULL AND stamp_coin_locks.lease_until <= now()
    RETURNING txid, vout`.execute(db);
  return new Set(r.rows.map((c) => coinKey(c)));
}

/** `hex:vout`, the key coin sets use. */
export function coinKey(c: { txid: Buffer; vout: number }): string {
  return `${c.txid.toString('hex')}:${c.vout}`;
}

/** Drops the leases `owner` still holds (all, or those given). */
export async function releaseLeases(
  db: StampDb | StampTrx,
  owner: string,
  coins?: readonly { txid: Buffer; vout: number }[],
): Promise<void> {
  if (coins && coins.length === 0) return;
  if (!coins) {
    await db.deleteFrom('stamp_coin_locks').where('owner', '=', owner).where('lease_until', 'is not', null).execute();
    return;
  }
  await sql`
    DELETE FROM stamp_coin_locks l
    USING unnest(${coins.map((c) => c.txid)}::bytea[], ${coins.map((c) => c.vout)}::int4[]) AS x(t, v)
    WHERE l.txid = x.t AND l.vout = x.v AND l.owner = ${owner}::uuid AND l.lease_until IS NOT NULL`.execute(db);
}

/**
 * Turns `owner`'s live leases on `coins` into locks held by `family`. Returns false (and changes
 * nothing it could not) when a lease expired and someone else took the coin: the caller aborts.
 */
export async function lockLeasedCoins(
  trx: StampTrx,
  owner: string,
  family: Buffer,
  coins: readonly { txid: Buffer; vout: number }[],
): Promise<boolean> {
  if (coins.length === 0) return true;
  const r = await sql<{ n: string }>`
    WITH done AS (
      UPDATE stamp_coin_locks l SET lease_until = NULL, family = ${family}
      FROM unnest(${coins.map((c) => c.txid)}::bytea[], ${coins.map((c) => c.vout)}::int4[]) AS x(t, v)
      WHERE l.txid = x.t AND l.vout = x.v AND l.owner = ${owner}::uuid AND l.lease_until > now()
      RETURNING 1)
    SELECT count(*)::text AS n FROM done`.execute(trx);
  return Number(r.rows[0]?.n ?? 0) === coins.length;
}

/** True while some batch or bump holds a coin lease (its coins may come back). */
export async function hasLiveLeases(db: StampDb | StampTrx): Promise<boolean> {
  const r = await db
    .selectFrom('stamp_coin_locks')
    .select('txid')
    .where('lease_until', '>', sql<Date>`now()`)
    .limit(1)
    .executeTakeFirst();
  return r !== undefined;
}

/** Frees every coin a family held (the family is abandoned: its coins may be spent again). */
export async function unlockFamily(trx: StampTrx, family: Buffer): Promise<void> {
  await trx.deleteFrom('stamp_coin_locks').where('family', '=', family).execute();
}

/** What the wallet holds, for /healthz and the "cannot pay" check. */
export type WalletBalance = {
  /** Confirmed balance of the wallet's addresses in the index. */
  confirmed: bigint;
  /** Coins a batch may take now (confirmed unlocked + our unconfirmed change). */
  spendable: bigint;
  spendableCoins: number;
  /** Change of our unconfirmed transactions already spent by newer ones, or leased. */
  unconfirmedChange: bigint;
};

export async function loadWalletBalance(db: StampDb, wallet: StampWallet, tipHeight: number): Promise<WalletBalance> {
  const free = await loadFreeCoins(db, wallet, tipHeight);
  const bal = (
    await sql<{ b: string }>`
      SELECT coalesce(sum(${sql.raw(balanceOfSql('k.k', 'balance'))}), 0)::text AS b FROM (SELECT DISTINCT k FROM unnest(${[...wallet.addrKeys]}::uuid[]) AS k) k`.execute(
      db,
    )
  ).rows[0];
  const change = await sql<{ v: string }>`
    SELECT coalesce(sum(c.value), 0)::text AS v FROM stamp_change c JOIN stamp_txs t ON t.txid = c.txid
    WHERE t.status IN ('signed', 'broadcast')`.execute(db);
  return {
    confirmed: BigInt(bal?.b ?? '0'),
    spendable: free.reduce((s, c) => s + c.value, 0n),
    spendableCoins: free.length,
    unconfirmedChange: BigInt(change.rows[0]?.v ?? '0'),
  };
}
