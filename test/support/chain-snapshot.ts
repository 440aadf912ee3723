/**
 * Reading an index back for indexer tests: a whole-index snapshot (every chain table as sorted
 * rows, history expanded per address so chunking does not matter) for "equals a fresh index of
 * the same chain" assertions, a UTXO-set hash, and what Bitcoin Core's expected.json states per
 * address (balance, history in chain order, unspent outputs) read from the tables.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { BALANCE_ROWS } from '../../src/db/balance-reads.js';
import { decodeEntries, historyChunkEntries } from '../../src/db/history-entries.js';
import { HISTORY_ROWS, readHistoryEntries } from '../../src/db/history-reads.js';
import { txRowsAtNums, txRowsFrom, type TxRow } from '../../src/db/tx-reads.js';
import { RECORD_BYTES, recordTxNum } from '../../src/db/history-buckets.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { addressKey, uuidHex } from '../../src/db/address-key.js';
import { addressToScript } from '../../src/bitcoin/address.js';
import type { NetworkName } from '../../src/bitcoin/network.js';

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));

export interface IndexSnapshot {
  tip: { height: number; hash: string | null };
  blocks: string[];
  txs: string[];
  utxos: string[];
  balances: string[];
  /**
   * Every address's tx_nums, ascending, under its identity (`~` and the key's bytes 4..11, the 8
   * bytes a bucket record keeps), wherever they are: chunk rows (chunking ignored), its bucket,
   * or both (older entries folded, newer not yet). So two indexes compare whatever their `busy`,
   * bucket counts and fold points, which the way the chain came decides (`historyPlaces` tells the
   * places apart). An address's full key is read through the readers' seam by `readAddresses`.
   */
  history: string[];
  mempool: string[];
  /** script_key → addr_key keyed (P2PK and bare multisig scripts). */
  aliases: string[];
  /** Open Assets colors of the confirmed transactions that have them. */
  assets: string[];
}

/** Every chain table as sorted text rows (the outbox is not part of index state). */
export async function snapshotIndex(db: Kysely<Database>): Promise<IndexSnapshot> {
  const tip = (await db.selectFrom('chain_tip').selectAll().executeTakeFirstOrThrow()) as { height: number; hash: Buffer | null };
  const blocks = (
    await sql<{
      height: number;
      hash: Buffer;
      prev_hash: Buffer;
      header: Buffer;
      time: number;
      tx_count: number;
      size: number;
      weight: number;
    }>`SELECT * FROM blocks ORDER BY height`.execute(db)
  ).rows.map((b) => `${b.height} ${hex(b.hash)} ${hex(b.prev_hash)} ${hex(b.header)} ${b.time} ${b.tx_count} ${b.size} ${b.weight}`);
  // (through the readers' seam: the same transactions whether in rows or folded into parts)
  const txs = (await sql<TxRow>`SELECT * FROM ${txRowsFrom(0n, null)} t ORDER BY tx_num`.execute(db)).rows.map(
    (t) => `${t.tx_num} ${hex(t.txid)} ${hex(t.outs)} ${hex(t.ins)}`,
  );
  const utxos = (
    await sql<{
      txid: Buffer;
      vout: number;
      tx_num: bigint;
      addr_key: string | null;
      value: bigint;
      script: Buffer;
    }>`SELECT * FROM utxos ORDER BY txid, vout`.execute(db)
  ).rows.map((u) => `${hex(u.txid)}:${u.vout} ${u.tx_num} ${u.addr_key} ${u.value} ${hex(u.script)}`);
  const balances = (
    await sql<{
      addr_key: string;
      balance: bigint;
      utxo_count: number;
    }>`SELECT * FROM ${sql.raw(BALANCE_ROWS)} b ORDER BY addr_key`.execute(db)
  ).rows.map((b) => `${b.addr_key} ${b.balance} ${b.utxo_count}`);
  const { chunks, records } = await readHistoryPlaces(db);
  const ids = new Map<string, number[]>();
  const add = (id: string, nums: readonly number[]) => ids.set(id, [...(ids.get(id) ?? []), ...nums]);
  for (const [k, l] of chunks) add(identityOf(k), l.map(Number));
  for (const [id, l] of records) add(id, l);
  const history = [...ids].map(([k, l]) => `${k} ${l.sort((a, b) => a - b).join(',')}`).sort();
  const mempool = (await sql<{ txid: Buffer }>`SELECT txid FROM mempool_txs ORDER BY txid`.execute(db)).rows.map((m) => hex(m.txid)!);
  const aliases = (
    await sql<{ script_key: string; addr_key: string; keyed: boolean }>`SELECT * FROM script_aliases ORDER BY script_key`.execute(db)
  ).rows.map((a) => `${a.script_key} ${a.addr_key} ${a.keyed}`);
  const assets = (await sql<{ tx_num: bigint; colors: Buffer }>`SELECT tx_num, colors FROM asset_txs ORDER BY tx_num`.execute(db)).rows.map(
    (a) => `${a.tx_num} ${hex(a.colors)}`,
  );
  return { tip: { height: tip.height, hash: hex(tip.hash) }, blocks, txs, utxos, balances, history, mempool, aliases, assets };
}

