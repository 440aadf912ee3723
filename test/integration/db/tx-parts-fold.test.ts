/**
 * The transaction parts' fold and its undo (indexer/writer/tx-parts-fold.ts) on real PostgreSQL,
 * with the readers' seam (src/db/tx-reads.ts) reading both places. Blocks of 1, 150 (three
 * parts), 64 (exactly one), 65 and 3 transactions, some seen in the mempool, spending from
 * several groups, two of them txids that share their first 8 bytes (one bucket, one record tag):
 * - with TX_PARTS off (`txid_bucket_params.fold`), a fold moves nothing;
 * - every FROM item of the seam gives the same rows before a fold, after folding part of the
 *   blocks (the rest still rows) and after folding all of them (`txs` truncated), and a txid the
 *   index lacks, sharing a record's bits, finds nothing;
 * - the writer's spend and BIP30's overwritten coinbase find the outputs of folded transactions
 *   through the buckets, as of rows;
 * - each part, written by SQL, is `encodePart` of its rows (one of them past 64 KB: 4-byte ends), the buckets hold one record per folded transaction and
 *   the params row counts them;
 * - the undo from a block moves the parts from it up back into rows equal to the ones folded, and
 *   leaves the buckets and parts byte for byte as a fold up to that block left them; from the
 *   first block, nothing stays in parts or buckets;
 * - a block whose positions have a gap is refused as a corrupt index, and nothing is written.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import type { Database } from '../../../src/db/schema.js';
import { decodeIns, encodeIns } from '../../../src/db/packed.js';
import { encodePart, decodePart, encodeSeen, partOf, slotOf, type PartTx } from '../../../src/db/tx-parts.js';
import { firstTxNum } from '../../../src/db/tx-num.js';
import { spentGroup } from '../../../src/db/spent-groups.js';
import {
  partTxNumCandidates,
  txidConfirmed,
  txRowAt,
  txRowsAtNums,
  txRowsByTxid,
  txRowsByTxids,
  txRowsFrom,
  txRowsSpending,
  type TxRow,
} from '../../../src/db/tx-reads.js';
import { applyTxParts, foldTxParts, unfoldTxParts } from '../../../indexer/writer/tx-parts-fold.js';
import { deleteOverwrittenCoinbase, spendUtxos } from '../../../indexer/writer/chain-rows.js';
import { TXID_RECORD_BYTES } from '../../../src/db/txid-buckets.js';

type Row = { tx_num: bigint; txid: Buffer; outs: Buffer; ins: Buffer; first_seen: Date | null };

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));
const show = (r: TxRow) => `${r.tx_num} ${hex(r.txid)} ${hex(r.outs)} ${hex(r.ins)} ${r.first_seen?.toISOString() ?? '-'}`;

describe('transaction parts: the fold, the readers, the undo', () => {
  let t: TestDatabase;
  let db: Kysely<Database>;
  const rows: Row[] = [];
  /** Block heights and their transaction counts. */
  const blocks: [number, number][] = [
    [10, 1],
    [11, 150],
    [12, 64],
    [13, 65],
    [14, 3],
    [15, 2],
    [16, 4],
  ];
  let twins: [Buffer, Buffer];
  /** A txid the index lacks with the twins' first 8 bytes (their bucket and their records' tag). */
  let stranger: Buffer;

  beforeAll(async () => {
    t = await createMigratedDatabase('txpf');
    db = t.db;
    const prefix = randomBytes(8);
    const withPrefix = () => Buffer.concat([prefix, randomBytes(24)]);
    twins = [withPrefix(), withPrefix()];
    stranger = withPrefix();
    let at = 0;
    for (const [h, n] of blocks)
      for (let pos = 0; pos < n; pos++, at++) {
        const txNum = firstTxNum(h) + BigInt(pos);
        const earlier = rows.filter((r) => r.tx_num < firstTxNum(h));
        const ins =
          pos === 0 || earlier.length === 0
            ? Buffer.alloc(0)
            : encodeIns(
                Array.from({ length: 1 + (at % 3) }, (_, i) => ({ txNum: earlier[(at * 7 + i * 31) % earlier.length]!.tx_num, vout: i })),
              );
        const txid = h === 12 && pos === 5 ? twins[0] : h === 13 && pos === 64 ? twins[1] : randomBytes(32);
        rows.push({
          tx_num: txNum,
          txid,
          // (one transaction of 70 KB of outputs: its part's ends take 4 bytes)
          outs: randomBytes(h === 11 && pos === 100 ? 70_000 : 10 + (at % 40)),
          ins,
          first_seen: at % 11 === 3 ? new Date(Date.UTC(2026, 0, 1) + at * 1_234) : null,
        });
      }
    // µs precision: a first_seen with microseconds survives the part's int8 and comes back
    rows[7]!.first_seen = new Date('2026-03-04T05:06:07.891Z');
    await sql`UPDATE txid_bucket_params SET fold = true WHERE id = 1`.execute(db);
    for (const r of rows)
      await sql`INSERT INTO txs (tx_num, txid, outs, ins, first_seen, spent_group)
        VALUES (${r.tx_num.toString()}::int8, ${r.txid}, ${r.outs}, ${r.ins}, ${r.first_seen}, NULL)`.execute(db);
  });

  afterAll(async () => {
    await t?.drop();
  });

  const rowsOf = async (from: RawBuilder<TxRow>) =>
    (await sql<TxRow>`SELECT * FROM ${from} t ORDER BY t.tx_num`.execute(db)).rows.map(show);
  /** Every answer of the seam, for every transaction, group and a few misses. */
  const answers = async () => {
    const nums = rows.map((r) => r.tx_num);
    const groups = [...new Set(rows.flatMap((r) => ins(r).map(spentGroup)))];
    const spentFrom = [...new Set(rows.map((r) => spentGroup(Number(r.tx_num))))];
    const out: Record<string, unknown> = {
      all: await rowsOf(txRowsFrom(0n, null)),
      block11: await rowsOf(txRowsFrom(firstTxNum(11), firstTxNum(12))),
      from13: await rowsOf(txRowsFrom(firstTxNum(13) + 64n, null)),
      middle: await rowsOf(txRowsFrom(firstTxNum(11) + 63n, firstTxNum(11) + 129n)),
      atNums: await rowsOf(txRowsAtNums([...nums, firstTxNum(14) + 3n, firstTxNum(20)])),
      byTxids: await rowsOf(txRowsByTxids([...rows.map((r) => r.txid), stranger])),
      stranger: await rowsOf(txRowsByTxid(stranger)),
      strangerConfirmed: (await sql<{ c: boolean }>`SELECT ${txidConfirmed(stranger)} AS c`.execute(db)).rows[0]!.c,
    };
    const each: string[] = [];
    for (const r of rows) {
      each.push(...(await rowsOf(txRowsByTxid(r.txid))));
      each.push(
        ...(await rowsOf(
          sql<TxRow>`(SELECT x.* FROM (SELECT ${r.tx_num.toString()}::int8 AS n) q CROSS JOIN LATERAL ${txRowAt(sql.ref('q.n'))} x)`,
        )),
      );
      const c = await sql<{ c: boolean }>`SELECT ${txidConfirmed(r.txid)} AS c`.execute(db);
      each.push(String(c.rows[0]!.c));
    }
    out.each = each;
    const spending: string[][] = [];
    for (const g of spentFrom) {
      // (a superset: settled by `ins`, as the readers do)
      const found = await rowsOf(txRowsSpending(sql`${g}::int8`));
      spending.push(found.filter((line) => rows.some((r) => show(r as TxRow) === line && ins(r).some((n) => spentGroup(n) === g))));
    }
    out.spending = spending;
    out.groups = groups.length;
    return out;
  };
  const parts = async () =>
    (
      await sql<{ part: string; txids: Buffer; ends: Buffer; outs: Buffer; ins: Buffer; spent_groups: string[]; seen: Buffer | null }>`
        SELECT part::text AS part, txids, ends, outs, ins, spent_tx_groups(ins)::text[] AS spent_groups, seen FROM tx_parts ORDER BY part`.execute(
        db,
      )
    ).rows;
  const buckets = async () =>
    (await sql<{ bucket: number; log: string }>`SELECT bucket, encode(log, 'hex') AS log FROM txid_buckets ORDER BY bucket`.execute(db))
      .rows;
  const counted = async () =>
    (
      await sql<{ records: string; bytes: string }>`
        SELECT (SELECT records FROM txid_bucket_params)::text AS records, (SELECT coalesce(sum(length(log)), 0) FROM txid_buckets)::text AS bytes`.execute(
        db,
      )
    ).rows[0]!;
  const txsRows = async () =>
    (
      await sql<
        Row & { spent_group: number | null }
      >`SELECT tx_num, txid, outs, ins, first_seen, spent_group FROM txs ORDER BY tx_num`.execute(db)
    ).rows;
  const fold = (toHeight: number) => db.transaction().execute((trx) => foldTxParts(trx, toHeight));
  const unfold = (height: number) => db.transaction().execute((trx) => unfoldTxParts(trx, firstTxNum(height)));

  let before: Record<string, unknown>;
  let at13: { parts: Awaited<ReturnType<typeof parts>>; buckets: Awaited<ReturnType<typeof buckets>> };

  it('before a fold: every answer from rows; the twins both found, the stranger not', async () => {
    before = await answers();
    expect((before.all as string[]).length).toBe(rows.length);
    expect(before.stranger).toEqual([]);
    expect(before.strangerConfirmed).toBe(false);
    expect((before.byTxids as string[]).length).toBe(rows.length);
    expect((before.atNums as string[]).length).toBe(rows.length);
    expect((before.block11 as string[]).length).toBe(150);
    expect((before.middle as string[]).length).toBe(66);
    expect(before.groups).toBeGreaterThan(3);
    expect((before.spending as string[][]).some((s) => s.length > 1)).toBe(true);
  });

  it('with TX_PARTS off, a fold leaves every row; switched on and off, applyTxParts says whether it changed', async () => {
    expect(await applyTxParts(db, false)).toBe(true);
    expect(await applyTxParts(db, false)).toBe(false);
    expect(await fold(17)).toEqual({ txs: 0, parts: 0, records: 0 });
    expect((await txsRows()).length).toBe(rows.length);
    expect(await parts()).toEqual([]);
    expect(await applyTxParts(db, true)).toBe(true);
  });

  it('folded below block 13: the same answers; each part is its rows, one record per transaction, counted', async () => {
    const f = await fold(13);
    const folded = rows.filter((r) => r.tx_num < firstTxNum(13));
    expect(f).toEqual({ txs: folded.length, parts: 1 + 3 + 1, records: folded.length });
    expect((await txsRows()).map((r) => r.tx_num)).toEqual(rows.filter((r) => r.tx_num >= firstTxNum(13)).map((r) => r.tx_num));
    const stored = await parts();
    expect(stored.map((p) => p.part)).toEqual([...new Set(folded.map((r) => partOf(r.tx_num).toString()))]);
    for (const p of stored) {
      const mine = folded.filter((r) => partOf(r.tx_num).toString() === p.part);
      const want = encodePart(mine.map((r): PartTx => ({ txid: r.txid, outs: r.outs, ins: r.ins })));
      expect({ txids: p.txids, ends: p.ends, outs: p.outs, ins: p.ins }).toEqual(want);
      expect(decodePart(p).length).toBe(mine.length);
      const seen = mine
        .filter((r) => r.first_seen !== null)
        .map((r) => [slotOf(r.tx_num), BigInt(r.first_seen!.getTime()) * 1000n] as const);
      expect(p.seen).toEqual(encodeSeen(seen));
      const groups = new Set(mine.flatMap((r) => (r.ins.length === 0 ? [] : ins(r).map((n) => String(spentGroup(n))))));
      expect(new Set(p.spent_groups)).toEqual(groups);
    }
    expect(stored.map((p) => p.ends[0])).toEqual([2, 2, 4, 2, 2]);
    const c = await counted();
    expect(Number(c.records)).toBe(folded.length);
    expect(Number(c.bytes)).toBe(folded.length * TXID_RECORD_BYTES);
    expect(await answers()).toEqual(before);
    at13 = { parts: stored, buckets: await buckets() };
  });

  it("the writer's spend lookup: a folded txid's candidates through the buckets, unsettled (the stranger gets its twin's)", async () => {
    const look = async (txid: Buffer) =>
      (
        await sql<{
          tx_num: string;
        }>`SELECT p.tx_num::text AS tx_num FROM (SELECT ${txid}::bytea AS txid) q CROSS JOIN LATERAL ${partTxNumCandidates(sql.ref('q.txid'))} p`.execute(
          db,
        )
      ).rows.map((r) => BigInt(r.tx_num));
    for (const r of rows.filter((x) => x.tx_num < firstTxNum(13))) expect(await look(r.txid)).toEqual([r.tx_num]);
    expect(await look(twins[0])).toEqual([firstTxNum(12) + 5n]);
    expect(await look(twins[1])).toEqual([firstTxNum(12) + 5n]); // (its own still a row: block 13)
    expect(await look(stranger)).toEqual([firstTxNum(12) + 5n]); // settled by the spend, below
  });

  it("the writer's spend and BIP30's overwritten coinbase reach outputs of folded transactions as of rows", async () => {
    const folded = rows.find((r) => r.tx_num === firstTxNum(11) + 100n)!;
    const row = rows.find((r) => r.tx_num === firstTxNum(14) + 1n)!;
    const coinbase = rows.find((r) => r.tx_num === firstTxNum(11))!;
    const put = (r: Row, vout: number, value: number) =>
      sql`INSERT INTO utxos (txid, vout, tx_num, addr_key, value, script)
          VALUES (${r.txid}, ${vout}, ${r.tx_num.toString()}::int8, NULL, ${value}, ${Buffer.from('51', 'hex')})`.execute(db);
    await put(folded, 1, 1000);
    await put(row, 0, 2000);
    const twin = rows.find((r) => r.txid.equals(twins[0]))!;
    await put(twin, 2, 3000);
    await put(twin, 0, 4000); // the stranger's candidate: (twin, 0) is not the stranger's output
    await put(coinbase, 0, 5000);
    const spent = await db.transaction().execute((trx) =>
      spendUtxos(trx, [
        { txid: folded.txid, vout: 1 },
        { txid: row.txid, vout: 0 },
        { txid: twins[0], vout: 2 },
        { txid: twins[1], vout: 2 },
        { txid: stranger, vout: 0 },
      ]),
    );
    expect(spent.get(folded.txid, 1)).toMatchObject({ txNum: Number(folded.tx_num), value: 1000n });
    expect(spent.get(row.txid, 0)).toMatchObject({ txNum: Number(row.tx_num), value: 2000n });
    expect(spent.get(twins[0], 2)).toMatchObject({ txNum: Number(firstTxNum(12) + 5n), value: 3000n });
    expect(spent.get(twins[1], 2)).toBeUndefined();
    expect(spent.get(stranger, 0)).toBeUndefined();
    expect(spent.size).toBe(3);
    // a later coinbase repeating the folded coinbase's txid takes its unspent output
    const taken = await db
      .transaction()
      .execute((trx) => deleteOverwrittenCoinbase(trx, [{ txid: coinbase.txid, txNum: Number(firstTxNum(20)) }]));
    expect(taken).toEqual([{ addr_key: null, value: 5000n }]);
    const left = await sql<{ tx_num: string; vout: number }>`SELECT tx_num::text AS tx_num, vout FROM utxos`.execute(db);
    expect(left.rows).toEqual([{ tx_num: twin.tx_num.toString(), vout: 0 }]);
    await sql`DELETE FROM utxos`.execute(db);
  });

  it('folded whole: txs truncated, the same answers', async () => {
    const f = await fold(17);
    expect(f.txs).toBe(rows.filter((r) => r.tx_num >= firstTxNum(13)).length);
    expect(await txsRows()).toEqual([]);
    const n = (await sql<{ n: string }>`SELECT count(*)::text AS n FROM tx_parts`.execute(db)).rows[0]!.n;
    expect(Number(n)).toBe(5 + 2 + 1 + 1 + 1);
    expect(Number((await counted()).records)).toBe(rows.length);
    expect(await answers()).toEqual(before);
    expect(await fold(17)).toEqual({ txs: 0, parts: 0, records: 0 });
  });

  it('undone from block 13: its rows back as folded, the buckets and parts as the fold below 13 left them', async () => {
    const moved = await unfold(13);
    const back = rows.filter((r) => r.tx_num >= firstTxNum(13));
    expect(moved).toBe(back.length);
    const now = await txsRows();
    expect(now.map((r) => ({ ...r, tx_num: BigInt(r.tx_num) }))).toEqual(back.map((r) => ({ ...r, spent_group: null })));
    expect(await parts()).toEqual(at13.parts);
    expect(await buckets()).toEqual(at13.buckets);
    expect(await answers()).toEqual(before);
    // folded again (rows with a null spent_group: the same parts as from the writer's rows)
    await fold(17);
    expect(await answers()).toEqual(before);
  });

  it('undone from the first block: nothing left in parts or buckets, every row back', async () => {
    expect(await unfold(10)).toBe(rows.length);
    expect(await parts()).toEqual([]);
    expect(await buckets()).toEqual([]);
    expect(Number((await counted()).records)).toBe(0);
    expect((await txsRows()).length).toBe(rows.length);
    expect(await answers()).toEqual(before);
    expect(await unfold(10)).toBe(0);
  });

  it('a block with a gap in its positions is refused as a corrupt index, and nothing is written', async () => {
    const gap = firstTxNum(11) + 70n;
    await sql`DELETE FROM txs WHERE tx_num = ${gap.toString()}::int8`.execute(db);
    await expect(fold(17)).rejects.toThrow(/txs lacks a transaction of blocks 10\.\.17/);
    expect(await parts()).toEqual([]);
    expect(await buckets()).toEqual([]);
    expect((await txsRows()).length).toBe(rows.length - 1);
  });
});

