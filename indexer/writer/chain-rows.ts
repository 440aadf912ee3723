/**
 * The chain tables' rows on the per-block path, inside the block's transaction: the tip (read,
 * locked with keyed plans, set), balances, unspent outputs (inserted, spent), history chunks
 * (inserted, cut back on undo) and BIP30's overwritten coinbase outputs. apply.ts calls them in
 * order; docs/schema.md gives each table's apply and undo rule.
 * @module
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { addWalletDeltaArrays } from '../wallet-balances.js';
import { byteaArray, int4Array, int8Array, int8PrefixArray, uuidArray } from '../../src/db/pg-array.js';
import { decodeEntries, encodeEntries, historyChunks, SQL_HISTORY } from '../../src/db/history-entries.js';
import { addDelta, hashKey, type BlockRows, type Delta, type Prevout, type TxRow, type UtxoRow } from './derive.js';
import { toBuffer } from '../mempool-rows.js';
import { txidIsKeyed } from '../../src/db/txid-key.js';
import { withClientOf } from '../../src/db/connect.js';
import { HISTORY_ROWS } from '../../src/db/history-reads.js';
import { RECENT_TABLE } from './history-recent.js';
import { BALANCE_MERGE_ACTIONS, RECENT_BALANCES } from './balances-recent.js';
import { BinaryCopy, copyIn } from './copy-binary.js';
import { uuidTextOfBytes } from '../../src/db/address-key.js';
import { uuidHead } from '../../src/db/uuid-bytes.js';
import type { TxidCache } from './txid-cache.js';
import { OutpointMap } from './txid-maps.js';
import { partTxNumCandidates, txRowsByTxids } from '../../src/db/tx-reads.js';
import { RetryableError } from '../../src/errors.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import type { SpentOutput } from '../node-rest.js';

export type Trx = Transaction<Database>;

/** One `history` row's content before it is encoded. */
type HistoryChunk = ReturnType<typeof historyChunks>[number];

export type Tip = { height: number; hash: Buffer | null };

export const int8s = (xs: readonly (number | bigint)[]) => xs.map((x) => x.toString());

/*
 * Key order. Each per-block statement below feeds its rows to PostgreSQL sorted by the key of the
 * index it inserts into or probes (`ORDER BY` over the unnest, a few ms of sorting in the
 * server; the binary COPYs sort their rows here). A block's keys are hashes, so in arrival order each of its ~40,000 index entries
 * lands on a random leaf; in key order consecutive entries descend through the same inner pages
 * and often the same leaf, which PostgreSQL finds warm in the CPU caches. Measured on a
 * 600-block index (commit 78f71a8): history insert -30 %,
 * balances MERGE -10–40 %, utxos insert and spend delete -15–35 %. `txs` keeps tx_num order: its
 * primary key then grows at its right edge (full pages), which a txid order would split.
 */

/** The stored tip (height -1, hash null when empty). */
export async function readTip(db: Kysely<Database> | Trx): Promise<Tip> {
  const r = await db.selectFrom('chain_tip').select(['height', 'hash']).where('id', '=', 1).executeTakeFirst();
  return r ?? { height: -1, hash: null };
}

/** Locks the tip for a block transaction (the writer's one lock on the chain). */
export async function lockTip(trx: Trx): Promise<Tip> {
  const r = await sql<Tip>`SELECT height, hash FROM chain_tip WHERE id = 1 FOR UPDATE`.execute(trx);
  return r.rows[0] ?? { height: -1, hash: null };
}

export async function setTip(trx: Trx, height: number, hash: Uint8Array | null): Promise<void> {
  await sql`UPDATE chain_tip SET height = ${height}, hash = ${hash === null ? null : toBuffer(hash)}, updated_at = now() WHERE id = 1`.execute(
    trx,
  );
}

/**
 * Adds `sign` × each delta to `balances`, deleting rows that reach 0 sats and 0 outputs (with
 * `recent`, a live block's: appends them to `balances_recent` instead, balances-recent.ts), and
 * the same deltas to the balance summaries of the wallets holding those addresses.
 */
