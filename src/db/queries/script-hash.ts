/**
 * Reads by output script, as an Electrum server answers them: history, balance and unspent
 * outputs of exactly one script, named by its SHA-256 (Electrum's script hash, unreversed).
 * The index keys an address by the first 16 bytes of that SHA-256 (src/db/address-key.ts), but a
 * P2PKH key also holds the P2PK outputs of the same public key and the bare multisig outputs
 * naming it (docs/schema.md): a P2PK or bare multisig script is found through its alias
 * (`script_aliases`: its own key → the key its outputs are kept under), and every read here
 * keeps only what concerns the script itself, by comparing each output's `sha256(script)` with
 * the one asked for. Histories are read in one REPEATABLE READ transaction, so their confirmed
 * and mempool parts come from one snapshot.
 * @module
 */
import { txRowsAtNums, unspentAt } from '../tx-reads.js';
import { hash } from 'node:crypto';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../schema.js';
import { addressKeyOfScriptSha, addressKey, keptUnder } from '../address-key.js';
import { decodeIns, decodeOutTag, decodeOutTags } from '../packed.js';
import { tagIsScript, tagKeptUnder, tagPrefix, type OutTag } from '../out-tags.js';
import { readHistoryEntries, readHistoryPlaces, sqlHistoryCount, sqlHistoryTouched } from '../history-reads.js';
import { firstTxNum, txNumHeight } from '../tx-num.js';

/**
 * One script: its SHA-256 (natural byte order, 32 bytes) and the address key it falls under.
 * With `keyed` set the key is already the one its outputs are kept under (known from the script
 * itself: scriptRefOf) and no alias is looked up.
 */
export type ScriptRef = { sha: Buffer; key: string; keyed?: boolean };

/** The ScriptRef of a script's SHA-256. */
export function scriptRef(sha: Uint8Array): ScriptRef {
  if (sha.length !== 32) throw new RangeError(`a script hash is 32 bytes, got ${sha.length}`);
  return { sha: Buffer.from(sha), key: addressKeyOfScriptSha(sha) };
}

/** A mempool transaction of a script: height 0 when all its inputs are confirmed, -1 otherwise; fee in sat (null when the index does not know it). */
export type MempoolEntry = { txid: Buffer; height: 0 | -1; fee: bigint | null };
export type ConfirmedEntry = { txid: Buffer; height: number };

export type ScriptHistory =
  | { kind: 'ok'; confirmed: ConfirmedEntry[]; mempool: MempoolEntry[] }
  /** More entries than the limit: not read. `count` counts the address key's entries (an upper bound for the script). */
  | { kind: 'too_long'; count: number };

type Trx = Transaction<Database>;

const sha256 = (b: Uint8Array): Buffer => hash('sha256', b, 'buffer');

/**
 * The histories of many scripts in one snapshot: confirmed transactions in chain order, then the
 * mempool ones (unordered: the caller orders them as its protocol says). A script whose address
 * key has more than `limit` entries (confirmed and mempool together) is answered `too_long`.
 */
export async function readScriptHistories(db: Kysely<Database>, refs: readonly ScriptRef[], limit: number): Promise<ScriptHistory[]> {
  if (refs.length === 0) return [];
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute((trx) => readHistoriesIn(trx, refs, limit));
}

/** A script and the key its rows are under: its own, or its alias's; `keyed` false when its outputs carry no key (bare multisig). */
export type ResolvedScriptRef = ScriptRef & { keyed: boolean };
type Resolved = ResolvedScriptRef;

/**
 * The ScriptRef of a script given itself (not only its hash): its key is known without an alias,
 * so its outputs are found even where `script_aliases` lacks the script (P2PK outputs spent
 * before the aliases existed). Null for a script the index does not keep (OP_RETURN, nonstandard).
 */
export function scriptRefOf(script: Uint8Array): ScriptRef | null {
  const k = keptUnder(script);
  return k === null ? null : { sha: sha256(script), key: addressKey(k.canonical), keyed: k.keyed };
}