describe('TX_PARTS=auto (the default)', () => {
  let t: TestDatabase;
  const fold = async () => (await sql<{ fold: boolean }>`SELECT fold FROM txid_bucket_params WHERE id = 1`.execute(t.db)).rows[0]!.fold;

  beforeAll(async () => {
    t = await createMigratedDatabase('txpauto');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('switches an empty index on, and leaves an index with blocks, rows or parts as it is', async () => {
    expect(await fold()).toBe(false);
    expect(await applyTxParts(t.db, 'auto')).toBe(true);
    expect(await fold()).toBe(true);
    expect(await applyTxParts(t.db, 'auto')).toBe(false);
    // switched off while empty: auto turns it back on (nothing written either way)
    expect(await applyTxParts(t.db, false)).toBe(true);
    expect(await applyTxParts(t.db, 'auto')).toBe(true);
    expect(await applyTxParts(t.db, false)).toBe(true);
    // a tip, a row, a part: each keeps an index off under auto (its next fold would take every row)
    await sql`UPDATE chain_tip SET height = 0 WHERE id = 1`.execute(t.db);
    expect(await applyTxParts(t.db, 'auto')).toBe(false);
    await sql`UPDATE chain_tip SET height = -1 WHERE id = 1`.execute(t.db);
    await sql`INSERT INTO txs (tx_num, txid, outs, ins) VALUES (0, ${randomBytes(32)}, ''::bytea, ''::bytea)`.execute(t.db);
    expect(await applyTxParts(t.db, 'auto')).toBe(false);
    await sql`DELETE FROM txs`.execute(t.db);
    await sql`INSERT INTO tx_parts (part, txids, ends, outs, ins) VALUES (0, ${randomBytes(32)}, ''::bytea, ''::bytea, ''::bytea)`.execute(
      t.db,
    );
    expect(await applyTxParts(t.db, 'auto')).toBe(false);
    expect(await fold()).toBe(false);
    // an explicit 1 switches it on whatever the index holds
    expect(await applyTxParts(t.db, true)).toBe(true);
    expect(await fold()).toBe(true);
  });
});

/** The prevout tx_nums of `r`. */
function ins(r: Row): number[] {
  return decodeIns(r.ins).map((i) => Number(i.txNum));
}