export async function addBalances(trx: Trx, deltas: ReadonlyMap<string, Delta>, sign: 1 | -1, recent = false): Promise<void> {
  const keys: string[] = [];
  const sats: bigint[] = [];
  const counts: number[] = [];
  for (const [k, d] of deltas) {
    if (d.sats === 0n && d.count === 0) continue;
    keys.push(k);
    sats.push(sign === 1 ? d.sats : -d.sats);
    counts.push(sign * d.count);
  }
  if (keys.length === 0) return;
  // Encoded here, once for both statements, while the statements before them run (pg-array.ts).
  const keyArray = uuidArray(keys);
  const satsArray = int8Array(sats);
  if (recent) {
    // Appended apart, in key order (balances-recent.ts): the move merges them when idle.
    const c = new BinaryCopy(keys.length * 40);
    for (const i of keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0)))
      c.row(3).uuid(keys[i]!).int8(sats[i]!).int4(counts[i]!);
    await copyRows(trx, `${RECENT_BALANCES} (addr_key, balance, utxo_count)`, c);
  } else {
    // One MERGE: each address is looked up once; rows reaching 0 sats and 0 outputs go away. (Split
    // into a DELETE of the rows a negative count empties and an INSERT … ON CONFLICT DO UPDATE of
    // the rest, the rows a delta moves without emptying are looked up twice: slower, measured.)
    await sql`
      MERGE INTO balances AS b
      USING (SELECT * FROM unnest(${keyArray}::uuid[], ${satsArray}::int8[], ${int4Array(counts)}::int4[]) AS d(addr_key, sats, n) ORDER BY addr_key) AS d
      ${sql.raw(BALANCE_MERGE_ACTIONS)}`.execute(trx);
  }
  await addWalletDeltaArrays(trx, 'confirmed', keyArray, satsArray);
}

/**
 * Inserts unspent outputs by binary COPY, in the key's order: a block's new outputs append at
 * the right edge of `utxos_pkey` (tx_num, vout).
 */
export async function insertUtxos(trx: Trx, rows: readonly UtxoRow[]): Promise<void> {
  await insertUtxosCopy(trx, utxosCopy(rows));
}

/** Inserts the unspent outputs `c` holds (`appendUtxos`, in (tx_num, vout) order) by binary COPY. */
export async function insertUtxosCopy(trx: Trx, c: BinaryCopy): Promise<void> {
  if (c.rows === 0) return;
  await copyRows(trx, 'utxos (txid, vout, tx_num, addr_key, value, script)', c);
}

/** `insertUtxos`'s COPY data: the rows in (tx_num, vout) order. */
export function utxosCopy(rows: readonly UtxoRow[]): BinaryCopy {
  const sorted = [...rows].sort((a, b) => a.txNum - b.txNum || a.vout - b.vout);
  return appendUtxos(new BinaryCopy(rows.length * 96), sorted);
}

/**
 * Appends `rows` to `c`, a utxos COPY (`insertUtxosCopy`), as they are: a writer that builds
 * it a part at a time gives the parts in (tx_num, vout) order.
 */
export function appendUtxos(c: BinaryCopy, rows: readonly UtxoRow[]): BinaryCopy {
  for (const r of rows) {
    c.row(6).bytea(r.txid).int4(r.vout).int8(r.txNum);
    if (r.key === null) c.null();
    else c.uuid(r.key);
    c.int8(r.value).bytea(r.script);
  }
  return c;
}

/** Writes the rows of `c` into `target` (a table and its column list) by binary COPY, inside the transaction. */
async function copyRows(trx: Trx, target: string, c: BinaryCopy): Promise<void> {
  const data = c.finish();
  await withClientOf(trx, (client) => copyIn(client, target, data));
}

/**
 * Inserts the history chunks of one block's (or consecutive blocks') address entries, into
 * `history_recent` when `recent` (a live block: history-recent.ts), else into `history`.
 */
export async function insertHistory(trx: Trx, history: ReadonlyMap<string, readonly number[]>, recent = false): Promise<void> {
  await insertHistoryChunks(trx, historyChunks(history), recent);
}

/**
 * Inserts history chunks as `historyChunks` cuts them per block: consecutive blocks written in
 * one turn pass every block's chunks, so the rows are those each block alone would insert.
 */