/** Each script's key through `script_aliases` (a script without an alias is under its own key). */
export async function resolveScriptRefs(db: Kysely<Database> | Trx, refs: readonly ScriptRef[]): Promise<Resolved[]> {
  const asked = refs.filter((x) => x.keyed === undefined).map((x) => x.key);
  const r =
    asked.length === 0
      ? { rows: [] }
      : await sql<{ script_key: string; addr_key: string; keyed: boolean }>`
    SELECT script_key, addr_key, keyed FROM script_aliases WHERE script_key = ANY(${asked}::uuid[])`.execute(db);
  const alias = new Map(r.rows.map((x) => [x.script_key, x]));
  return refs.map((ref) => {
    if (ref.keyed !== undefined) return { sha: ref.sha, key: ref.key, keyed: ref.keyed };
    const a = alias.get(ref.key);
    return a ? { sha: ref.sha, key: a.addr_key, keyed: a.keyed } : { ...ref, keyed: true };
  });
}

/** readScriptHistories inside a snapshot the caller holds. */
export async function readHistoriesIn(trx: Trx, asked: readonly ScriptRef[], limit: number): Promise<ScriptHistory[]> {
  const refs = await resolveScriptRefs(trx, asked);
  const keys = refs.map((r) => r.key);
  const counts = await sql<{ i: number; n: string; m: string }>`
    SELECT q.i::int4 AS i,
           ${sqlHistoryCount(sql.ref('q.k'))}::int8 AS n,
           (SELECT count(*) FROM mempool_addresses m WHERE m.addr_key = q.k)::int8 AS m
      FROM unnest(${keys}::uuid[]) WITH ORDINALITY AS q(k, i)`.execute(trx);
  const out = new Array<ScriptHistory>(refs.length);
  const readable: number[] = [];
  for (const row of counts.rows) {
    const total = Number(row.n) + Number(row.m);
    if (total > limit) out[row.i - 1] = { kind: 'too_long', count: total };
    else readable.push(row.i - 1);
  }
  if (readable.length === 0) return out;
  const rs = readable.map((i) => refs[i]!);

  // Confirmed part: every history entry of the keys, then the transactions' outputs.
  const { entries, inBucket } = await readHistoryPlaces(
    trx,
    rs.map((r) => r.key),
  );
  const nums = [...new Set(entries.flat())];
  const txs = new Map<bigint, { txid: Buffer; outs: Buffer }>();
  if (nums.length > 0) {
    const r = await sql<{ tx_num: bigint; txid: Buffer; outs: Buffer }>`
      SELECT t.tx_num, t.txid, t.outs FROM ${txRowsAtNums(nums)} t`.execute(trx);
    for (const row of r.rows) txs.set(row.tx_num, { txid: row.txid, outs: row.outs });
  }

  // Mempool part: the exact test is made by Postgres (outputs and spent prevouts of the script).
  const mempool = await sql<{ i: number; txid: Buffer; fee: bigint | null; parent: boolean }>`
    SELECT q.i::int4 AS i, ma.txid, mt.fee,
           EXISTS (SELECT 1 FROM mempool_spends s JOIN mempool_txs p ON p.txid = s.prev_txid WHERE s.txid = ma.txid) AS parent
      FROM unnest(${rs.map((r) => r.key)}::uuid[], ${rs.map((r) => r.sha)}::bytea[]) WITH ORDINALITY AS q(k, s, i)
      JOIN mempool_addresses ma ON ma.addr_key = q.k
      JOIN mempool_txs mt ON mt.txid = ma.txid
     WHERE EXISTS (SELECT 1 FROM mempool_outputs o WHERE o.txid = ma.txid AND sha256(o.script) = q.s)
        OR EXISTS (SELECT 1 FROM mempool_spends s
                     LEFT JOIN LATERAL (${unspentAt(sql.ref('s.prev_txid'), sql.ref('s.prev_vout'))}) u ON true
                     LEFT JOIN mempool_outputs o ON o.txid = s.prev_txid AND o.vout = s.prev_vout
                    WHERE s.txid = ma.txid AND sha256(coalesce(u.script, o.script)) = q.s)`.execute(trx);
  const mempoolOf: MempoolEntry[][] = rs.map(() => []);
  for (const m of mempool.rows) mempoolOf[m.i - 1]!.push({ txid: m.txid, height: m.parent ? -1 : 0, fee: m.fee });

  // A transaction is in the script's history when one of its outputs is the script, or when it
  // spends an output of the script. A key's entries without such an output spend one of the
  // key's outputs; those are all the script itself unless the key also holds outputs of other
  // scripts (the P2PKH script, P2PK and bare multisig of one public key), or when the entries come
  // from the key's bucket, whose records name the key by 8 of its 16 bytes (another address built
  // to share them has its records read too: src/db/history-reads.ts): only then are prevouts read.
  const confirmedOf: Located[][] = [];
  const unsure: { j: number; entry: Located }[] = [];
  // Each transaction's outputs are decoded once, however many of the scripts it pays.
  const outputs = new Map<bigint, OutTag[]>();
  const outputsOf = (n: bigint, packed: Buffer) => {
    let list = outputs.get(n);
    if (!list) outputs.set(n, (list = decodeOutTags(packed).map((o) => o.tag)));
    return list;
  };
  rs.forEach((ref, j) => {
    const all: Located[] = [];
    const spending: Located[] = [];
    let foreign = false;
    const sha = tagPrefix(ref.sha);
    const key = tagPrefix(ref.key);
    for (const n of entries[j]!.sort(cmp)) {
      const tx = txs.get(n);
      if (!tx) continue;
      let funds = false;
      // (another script than the one asked for kept under its key: the P2PKH script, P2PK and
      // bare multisig of one public key)
      for (const o of outputsOf(n, tx.outs)) {
        if (tagIsScript(o, sha)) funds = true;
        else if (!foreign && tagKeptUnder(o, key)) foreign = true;
      }
      const e = { num: n, txid: tx.txid, height: txNumHeight(n) };
      all.push(e);
      if (!funds) spending.push(e);
    }
    if (!foreign && !inBucket[j]) confirmedOf.push(all);
    else {
      const unsureSet = new Set(spending);
      confirmedOf.push(all.filter((e) => !unsureSet.has(e)));
      for (const e of spending) unsure.push({ j, entry: e });
    }
  });
  if (unsure.length > 0) await settleSpends(trx, rs, unsure, confirmedOf);

  for (let j = 0; j < rs.length; j++)
    out[readable[j]!] = { kind: 'ok', confirmed: confirmedOf[j]!.map((e) => ({ txid: e.txid, height: e.height })), mempool: mempoolOf[j]! };
  return out;
}

