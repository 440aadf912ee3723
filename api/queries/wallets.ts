/**
 * Data access for wallets (migrations/0012_wallets.ts, docs/wallets.md): a key's wallets and
 * the reads over their address sets — balance, merged history with the wallet's amounts,
 * unspent outputs with their derivation path, the address list, the next unused address (and
 * its reservation). Every function taking a key filters by `key_id` in the query, so another
 * key's wallet looks exactly like a missing one. A wallet's addresses are deduplicated by
 * addr_key (two descriptors may derive the same address; it counts once, under its first chain).
 * @module
 */
import { txRowsAtNums } from '../../src/db/tx-reads.js';
import { ServiceError } from '../../src/errors.js';
import { sql, type Kysely, type Transaction } from 'kysely';
import { decodeIns, decodeOutTag, decodeOutTags } from '../../src/db/packed.js';
import { tagPaysKey, tagPrefix, type OutTag } from '../../src/db/out-tags.js';
import { readNewestHistory, sqlHasHistory, sqlHasNoHistory } from '../../src/db/history-reads.js';
import type { Database } from '../../src/db/schema.js';
import { insertAddresses, settleChains } from '../../src/db/wallet-chains.js';
import { walletDerivePool, type DeriveOptions } from '../../src/db/wallet-derive-pool.js';
import type { DerivedAddress } from '../../src/db/wallet-derive.js';
import { lockWallets } from '../../src/db/wallet-lock.js';

type Db = Kysely<Database> | Transaction<Database>;

export type WalletRow = { id: string; key_id: bigint; network: string; descriptors: string[]; gap_limit: number; created_at: Date };

const WALLET_COLUMNS = ['id', 'key_id', 'network', 'descriptors', 'gap_limit', 'created_at'] as const;
export type WalletChainRow = { chain: number; descriptor: string; change: boolean; derived: number; used_max: number };

/** A new wallet: its descriptors as answered and the single-path chains they stand for. */
export type NewWallet = {
  id: string;
  keyId: bigint;
  network: string;
  descriptors: string[];
  gapLimit: number;
  chains: { descriptor: string; change: boolean }[];
};

/**
 * Creates a wallet: its first `gap_limit` addresses per chain are derived (in the derivation
 * pool, within `opts`' budget and signal) before the transaction; inside it (under the wallet
 * lock) they are stored and the chains extended past every address the index already shows
 * used. No rescan: the index has every address. A key already holding `max` live wallets gets
 * ServiceError 409 ERR_LIMIT_REACHED (exact: creations run one at a time under the wallet lock).
 */
export async function createWallet(db: Kysely<Database>, w: NewWallet, max = Infinity, opts: DeriveOptions = {}): Promise<WalletRow> {
  const first: DerivedAddress[][] = [];
  for (const c of w.chains) first.push(await walletDerivePool().derive(c.descriptor, w.network, 0, w.gapLimit, opts));
  return db.transaction().execute(async (trx) => {
    await lockWallets(trx);
    const live = await trx
      .selectFrom('wallets')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('key_id', '=', w.keyId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(live.n) >= max)
      throw new ServiceError('ERR_LIMIT_REACHED', {
        message: `this key already has ${max} wallets (API_MAX_WALLETS_PER_KEY): delete some first`,
      });
    const row = await trx
      .insertInto('wallets')
      .values({ id: w.id, key_id: w.keyId, network: w.network, descriptors: w.descriptors, gap_limit: w.gapLimit, deleted_at: null })
      .returning(WALLET_COLUMNS)
      .executeTakeFirstOrThrow();
    for (const [chain, c] of w.chains.entries()) {
      await trx
        .insertInto('wallet_chains')
        .values({
          wallet_id: w.id,
          chain,
          descriptor: c.descriptor,
          change: c.change,
          gap_limit: w.gapLimit,
          derived: w.gapLimit,
          used_max: -1,
        })
        .execute();
      await insertAddresses(trx, w.id, chain, first[chain]!);
    }
    // Used addresses among the first ones raise used_max; settleChains derives past them.
    await sql`
      UPDATE wallet_chains c SET used_max = u.idx
        FROM (SELECT wa.chain, max(wa.idx) AS idx FROM wallet_addresses wa
               WHERE wa.wallet_id = ${w.id}
                 AND (${sqlHasHistory(sql.ref('wa.addr_key'))}
                      OR EXISTS (SELECT 1 FROM mempool_addresses m WHERE m.addr_key = wa.addr_key))
               GROUP BY wa.chain) u
       WHERE c.wallet_id = ${w.id} AND c.chain = u.chain`.execute(trx);
    await settleChains(
      trx,
      w.chains.map((_, chain) => ({ walletId: w.id, chain })),
      opts,
    );
    return row;
  });
}