export async function insertHistoryChunks(trx: Trx, chunks: readonly HistoryChunk[], recent = false): Promise<void> {
  if (chunks.length === 0) return;
  await copyRows(trx, `${recent ? RECENT_TABLE : 'history'} (addr_key, first_tx_num, rest)`, historyCopy(chunks));
}

/** `insertHistoryChunks`'s COPY data: the chunks in (addr_key, first_tx_num) order. */
export function historyCopy(chunks: readonly HistoryChunk[]): BinaryCopy {
  const c = new BinaryCopy(chunks.length * 64);
  for (const i of keyOrder(chunks)) {
    const h = chunks[i]!;
    c.row(3).uuid(h.key).int8(h.first).byteaEntries(h.entries, 1);
  }
  return c;
}

/**
 * The positions of `chunks` in (addr_key, first_tx_num) order, the keys' text compared only when
 * their first 8 hex digits (as a number, `uuidHead`) are equal: a block's
 * ~16,000 random keys rarely share them, and comparing numbers costs a fraction of comparing text.
 */
function keyOrder(chunks: readonly HistoryChunk[]): Uint32Array {
  const n = chunks.length;
  const head = new Float64Array(n);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    order[i] = i;
    head[i] = uuidHead(chunks[i]!.key);
  }
  return order.sort((a, b) => {
    const d = head[a]! - head[b]!;
    if (d !== 0) return d;
    const x = chunks[a]!;
    const y = chunks[b]!;
    return x.key < y.key ? -1 : x.key > y.key ? 1 : x.first - y.first;
  });
}

/** Inserts blocks' `blocks` rows (height order). */
export async function insertBlocks(trx: Trx, blocks: readonly BlockRows[]): Promise<void> {
  await sql`
    INSERT INTO blocks (height, hash, prev_hash, header, time, tx_count, size, weight)
    SELECT * FROM unnest(${blocks.map((r) => r.height)}::int4[], ${blocks.map((r) => toBuffer(r.hash))}::bytea[], ${blocks.map((r) => toBuffer(r.prevHash))}::bytea[],
      ${blocks.map((r) => toBuffer(r.header))}::bytea[], ${blocks.map((r) => r.time)}::int4[], ${blocks.map((r) => r.txCount)}::int4[],
      ${blocks.map((r) => r.size)}::int4[], ${blocks.map((r) => r.weight)}::int4[]) AS b(height, hash, prev_hash, header, time, tx_count, size, weight)
    ORDER BY height`.execute(trx);
}

/**
 * Inserts `txs` rows by binary COPY in tx_num order (the primary key grows at its right edge),
 * each with its first sighting in the mempool when it had one (`mempool`: the mempool tables may
 * hold some of them; looked up first).
 */
export async function insertTxs(trx: Trx, txs: readonly TxRow[], mempool: boolean): Promise<void> {
  if (txs.length === 0) return;
  const seen = new Map<string, Date>();
  if (mempool) {
    const r = await sql<{ txid: Buffer; first_seen: Date }>`
      SELECT txid, first_seen FROM mempool_txs WHERE txid = ANY(${txs.map((t) => toBuffer(t.txid))}::bytea[])`.execute(trx);
    for (const x of r.rows) seen.set(hashKey(x.txid), x.first_seen);
  }
  await copyRows(trx, 'txs (tx_num, txid, outs, ins, first_seen, spent_group)', txsCopy(txs, seen));
}

/** `insertTxs`'s COPY data, each row with its first sighting in `seen` (by `hashKey(txid)`), if any. */
export function txsCopy(txs: readonly TxRow[], seen: ReadonlyMap<string, Date>): BinaryCopy {
  const c = new BinaryCopy(txs.reduce((n, t) => n + t.outs.length + t.ins.length + 88, 0));
  for (const t of txs) {
    c.row(6).int8(t.txNum).bytea(t.txid).bytea(t.outs).bytea(t.ins);
    const at = seen.size > 0 ? seen.get(hashKey(t.txid)) : undefined;
    if (at === undefined) c.null();
    else c.timestamptz(at);
    if (t.spentGroup === null) c.null();
    else c.int4(t.spentGroup);
  }
  return c;
}

/**
 * Keeps the outputs of earlier blocks that each block spends (`BlockRows.undo`) as its row of
 * `block_undo`, and lets go of the rows of blocks `keep` or more below the highest.
 */