/** Adds to each script's confirmed history the unsure entries that spend one of its outputs, in chain order. */
async function settleSpends(
  trx: Trx,
  rs: readonly ScriptRef[],
  unsure: { j: number; entry: Located }[],
  confirmedOf: Located[][],
): Promise<void> {
  const ins = await sql<{ tx_num: bigint; ins: Buffer }>`
    SELECT t.tx_num, t.ins FROM ${txRowsAtNums(unsure.map((u) => u.entry.num))} t`.execute(trx);
  const insOf = new Map(ins.rows.map((r) => [r.tx_num, decodeIns(r.ins)]));
  const prevNums = [...new Set([...insOf.values()].flat().map((i) => i.txNum))];
  const prev = new Map<bigint, Buffer>();
  if (prevNums.length > 0) {
    const r = await sql<{
      tx_num: bigint;
      outs: Buffer;
    }>`SELECT t.tx_num, t.outs FROM ${txRowsAtNums(prevNums)} t`.execute(trx);
    for (const row of r.rows) prev.set(row.tx_num, row.outs);
  }
  const touched = new Set<number>();
  for (const u of unsure) {
    const spends = (insOf.get(u.entry.num) ?? []).some((i) => {
      const outs = prev.get(i.txNum);
      const o = outs ? decodeOutTag(outs, i.vout) : undefined;
      return o !== undefined && tagIsScript(o.tag, tagPrefix(rs[u.j]!.sha));
    });
    if (spends) {
      confirmedOf[u.j]!.push(u.entry);
      touched.add(u.j);
    }
  }
  for (const j of touched) confirmedOf[j]!.sort((a, b) => cmp(a.num, b.num));
}

/** A confirmed entry with its tx_num (chain order). */
type Located = ConfirmedEntry & { num: bigint };

const cmp = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

export type ScriptBalance = { confirmed: bigint; unconfirmed: bigint };

/** A read of one script's balance or unspent outputs: its key resolved, in one snapshot (the caller's, when it holds one). */
async function readOne<T>(db: Kysely<Database>, ref: ScriptRef, read: (trx: Trx, r: Resolved) => Promise<T>): Promise<T> {
  if (db.isTransaction) return read(db as Trx, (await resolveScriptRefs(db, [ref]))[0]!);
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => read(trx, (await resolveScriptRefs(trx, [ref]))[0]!));
}

