/**
 * bench/txs-layout: what `txs` would weigh without the data the node already keeps. Imports the
 * synthetic corpus (bench/corpus, the same index bench/sync measures), then copies `txs` into
 * three lean layouts in the same PostgreSQL and compares table sizes (heap and TOAST; the indexes,
 * on tx_num, the txid key and the inputs, stay the same in every layout):
 * - values: `outs` with each output's value only (LEB128), its script left to `utxos` (unspent
 *   outputs) and the node (spent ones);
 * - tags: `outs` in the tagged form (src/db/packed.ts `encodeOutTags`: two bytes, then each output's
 *   value and tag, src/db/out-tags.ts:
 *   8 bytes of the script's SHA-256, a P2PK or bare multisig output's keys' 8 bytes, nothing for
 *   OP_RETURN), what the readers of `txs` need once the scripts leave it (docs/sync.md);
 * - none: no `outs` at all.
 * Also the bytes of the spent outputs' scripts, of the unspent ones' (kept in `utxos` anyway) and
 * the size of an undo store (`block_undo`) holding the newest 288 blocks' spent outputs.
 * Run: `node --import tsx bench/txs-layout.ts [--blocks N] [--txs-per-block N] [--cache-dir DIR]`.
 * @module
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { benchArgs } from './args.js';
import { ensureCorpus } from './corpus/generate.js';
import { corpusMainChain, loadCorpusManifest } from '../devnode/corpus-manifest.js';
import { cacheDir, importCorpus, round, runSize, say, startBenchPostgres } from './harness.js';
import { decodeIns, decodeOuts, encodeOutTags, PackedWriter } from '../src/db/packed.js';
import { firstTxNum } from '../src/db/tx-num.js';
import { UNDO_BLOCKS_MIN } from '../src/config.js';

const MB = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: { blocks: { type: 'string' }, 'txs-per-block': { type: 'string' }, 'cache-dir': { type: 'string' } },
  });
  const size = runSize(values);
  const cache = cacheDir(values['cache-dir']);
  const corpus = ensureCorpus(cache, size.corpus, say);
  const m = await loadCorpusManifest(corpus.dir);
  const nearTip = size.catchupBlocks + size.liveBlocks;
  const tip = m.tip.height - nearTip;
  const rawBytes = corpusMainChain(m)
    .slice(0, tip + 1)
    .reduce((s, b) => s + b.length, 0);
  say(`bench/txs-layout: ${corpus.dir}, blocks 0..${tip} (${MB(rawBytes)} raw)`);
  const pgs = await startBenchPostgres(mkdtempSync(join(cache, 'layout-')));
  try {
    const url = await pgs.createDatabase('bw_layout');
    const imp = await importCorpus(corpus.dir, url, nearTip, [], pgs);
    if (imp.tip !== tip) throw new Error(`import stopped at ${imp.tip}, expected ${tip}`);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`CREATE TABLE txs_values (LIKE txs)`);
      await c.query(`CREATE TABLE txs_tags (LIKE txs)`);
      await c.query(`CREATE TABLE txs_none AS SELECT tx_num, txid, ins, first_seen, size, weight FROM txs`);
      let scriptBytes = 0;
      let outsBytes = 0;
      let tagsBytes = 0;
      for (let h = 0; h <= tip; h++) {
        const r = await c.query<{
          tx_num: string;
          txid: Buffer;
          outs: Buffer;
          ins: Buffer;
          first_seen: Date | null;
          size: number;
          weight: number;
        }>(`SELECT tx_num::text, txid, outs, ins, first_seen, size, weight FROM txs WHERE tx_num >= $1::int8 AND tx_num < $2::int8`, [
          firstTxNum(h).toString(),
          firstTxNum(h + 1).toString(),
        ]);
        const tagged: Buffer[] = [];
        const lean = r.rows.map((t) => {
          const w = new PackedWriter(16);
          const outs = decodeOuts(t.outs);
          for (const o of outs) {
            w.uleb(o.value);
            scriptBytes += o.script.length;
          }
          const wt = encodeOutTags(outs);
          outsBytes += t.outs.length;
          tagsBytes += wt.length;
          tagged.push(wt);
          return w.view(0, w.len);
        });
        for (const [table, outs] of [
          ['txs_values', lean],
          ['txs_tags', tagged],
        ] as const)
          await c.query(
            `INSERT INTO ${table} SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[], $4::bytea[], $5::timestamptz[], $6::int4[], $7::int4[])`,
            [
              r.rows.map((t) => t.tx_num),
              r.rows.map((t) => t.txid),
              outs,
              r.rows.map((t) => t.ins),
              r.rows.map((t) => t.first_seen),
              r.rows.map((t) => t.size),
              r.rows.map((t) => t.weight),
            ],
          );
      }
      const unspent = await c.query<{ n: string }>(`SELECT sum(length(script))::text AS n FROM utxos`);
      const unspentScript = Number(unspent.rows[0]!.n);
      // The undo store of the newest blocks: each spent output once, value and script packed.
      const undoWindowBytes = await undoBytes(c, Math.max(0, tip - UNDO_BLOCKS_MIN + 1), tip);
      await c.query('VACUUM ANALYZE txs, txs_values, txs_tags, txs_none');
      const t = async (name: string) => Number((await c.query<{ n: string }>(`SELECT pg_table_size('${name}')::text AS n`)).rows[0]!.n);
      const idx = Number((await c.query<{ n: string }>(`SELECT pg_indexes_size('txs')::text AS n`)).rows[0]!.n);
      const db = Number((await c.query<{ n: string }>(`SELECT pg_database_size(current_database())::text AS n`)).rows[0]!.n);
      const [full, vals, tags, none] = [await t('txs'), await t('txs_values'), await t('txs_tags'), await t('txs_none')];
      say(`txs indexes (every layout): ${MB(idx)}`);
      say(
        `txs table today: ${MB(full)}; outs values and tags: ${MB(tags)} (${MB(full - tags)} less); outs values only: ${MB(vals)} (${MB(full - vals)} less); no outs: ${MB(none)}`,
      );
      say(
        `outs bytes ${MB(outsBytes)} (tagged ${MB(tagsBytes)}), scripts ${MB(scriptBytes)}, of which unspent (kept in utxos) ${MB(unspentScript)}`,
      );
      say(`undo store of the newest ${UNDO_BLOCKS_MIN} blocks: ${MB(undoWindowBytes)}`);
      const dbToday = db - vals - tags - none; // the database holds the three copies as well
      const dbTags = dbToday - full + tags;
      say(
        `database today ${MB(dbToday)} = ${round(dbToday / rawBytes, 3)} × raw; with tagged outs ${MB(dbTags)} = ${round(dbTags / rawBytes, 3)} ×; with values-only outs ${MB(dbToday - full + vals + undoWindowBytes)} = ${round((dbToday - full + vals + undoWindowBytes) / rawBytes, 3)} ×; without outs ${MB(dbToday - full + none + undoWindowBytes)} = ${round((dbToday - full + none + undoWindowBytes) / rawBytes, 3)} ×`,
      );
    } finally {
      await c.end();
    }
  } finally {
    await pgs.stop();
  }
}

/** Bytes of the spent outputs (value and script, the outs format) of the blocks `from..to`. */
async function undoBytes(c: pg.Client, from: number, to: number): Promise<number> {
  let bytes = 0;
  for (let h = from; h <= to; h++) {
    const ins = await c.query<{ ins: Buffer }>(`SELECT ins FROM txs WHERE tx_num >= $1::int8 AND tx_num < $2::int8`, [
      firstTxNum(h).toString(),
      firstTxNum(h + 1).toString(),
    ]);
    const refs = ins.rows.flatMap((r) => decodeIns(r.ins)).filter((r) => r.txNum < firstTxNum(h));
    const prev = await c.query<{ tx_num: string; outs: Buffer }>(`SELECT tx_num::text, outs FROM txs WHERE tx_num = ANY($1::int8[])`, [
      [...new Set(refs.map((r) => r.txNum.toString()))],
    ]);
    const outs = new Map(prev.rows.map((p) => [p.tx_num, decodeOuts(p.outs)]));
    const w = new PackedWriter(1024);
    for (const r of refs) {
      const o = outs.get(r.txNum.toString())![r.vout]!;
      w.packOut(o.value, o.script);
    }
    bytes += w.len;
  }
  return bytes;
}

await main();