export async function keepUndo(trx: Trx, blocks: readonly BlockRows[], keep: number): Promise<void> {
  if (blocks.length === 0) return;
  await sql`
    INSERT INTO block_undo (height, spent)
    SELECT * FROM unnest(${blocks.map((r) => r.height)}::int4[], ${blocks.map((r) => toBuffer(r.undo))}::bytea[]) AS u(height, spent)`.execute(
    trx,
  );
  await sql`DELETE FROM block_undo WHERE height <= ${blocks[blocks.length - 1]!.height - keep}`.execute(trx);
}

/** An output BIP30's repeated coinbase overwrote: its address key and value leave the balances. */
export type OverwrittenOutput = { addr_key: string | null; value: bigint };

/**
 * BIP30 (mainnet 91842 and 91880): a coinbase repeating an earlier coinbase's txid overwrites
 * its unspent outputs, as in Core, where the older outputs are lost. Their rows go and their
 * value leaves the balances with this block (as the bulk path does; `balances`: the deltas the
 * write adds); undo cannot bring them back, and neither can Core. One statement for the
 * coinbases of `blocks` (a turn's blocks never share a coinbase txid: apply-turn.ts `turnLength`).
 */
export async function dropOverwrittenCoinbase(trx: Trx, blocks: readonly BlockRows[], balances: Map<string, Delta>): Promise<void> {
  const coinbases = blocks.flatMap((b) => (b.txs[0] ? [b.txs[0]] : []));
  for (const old of await deleteOverwrittenCoinbase(trx, coinbases))
    if (old.addr_key !== null) addDelta(balances, old.addr_key, -old.value, -1);
}

/**
 * Deletes the unspent outputs of earlier transactions whose txid one of `coinbases` (each the
 * first transaction of its block, with its tx_num) repeats, and returns them
 * (`dropOverwrittenCoinbase`'s statement, for a writer that sends it before its deltas are derived).
 */
export async function deleteOverwrittenCoinbase(
  trx: Trx,
  coinbases: readonly { txid: Uint8Array; txNum: number }[],
): Promise<OverwrittenOutput[]> {
  if (coinbases.length === 0) return [];
  const r = await sql<OverwrittenOutput>`
    DELETE FROM utxos u
     USING (SELECT * FROM unnest(${coinbases.map((c) => toBuffer(c.txid))}::bytea[], ${int8s(coinbases.map((c) => c.txNum))}::int8[]) AS c(txid, tx_num)) c,
           ${txRowsByTxids(coinbases.map((c) => c.txid))} t
    WHERE t.txid = c.txid AND t.tx_num <> c.tx_num AND u.tx_num = t.tx_num
    RETURNING u.addr_key, u.value`.execute(trx);
  return r.rows;
}

/**
 * Deletes the spent outputs and returns them as prevouts by outpoint, with their
 * scripts (the block's undo row keeps them). `utxos` is keyed by (tx_num, vout): the outpoints
 * whose txid `txids` (the recent transactions, txid-cache.ts) names are deleted by that key at
 * once, where the row's own txid is theirs (a wrong or colliding entry deletes nothing, and its
 * outpoint goes on to the lookup); the others' txids are turned into tx_nums through
 * `txs_txid_key`, then their rows are deleted in `utxos_pkey` order. A txid two txs rows share
 * (BIP30's duplicate coinbases) gives two candidates, of which at most one is still unspent.
 * With `given` (the outputs the block spends as the node gave them, by outpoint: apply.ts
 * `BlockToApply.spent`), the rows come back without their scripts, which are taken from there,
 * and each row's value is checked against the node's (a difference: ERR_SPENT_MISMATCH,
 * retryable; the run loop applies the block again with the scripts from the index).
 */