/** The key's live wallets, oldest first. */
export async function listWallets(db: Db, keyId: bigint): Promise<WalletRow[]> {
  return db
    .selectFrom('wallets')
    .select(WALLET_COLUMNS)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One live wallet of the key, or undefined. */
export async function findWallet(db: Db, keyId: bigint, id: string): Promise<WalletRow | undefined> {
  return db
    .selectFrom('wallets')
    .select(WALLET_COLUMNS)
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The chains of a wallet, in order. */
export async function walletChains(db: Db, walletId: string): Promise<WalletChainRow[]> {
  return db
    .selectFrom('wallet_chains')
    .select(['chain', 'descriptor', 'change', 'derived', 'used_max'])
    .where('wallet_id', '=', walletId)
    .orderBy('chain')
    .execute();
}

/**
 * Deletes the key's wallet: its addresses and chains go (the indexer stops extending it), the
 * row stays soft-deleted, and its subscriptions end with it. False when not found.
 */
export async function deleteWallet(db: Kysely<Database>, keyId: bigint, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await lockWallets(trx);
    const r = await trx
      .updateTable('wallets')
      .set({ deleted_at: new Date() })
      .where('id', '=', id)
      .where('key_id', '=', keyId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) return false;
    await trx
      .updateTable('subscriptions')
      .set({ deleted_at: new Date() })
      .where('wallet_id', '=', id)
      .where('deleted_at', 'is', null)
      .execute();
    await trx.deleteFrom('wallet_addresses').where('wallet_id', '=', id).execute();
    await trx.deleteFrom('wallet_chains').where('wallet_id', '=', id).execute();
    return true;
  });
}

/** The wallet's distinct addresses: the first (chain, index) of each addr_key. */
const walletKeys = (walletId: string) => sql`
  (SELECT DISTINCT ON (addr_key) addr_key, address, path, chain, idx FROM wallet_addresses
    WHERE wallet_id = ${walletId} ORDER BY addr_key, chain, idx)`;

/**
 * The balance summaries (indexer/wallet-balances.ts) of several (key, wallet) requests in one
 * statement, one index probe each: null where the key has no such live wallet. Balance requests
 * arriving together share it (api/cache/tick-batch.ts).
 */
export async function walletBalances(
  db: Db,
  requests: readonly { keyId: bigint; id: string }[],
): Promise<({ confirmed: bigint; unconfirmed: bigint } | null)[]> {
  const r = await sql<{ i: number; confirmed: bigint; unconfirmed: bigint }>`
    SELECT q.i::int4 AS i, w.confirmed, w.unconfirmed
      FROM unnest(${requests.map((q) => q.keyId.toString())}::int8[], ${requests.map((q) => q.id)}::text[]) WITH ORDINALITY AS q(key_id, id, i)
      CROSS JOIN LATERAL (SELECT confirmed, unconfirmed FROM wallets w WHERE w.id = q.id AND w.key_id = q.key_id AND w.deleted_at IS NULL) w`.execute(
    db,
  );
  const out = new Array<{ confirmed: bigint; unconfirmed: bigint } | null>(requests.length).fill(null);
  for (const row of r.rows) out[row.i - 1] = { confirmed: row.confirmed, unconfirmed: row.unconfirmed };
  return out;
}

export type WalletAddressRow = { address: string; path: string; chain: number; idx: number; used: boolean; reserved: boolean };

/** The wallet's derived addresses in (chain, index) order after `after`, with used / reserved; `used` filters. */
export async function listWalletAddresses(
  db: Db,
  walletId: string,
  opts: { used?: boolean; change?: boolean; after?: { chain: number; idx: number }; limit: number },
): Promise<WalletAddressRow[]> {
  const r = await sql<WalletAddressRow>`
    SELECT * FROM (
      SELECT wa.address, wa.path, wa.chain, wa.idx, wa.reserved_at IS NOT NULL AS reserved,
             (${sqlHasHistory(sql.ref('wa.addr_key'))}
              OR EXISTS (SELECT 1 FROM mempool_addresses m WHERE m.addr_key = wa.addr_key)) AS used
        FROM wallet_addresses wa JOIN wallet_chains c ON c.wallet_id = wa.wallet_id AND c.chain = wa.chain
       WHERE wa.wallet_id = ${walletId}
         ${opts.change === undefined ? sql`` : sql`AND c.change = ${opts.change}`}
         ${opts.after ? sql`AND (wa.chain, wa.idx) > (${opts.after.chain}::int2, ${opts.after.idx}::int4)` : sql``}
       ORDER BY wa.chain, wa.idx) a
    ${opts.used === undefined ? sql`` : sql`WHERE a.used = ${opts.used}`}
    LIMIT ${opts.limit}`.execute(db);
  return r.rows;
}