/**
 * The script's outputs in `utxos` (txid, vout, value, tx_num), as a subquery. A keyed script's
 * rows carry its key; a bare multisig output's carry none (it counts in no balance), so those are
 * found through the transactions of its key's history.
 */
async function confirmedOutputs(trx: Trx, r: Resolved): Promise<RawBuilder<unknown>> {
  if (r.keyed)
    return sql`SELECT u.txid, u.vout, u.value, u.script, u.tx_num FROM utxos u WHERE u.addr_key = ${r.key} AND sha256(u.script) = ${r.sha}`;
  const [nums] = await readHistoryEntries(trx, [r.key]);
  return sql`SELECT u.txid, u.vout, u.value, u.script, u.tx_num FROM utxos u
              WHERE u.tx_num = ANY(${nums!.map(String)}::int8[]) AND u.addr_key IS NULL AND sha256(u.script) = ${r.sha}`;
}

/** The script's outputs in the mempool, as a subquery: of the key's mempool transactions, the outputs that are the script. */
function mempoolOutputs(r: Resolved): RawBuilder<unknown> {
  return sql`SELECT o.txid, o.vout, o.value, o.script FROM mempool_outputs o
              WHERE o.txid IN (SELECT txid FROM mempool_addresses WHERE addr_key = ${r.key}) AND sha256(o.script) = ${r.sha}`;
}

/** Counts and sums (sat) of a script's outputs: unspent by the blocks, paid by the mempool, spent by the mempool. */
export type ScriptTotals = {
  unspent: { count: number; sum: bigint };
  mempoolFunded: { count: number; sum: bigint };
  mempoolSpent: { count: number; sum: bigint };
};

/** The script's ScriptTotals in one statement (inside the caller's snapshot when it holds one). */
export async function readScriptTotals(db: Kysely<Database>, ref: ScriptRef): Promise<ScriptTotals> {
  return readOne(db, ref, async (trx, r) => {
    const res = await sql<{ un: number; uv: bigint; fn: number; fv: bigint; sn: number; sv: bigint }>`
      SELECT u.n AS un, u.v AS uv, f.n AS fn, f.v AS fv, s.n AS sn, s.v AS sv
        FROM (SELECT count(*)::int4 AS n, coalesce(sum(u.value), 0)::int8 AS v FROM (${await confirmedOutputs(trx, r)}) u) u,
             (SELECT count(*)::int4 AS n, coalesce(sum(o.value), 0)::int8 AS v FROM (${mempoolOutputs(r)}) o) f,
             (SELECT count(*)::int4 AS n, coalesce(sum(coalesce(u.value, o.value)), 0)::int8 AS v
                FROM mempool_spends s
                LEFT JOIN LATERAL (${unspentAt(sql.ref('s.prev_txid'), sql.ref('s.prev_vout'))}) u ON true
                LEFT JOIN mempool_outputs o ON o.txid = s.prev_txid AND o.vout = s.prev_vout
               WHERE s.txid IN (SELECT txid FROM mempool_addresses WHERE addr_key = ${r.key})
                 AND sha256(coalesce(u.script, o.script)) = ${r.sha}) s`.execute(trx);
    const x = res.rows[0]!;
    return {
      unspent: { count: x.un, sum: BigInt(x.uv) },
      mempoolFunded: { count: x.fn, sum: BigInt(x.fv) },
      mempoolSpent: { count: x.sn, sum: BigInt(x.sv) },
    };
  });
}

/**
 * Confirmed balance (outputs of the script no block has spent) and unconfirmed change (what
 * mempool transactions pay to the script minus what they spend from it), as electrs reports them.
 */
export async function readScriptBalance(db: Kysely<Database>, ref: ScriptRef): Promise<ScriptBalance> {
  const t = await readScriptTotals(db, ref);
  return { confirmed: t.unspent.sum, unconfirmed: t.mempoolFunded.sum - t.mempoolSpent.sum };
}

/** An unspent output of a script: height 0 for a mempool output. */
export type ScriptUnspent = { txid: Buffer; vout: number; value: bigint; script: Buffer; height: number };

/**
 * The script's outputs spent neither by a block nor by a mempool transaction: confirmed ones in
 * chain order, then mempool ones. At most `limit + 1` rows (the caller refuses more than `limit`).
 */