export async function spendUtxos(
  trx: Trx,
  outpoints: readonly { txid: Uint8Array; vout: number }[],
  txids?: TxidCache,
  given?: OutpointMap<SpentOutput>,
): Promise<OutpointMap<Prevout>> {
  const found = new OutpointMap<Prevout>();
  const keyed: KeyedOutpoint[] = [];
  const looked: { txid: Uint8Array; vout: number }[] = [];
  for (const o of outpoints) {
    const n = txids?.get(o.txid);
    if (n === undefined) looked.push(o);
    else keyed.push({ txid: o.txid, vout: o.vout, txNum: n });
  }
  const spend = async (k: readonly KeyedOutpoint[], l: readonly { txid: Uint8Array; vout: number }[]) =>
    takePacked(found, [...k, ...l], (await spendStatement(k, l, given === undefined).execute(trx)).rows[0]?.packed ?? null, given);
  for (let i = 0; i < keyed.length || i < looked.length; i += SPEND_STATEMENT_MAX)
    await spend(keyed.slice(i, i + SPEND_STATEMENT_MAX), looked.slice(i, i + SPEND_STATEMENT_MAX));
  const wrong = keyed.filter((o) => !found.has(o.txid, o.vout));
  for (let i = 0; i < wrong.length; i += SPEND_STATEMENT_MAX) await spend([], wrong.slice(i, i + SPEND_STATEMENT_MAX));
  return found;
}

/** Outpoints per spend statement, at most, of either kind. */
const SPEND_STATEMENT_MAX = 20_000;

type KeyedOutpoint = { txid: Uint8Array; vout: number; txNum: number };

/**
 * The one statement deleting spent outputs (`spendUtxos`): the `keyed` outpoints by their
 * (tx_num, vout) where the row's txid is theirs, the `looked` ones through `txs_txid_key` (each
 * txid's key sent with it, its first 8 bytes: `int8PrefixArray`, so PostgreSQL computes none for
 * a block's ~8,000 outpoints) and through the parts' txid buckets, whose candidates
 * (src/db/tx-reads.ts `partTxNumCandidates`) are settled as the keyed ones are, by the row's txid,
 * all deleted in `utxos_pkey` order. The deleted rows come back packed into one bytea
 * (`takePacked` reads it), each as the outpoint's position `i` (from 1) in `keyed` followed by
 * `looked` (int4; the writer has its txid and vout), its tx_num and value (int8), a flag byte and
 * the address key's 16 bytes when it has one, and the script (int4 length, bytes; without
 * `scripts`, none: the writer has them from the node, and the server reads, concatenates and
 * sends nearly half the bytes less on the block's critical path): node-postgres
 * would parse ~2,000 rows of five text columns (hex scripts, uuids, int8s into BigInts) while the
 * server waits for the next statement, which it sends only once it has read this one's answer.
 * One statement rather than one per kind, for the same reason.
 */
export function spendStatement(keyed: readonly KeyedOutpoint[], looked: readonly { txid: Uint8Array; vout: number }[], scripts = true) {
  return sql<{ packed: Buffer | null }>`
    WITH l AS MATERIALIZED (
      SELECT * FROM unnest(${int8PrefixArray(looked.map((o) => o.txid))}::int8[], ${byteaArray(looked.map((o) => o.txid))}::bytea[], ${int4Array(looked.map((o) => o.vout))}::int4[]) WITH ORDINALITY AS s(k, txid, vout, i)),
    d AS (
    DELETE FROM utxos u USING (
      SELECT * FROM (
        SELECT k.tx_num, k.vout, k.txid, k.i
          FROM unnest(${int8Array(keyed.map((o) => o.txNum))}::int8[], ${int4Array(keyed.map((o) => o.vout))}::int4[], ${byteaArray(keyed.map((o) => o.txid))}::bytea[]) WITH ORDINALITY AS k(tx_num, vout, txid, i)
        UNION ALL
        SELECT t.tx_num, s.vout, NULL::bytea, s.i + ${keyed.length}
          FROM (SELECT * FROM l ORDER BY k) AS s
          JOIN txs t ON ${txidIsKeyed(sql.ref('t.txid'), sql.ref('s.k'), sql.ref('s.txid'))}
        UNION ALL
        SELECT p.tx_num, s.vout, s.txid, s.i + ${keyed.length}
          FROM l AS s CROSS JOIN LATERAL ${partTxNumCandidates(sql.ref('s.txid'))} AS p
      ) s ORDER BY tx_num, vout) AS s
    WHERE u.tx_num = s.tx_num AND u.vout = s.vout AND (s.txid IS NULL OR u.txid = s.txid)
    RETURNING s.i::int4 AS i, u.tx_num, u.value, ${scripts ? sql`u.script, ` : sql``}u.addr_key)
    SELECT string_agg(
      int4send(d.i) || int8send(d.tx_num) || int8send(d.value)
        || CASE WHEN d.addr_key IS NULL THEN decode('00', 'hex') ELSE decode('01', 'hex') || uuid_send(d.addr_key) END
        ${scripts ? sql`|| int4send(length(d.script)) || d.script` : sql``}, ''::bytea) AS packed
      FROM d`;
}