/** SHA-256 over the sorted UTXO set (outpoint, value, script). */
export async function utxoSetHash(db: Kysely<Database>): Promise<string> {
  const rows = await sql<{
    txid: Buffer;
    vout: number;
    value: bigint;
    script: Buffer;
  }>`SELECT txid, vout, value, script FROM utxos ORDER BY txid, vout`.execute(db);
  const h = createHash('sha256');
  for (const r of rows.rows) h.update(`${hex(r.txid)}:${r.vout}:${r.value}:${hex(r.script)}\n`);
  return h.digest('hex');
}

/** The key of an address as the index stores it. */
export function keyOfAddress(address: string, network: NetworkName): string {
  return addressKey(addressToScript(address, network));
}

export interface AddressView {
  balance: bigint;
  /** Txids (display hex) in chain order. */
  history: string[];
  unspent: { transaction_hash: string; index: number; value: string; script: string; height: number; coinbase: boolean }[];
}

/** What the index says about one address (confirmed state). */
export async function readAddress(db: Kysely<Database>, key: string): Promise<AddressView> {
  return (await readAddresses(db, [key])).get(key)!;
}

/**
 * What the index says about many addresses (confirmed state), in four statements whatever their
 * number: a test comparing thousands of addresses pays one round trip per table, not per address.
 */
export async function readAddresses(db: Kysely<Database>, keys: readonly string[]): Promise<Map<string, AddressView>> {
  const out = new Map<string, AddressView>(keys.map((k) => [k, { balance: 0n, history: [], unspent: [] }]));
  const bal = await sql<{
    addr_key: string;
    balance: bigint;
  }>`SELECT addr_key, balance FROM ${sql.raw(BALANCE_ROWS)} b WHERE addr_key = ANY(${keys}::uuid[])`.execute(db);
  for (const b of bal.rows) out.get(b.addr_key)!.balance = b.balance;
  // (through the readers' seam: what every reader of a whole history reads)
  const entries = await readHistoryEntries(db, keys);
  const numsOf = new Map(keys.map((k, i) => [k, entries[i]!]));
  const all = [...new Set([...numsOf.values()].flat())];
  const txid = new Map<bigint, string>();
  if (all.length > 0) {
    const r = await sql<{
      tx_num: bigint;
      txid: Buffer;
    }>`SELECT tx_num, txid FROM ${txRowsAtNums(all)} t`.execute(db);
    for (const t of r.rows) txid.set(t.tx_num, hashToHex(t.txid));
  }
  for (const [k, nums] of numsOf) out.get(k)!.history = nums.filter((n) => txid.has(n)).map((n) => txid.get(n)!);
  const un = await sql<{ addr_key: string; txid: Buffer; vout: number; tx_num: bigint; value: bigint; script: Buffer }>`
    SELECT addr_key, txid, vout, tx_num, value, script FROM utxos WHERE addr_key = ANY(${keys}::uuid[]) ORDER BY addr_key, tx_num, vout`.execute(
    db,
  );
  for (const u of un.rows) {
    out.get(u.addr_key)!.unspent.push({
      transaction_hash: hashToHex(u.txid),
      index: u.vout,
      value: u.value.toString(),
      script: u.script.toString('hex'),
      height: Number(u.tx_num >> 20n),
      coinbase: (u.tx_num & 0xfffffn) === 0n,
    });
  }
  return out;
}

/** An address's identity in a snapshot's history: `~` and the key's bytes 4..11 (the 8 a bucket record keeps). */
const identity = (key8: Uint8Array) => `~${Buffer.from(key8).toString('hex')}`;
const identityOf = (key: string) => identity(Buffer.from(uuidHex(key), 'hex').subarray(4, 12));

/**
 * The history as it is stored: per address key its chunk rows' entries, in either chunk table
 * (checked ascending and not overlapping: a row in both tables overlaps itself), per identity (`~` and the key's bytes 4..11, the bucket id left out so that the
 * bucket count does not matter) its bucket records, ascending.
 */
export async function readHistoryPlaces(db: Kysely<Database>): Promise<{ chunks: Map<string, bigint[]>; records: Map<string, number[]> }> {
  const chunks = new Map<string, bigint[]>();
  for (const c of (
    await sql<{ addr_key: string; first_tx_num: bigint; rest: Buffer }>`
      SELECT addr_key, first_tx_num, rest FROM ${sql.raw(HISTORY_ROWS)} h ORDER BY addr_key, first_tx_num`.execute(db)
  ).rows) {
    const e = decodeEntries(historyChunkEntries(c.first_tx_num, c.rest));
    if (e.some((n, i) => i > 0 && n <= e[i - 1]!)) throw new Error(`history chunk ${c.addr_key}/${c.first_tx_num} is not ascending`);
    const list = chunks.get(c.addr_key) ?? [];
    if (list.length > 0 && list[list.length - 1]! >= e[0]!) throw new Error(`history chunks of ${c.addr_key} overlap`);
    list.push(...e);
    chunks.set(c.addr_key, list);
  }
  const records = new Map<string, number[]>();
  for (const b of (await sql<{ log: Buffer }>`SELECT log FROM history_buckets ORDER BY bucket`.execute(db)).rows)
    for (let at = 0; at < b.log.length; at += RECORD_BYTES) {
      const id = identity(b.log.subarray(at, at + 8));
      const list = records.get(id) ?? [];
      list.push(recordTxNum(b.log, at));
      records.set(id, list);
    }
  for (const l of records.values()) l.sort((a, b) => a - b);
  return { chunks, records };
}