export async function readScriptUnspent(db: Kysely<Database>, ref: ScriptRef, limit: number): Promise<ScriptUnspent[]> {
  return readOne(db, ref, async (trx, r) => {
    const res = await sql<{ part: number; txid: Buffer; vout: number; value: bigint; script: Buffer; tx_num: bigint | null }>`
      (SELECT 0 AS part, u.txid, u.vout, u.value, u.script, u.tx_num FROM (${await confirmedOutputs(trx, r)}) u
        WHERE NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = u.txid AND s.prev_vout = u.vout)
        ORDER BY u.tx_num, u.vout LIMIT ${limit + 1})
      UNION ALL
      (SELECT 1, o.txid, o.vout, o.value, o.script, NULL FROM (${mempoolOutputs(r)}) o
        WHERE NOT EXISTS (SELECT 1 FROM mempool_spends s WHERE s.prev_txid = o.txid AND s.prev_vout = o.vout)
        ORDER BY o.txid, o.vout LIMIT ${limit + 1})`.execute(trx);
    const rows = res.rows.sort(
      (a, b) =>
        a.part - b.part ||
        (a.part === 0 ? cmp(a.tx_num!, b.tx_num!) || a.vout - b.vout : Buffer.compare(a.txid, b.txid) || a.vout - b.vout),
    );
    return rows.slice(0, limit + 1).map((x) => ({
      txid: x.txid,
      vout: x.vout,
      value: x.value,
      script: x.script,
      height: x.tx_num === null ? 0 : txNumHeight(x.tx_num),
    }));
  });
}

/**
 * A fingerprint of each key's mempool part (its transactions and whether each has an
 * unconfirmed parent), for keys that have one: a key whose fingerprint changed may have a new
 * status. Keys absent from the map have no mempool transaction. Keys are script keys: an alias's
 * (P2PK, bare multisig) is looked up under the key its outputs are kept under.
 */
export async function readMempoolMarks(db: Kysely<Database>, keys: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (keys.length === 0) return out;
  const r = await sql<{ k: string; mark: string }>`
    SELECT q.k,
           string_agg(encode(ma.txid, 'hex') ||
                      CASE WHEN EXISTS (SELECT 1 FROM mempool_spends s JOIN mempool_txs p ON p.txid = s.prev_txid WHERE s.txid = ma.txid) THEN '-' ELSE '+' END,
                      ',' ORDER BY ma.txid) AS mark
      FROM unnest(${keys}::uuid[]) AS q(k)
      LEFT JOIN script_aliases a ON a.script_key = q.k
      JOIN mempool_addresses ma ON ma.addr_key = coalesce(a.addr_key, q.k)
     GROUP BY q.k`.execute(db);
  for (const row of r.rows) out.set(row.k, row.mark);
  return out;
}

/** Of `keys` (script keys), those whose addresses (aliases followed) are among `touched` (address keys a mempool change touched). */
export async function keysAmong(db: Kysely<Database>, keys: readonly string[], touched: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0 || touched.length === 0) return new Set();
  const r = await sql<{ k: string }>`
    SELECT q.k FROM unnest(${keys}::uuid[]) AS q(k)
      LEFT JOIN script_aliases a ON a.script_key = q.k
     WHERE coalesce(a.addr_key, q.k) = ANY(${touched}::uuid[])`.execute(db);
  return new Set(r.rows.map((x) => x.k));
}

/** Of `keys` (script keys, aliases followed), those with a history entry written for blocks `fromHeight` … `toHeight` (what a block applied there touched: `sqlHistoryTouched`). */
export async function keysTouchedByBlocks(
  db: Kysely<Database>,
  keys: readonly string[],
  fromHeight: number,
  toHeight: number,
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const lo = firstTxNum(fromHeight);
  const hi = firstTxNum(toHeight + 1);
  const r = await sql<{ k: string }>`
    SELECT DISTINCT q.k FROM unnest(${keys}::uuid[]) AS q(k)
      LEFT JOIN script_aliases a ON a.script_key = q.k
     WHERE ${sqlHistoryTouched(sql`coalesce(a.addr_key, q.k)`, sql`${lo}::int8`, sql`${hi}::int8`)}`.execute(db);
  return new Set(r.rows.map((x) => x.k));
}