/**
 * Adds the spent outputs `packed` holds (`spendStatement`'s answer; null: none) to `found` as
 * prevouts of `outpoints`; with `given`, the answer holds no scripts and they are taken from it.
 * @throws RetryableError ERR_SPENT_MISMATCH when `given` lacks a deleted output or gives it another value
 */
export function takePacked(
  found: OutpointMap<Prevout>,
  outpoints: readonly { txid: Uint8Array; vout: number }[],
  packed: Buffer | null,
  given?: OutpointMap<SpentOutput>,
): void {
  if (packed === null) return;
  for (let at = 0; at < packed.length;) {
    const o = outpoints[packed.readInt32BE(at) - 1];
    if (o === undefined) throw new RangeError(`spend answer names outpoint ${packed.readInt32BE(at)} of ${outpoints.length}`);
    // (a tx_num is below 2^53: height < 2^33)
    const txNum = packed.readUInt32BE(at + 4) * 2 ** 32 + packed.readUInt32BE(at + 8);
    const value = packed.readBigInt64BE(at + 12);
    at += 20;
    const key = packed[at] === 1 ? uuidTextOfBytes(packed.subarray(at + 1, at + 17)) : null;
    at += key === null ? 1 : 17;
    let script: Uint8Array;
    if (given === undefined) {
      const n = packed.readInt32BE(at);
      script = packed.subarray(at + 4, at + 4 + n);
      at += 4 + n;
    } else {
      const g = given.get(o.txid, o.vout);
      if (g === undefined || g.value !== value)
        throw new RetryableError(
          'ERR_SPENT_MISMATCH',
          `the node's spent output ${hashToHex(o.txid)}:${o.vout} ${g === undefined ? 'is missing' : `has value ${g.value}`}; the index's has ${value}`,
        );
      script = g.script;
    }
    found.set(o.txid, o.vout, key !== null ? { txNum, value, script, keys: key } : { txNum, value, script });
  }
}

/**
 * Truncates or deletes the history chunks of `keys` holding entries at or above `fromTxNum`, in
 * both chunk tables (`history` and `history_recent`: a block's rows are in either).
 */
export async function cutHistory(trx: Trx, keys: readonly string[], fromTxNum: number): Promise<void> {
  if (keys.length === 0) return;
  const from = fromTxNum.toString();
  const keyArray = uuidArray(keys);
  for (const table of ['history', RECENT_TABLE])
    await sql`DELETE FROM ${sql.table(table)} WHERE addr_key = ANY(${keyArray}::uuid[]) AND first_tx_num >= ${from}::int8`.execute(trx);
  // Chunks never overlap, so only an address's newest remaining chunk (of either table) can reach
  // into the range: the one whose last entry (the last 8 bytes of `rest`) is at or above it.
  const straddling = await sql<{ addr_key: string; first_tx_num: bigint; rest: Buffer; row_table: string }>`
    SELECT k AS addr_key, h.first_tx_num, h.rest, h.row_table
    FROM unnest(${keyArray}::uuid[]) AS k
    CROSS JOIN LATERAL (SELECT first_tx_num, rest, row_table FROM ${sql.raw(HISTORY_ROWS)} r WHERE addr_key = k ORDER BY first_tx_num DESC LIMIT 1) h
    WHERE length(h.rest) > 0 AND ${sql.raw(SQL_HISTORY.lastEntry('h.rest'))} >= ${from}::int8`.execute(trx);
  for (const c of straddling.rows) {
    const kept = decodeEntries(c.rest).filter((n) => n < BigInt(fromTxNum));
    await sql`
      UPDATE ${sql.table(c.row_table)} SET rest = ${encodeEntries(kept)}
      WHERE addr_key = ${c.addr_key}::uuid AND first_tx_num = ${c.first_tx_num.toString()}::int8`.execute(trx);
  }
}