/**
 * The lowest-index address of the wallet's receive (or change) chain that no transaction uses
 * and nobody reserved; with `reserve`, it is reserved (it counts as used for the gap limit, and
 * no later call answers it again). A wallet without a change chain answers change addresses from
 * its receive chain. Serialized with every other writer by the wallet lock.
 */
export async function nextAddress(
  db: Kysely<Database>,
  walletId: string,
  opts: { change: boolean; reserve: boolean },
  derive: DeriveOptions = {},
): Promise<{ address: string; path: string; chain: number; idx: number }> {
  return db.transaction().execute(async (trx) => {
    await lockWallets(trx);
    const chains = await walletChains(trx, walletId);
    // A live wallet has a chain; none left means it was deleted after the caller found it (the
    // deletion drops its chains under the same lock): answered as the wallet it now is, missing.
    const chain = chains.find((c) => c.change === opts.change) ?? chains.find((c) => !c.change) ?? chains[0];
    if (chain === undefined) throw new ServiceError('ERR_WALLET_NOT_FOUND');
    for (;;) {
      const r = await sql<{ address: string; path: string; idx: number }>`
        SELECT wa.address, wa.path, wa.idx FROM wallet_addresses wa
         WHERE wa.wallet_id = ${walletId} AND wa.chain = ${chain.chain} AND wa.reserved_at IS NULL
           AND ${sqlHasNoHistory(sql.ref('wa.addr_key'))}
           AND NOT EXISTS (SELECT 1 FROM mempool_addresses m WHERE m.addr_key = wa.addr_key)
         ORDER BY wa.idx LIMIT 1`.execute(trx);
      const a = r.rows[0];
      if (!a) {
        // Every derived address is used or reserved (a gap the indexer has not extended yet): extend now.
        await trx
          .updateTable('wallet_chains')
          .set({ used_max: sql`derived - 1` })
          .where('wallet_id', '=', walletId)
          .where('chain', '=', chain.chain)
          .execute();
        await settleChains(trx, [{ walletId, chain: chain.chain }], derive);
        continue;
      }
      if (opts.reserve) {
        await trx
          .updateTable('wallet_addresses')
          .set({ reserved_at: new Date() })
          .where('wallet_id', '=', walletId)
          .where('chain', '=', chain.chain)
          .where('idx', '=', a.idx)
          .execute();
        await trx
          .updateTable('wallet_chains')
          .set({ used_max: sql`greatest(used_max, ${a.idx})` })
          .where('wallet_id', '=', walletId)
          .where('chain', '=', chain.chain)
          .execute();
        await settleChains(trx, [{ walletId, chain: chain.chain }], derive);
      }
      return { ...a, chain: chain.chain };
    }
  });
}

export type WalletUnspentRow = {
  txid: Buffer;
  vout: number;
  value: bigint;
  script: Buffer;
  /** Null for a mempool output. */
  txNum: bigint | null;
  address: string;
  path: string;
  chain: number;
  idx: number;
};

/**
 * The wallet's unspent outputs: confirmed outputs and mempool outputs, both left out when a
 * mempool transaction spends them; mempool ones first, then newest first by (tx_num, vout).
 * Paged by keyset below `before` (a confirmed position): the first page (`before` null) holds
 * every mempool output, and at most `limit` confirmed ones each page. Each address gives at most
 * its newest `limit` outputs below the bound (an index range of utxos_addr), so a page reads
 * addresses × `limit` rows at most, not every unspent output of the wallet.
 */
export async function listWalletUnspent(
  db: Db,
  walletId: string,
  opts: { before: { txNum: bigint; vout: number } | null; limit: number },
): Promise<WalletUnspentRow[]> {
  const mempool = opts.before
    ? sql``
    : sql`(SELECT o.txid, o.vout, o.value, o.script, NULL::int8 AS tx_num, k.address, k.path, k.chain, k.idx, 0 AS part
             FROM k JOIN mempool_outputs o ON o.addr_key = k.addr_key
            WHERE NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = o.txid AND s.prev_vout = o.vout))
          UNION ALL`;
  const r = await sql<WalletUnspentRow & { tx_num: bigint | null; part: number }>`
    WITH k AS ${walletKeys(walletId)}
    SELECT * FROM (
      ${mempool}
      (SELECT u.txid, u.vout, u.value, u.script, u.tx_num, k.address, k.path, k.chain, k.idx, 1 AS part
         FROM k CROSS JOIN LATERAL (
              SELECT u.txid, u.vout, u.value, u.script, u.tx_num FROM utxos u
               WHERE u.addr_key = k.addr_key
                 AND NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)
                 ${opts.before ? sql`AND (u.tx_num, u.vout) < (${opts.before.txNum}, ${opts.before.vout})` : sql``}
               ORDER BY u.tx_num DESC, u.vout DESC
               LIMIT ${opts.limit}) u
        ORDER BY u.tx_num DESC, u.vout DESC
        LIMIT ${opts.limit})
    ) x
    ORDER BY part, tx_num DESC, txid DESC, vout DESC`.execute(db);
  return r.rows.map((x) => ({
    txid: x.txid,
    vout: x.vout,
    value: x.value,
    script: x.script,
    txNum: x.tx_num,
    address: x.address,
    path: x.path,
    chain: x.chain,
    idx: x.idx,
  }));
}

export type WalletHistoryEntry = {
  txid: Buffer;
  /** Null for a mempool transaction. */
  txNum: bigint | null;
  firstSeenUs: bigint | null;
  received: bigint;
  sent: bigint;
};

/** The key an output counts under, by its tag: a P2PK output under its key's P2PKH script, any other under its own script. */
function countedKey(tag: OutTag): string | null {
  return tag.multisig ? tag.own : tagPaysKey(tag);
}

/**
 * One page of the wallet's merged history, newest first: mempool transactions first (after
 * `mempoolAfter`; none when it is null), then confirmed ones below `before` (a tx_num); at
 * most `limit` + 1 of each part (the caller cuts the page). The confirmed part is the newest
 * entries of the wallet's addresses together (readNewestHistory). Amounts: what the transaction
 * pays to and spends from the wallet's addresses.
 */
export async function listWalletHistory(
  db: Db,
  walletId: string,
  opts: { mempoolAfter: { firstSeenUs: bigint; txid: Buffer } | undefined | null; before: bigint | null; limit: number },
): Promise<WalletHistoryEntry[]> {
  const keys = (
    await sql<{ addr_key: string }>`SELECT DISTINCT addr_key FROM wallet_addresses WHERE wallet_id = ${walletId}`.execute(db)
  ).rows.map((r) => r.addr_key);
  const mine = new Set(keys.map(tagPrefix));
  const isMine = (tag: OutTag) => {
    const k = countedKey(tag);
    return k !== null && mine.has(k);
  };
  const out: WalletHistoryEntry[] = [];
  if (opts.mempoolAfter !== null) {
    const after = opts.mempoolAfter;
    const m = await sql<{ txid: Buffer; received: bigint; sent: bigint; fs: bigint }>`
      SELECT ma.txid, sum(ma.received)::int8 AS received, sum(ma.sent)::int8 AS sent, (extract(epoch FROM mt.first_seen) * 1000000)::int8 AS fs
        FROM mempool_addresses ma JOIN mempool_txs mt ON mt.txid = ma.txid
       WHERE ma.addr_key = ANY(${keys}::uuid[])
       GROUP BY ma.txid, mt.first_seen
       ORDER BY mt.first_seen DESC, ma.txid DESC`.execute(db);
    for (const x of m.rows) {
      if (after && (x.fs > after.firstSeenUs || (x.fs === after.firstSeenUs && Buffer.compare(x.txid, after.txid) >= 0))) continue;
      if (out.length > opts.limit) break;
      out.push({ txid: x.txid, txNum: null, firstSeenUs: x.fs, received: x.received, sent: x.sent });
    }
  }
  const bound = opts.before ?? 1n << 62n;
  const page = await readNewestHistory(db, keys, bound, opts.limit);
  if (page.length > 0) {
    const txs = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer; ins: Buffer }>`
      SELECT t.tx_num, t.txid, t.outs, t.ins FROM ${txRowsAtNums(page)} t`.execute(db);
    const byNum = new Map(txs.rows.map((t) => [t.tx_num, t]));
    const prevNums = new Set<bigint>();
    for (const t of txs.rows) for (const ref of decodeIns(t.ins)) prevNums.add(ref.txNum);
    const prev = new Map<bigint, Buffer>();
    if (prevNums.size > 0) {
      const p = await sql<{
        tx_num: bigint;
        outs: Buffer;
      }>`SELECT t.tx_num, t.outs FROM ${txRowsAtNums(prevNums)} t`.execute(db);
      for (const x of p.rows) prev.set(x.tx_num, x.outs);
    }
    for (const n of page) {
      const t = byNum.get(n);
      if (!t) continue; // (a reorg between the two statements: the entry is gone)
      let received = 0n;
      let sent = 0n;
      for (const o of decodeOutTags(t.outs)) if (isMine(o.tag)) received += o.value;
      for (const ref of decodeIns(t.ins)) {
        const outs = prev.get(ref.txNum);
        const o = outs ? decodeOutTag(outs, ref.vout) : undefined;
        if (o && isMine(o.tag)) sent += o.value;
      }
      out.push({ txid: t.txid, txNum: n, firstSeenUs: null, received, sent });
    }
  }
  return out;
}
