/**
 * bench/live-derive: the per-block writer's own CPU, no PostgreSQL: what `applyBlock` computes for
 * one live block in JavaScript (indexer/writer/apply.ts `spendAndDerive` and the statements after
 * it): the block's spends from the block alone, its outputs' address keys, the prevouts of the
 * spent outputs as `spendUtxos` turns its rows into them, the block's new `utxos` COPY data
 * (each part's, for a baseline before `blockCreated`), the derivation in parts, each part's
 * `txs` COPY data, then the `history` COPY data and the balance deltas' arrays. Blocks: mainnet 866,342 (4,864 transactions, the shared fixtures) and the first
 * 4,000-transaction tail block of the bench corpus (`--blocks`, default 300). Two versions of
 * the code in one process, alternated (`--baseline REF` checked out beside, bench/baseline.ts),
 * `--rounds` times each after `--warmup` rounds; per version and block, the median of this
 * process's CPU time (process.cpuUsage, not wall time: the machine is shared).
 * `node --import tsx bench/live-derive.ts [--baseline REF] [--rounds N] [--warmup N] [--blocks N] [--only mainnet|corpus]`
 * @module
 */
import { closeSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { checkoutBaseline } from './baseline.js';
import { cacheDir, pct, round, runSize, say } from './harness.js';
import { ensureCorpus } from './corpus/generate.js';
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { txNumOf } from '../src/db/tx-num.js';
import { corpusMainChain, loadCorpusManifest, readCorpusBlock } from '../devnode/corpus-manifest.js';
import { loadMainnetBlock, MAINNET_BLOCK_HEIGHT } from '../test/support/mainnet-block.js';
import { scriptKeys } from '../indexer/writer/address-keys.js';
import { historyChunks } from '../src/db/history-entries.js';
import type * as Derive from '../indexer/writer/derive.js';
import type * as ChainRows from '../indexer/writer/chain-rows.js';

/** A spent output's row as the spend's `DELETE … RETURNING` gives it (chain-rows.ts `spendStatement`). */
type SpentRow = { txid: Buffer; vout: number; tx_num: bigint; value: bigint; script: Buffer; addr_key: string | null };

/** One version's modules. */
interface Version {
  name: string;
  derive: typeof Derive;
  rows: typeof ChainRows;
  /** txid-maps.ts, in versions that have it. */
  maps: { OutpointMap: new <V>() => { get(txid: Uint8Array, vout: number): V | undefined } } | undefined;
}

/** A block and the rows `spendUtxos` returns for its external outpoints, per spend part (`SPEND_PART`). */
interface Case {
  name: string;
  /** The serialized block: each run decodes it anew (outside the time), as the writer gets each block. */
  raw: Uint8Array;
  block: DecodedBlock;
  height: number;
  /** Each part's rows, and the same rows packed as the spend statement answers (`packSpent`). */
  parts: { end: number; rows: SpentRow[]; packed: Buffer }[];
}

/**
 * `rows` as chain-rows.ts `spendStatement` packs them into its one bytea answer (the row's
 * position among the statement's outpoints from 1, tx_num, value, a flag byte and the address
 * key's 16 bytes when it has one, the script's length and bytes): what `takePacked` reads.
 */
function packSpent(rows: readonly SpentRow[]): Buffer {
  return Buffer.concat(
    rows.flatMap((r, i) => {
      const head = Buffer.alloc(20);
      head.writeInt32BE(i + 1, 0);
      head.writeBigInt64BE(r.tx_num, 4);
      head.writeBigInt64BE(r.value, 12);
      const key = r.addr_key === null ? Buffer.of(0) : Buffer.concat([Buffer.of(1), Buffer.from(r.addr_key.replace(/-/g, ''), 'hex')]);
      const n = Buffer.alloc(4);
      n.writeInt32BE(r.script.length, 0);
      return [head, key, n, r.script];
    }),
  );
}

const SPEND_PART = 2_000;

/** Splits `byTx` (a block's external outpoints per transaction) into apply.ts's spend parts, each with its rows. */
function partsOf(
  byTx: readonly (readonly { txid: Uint8Array; vout: number }[])[],
  rowOf: (txid: Uint8Array, vout: number) => SpentRow,
): Case['parts'] {
  const parts: Case['parts'] = [];
  let rows: SpentRow[] = [];
  for (let i = 0; i < byTx.length; i++) {
    for (const o of byTx[i]!) rows.push(rowOf(o.txid, o.vout));
    if (rows.length >= SPEND_PART || i === byTx.length - 1) {
      parts.push({ end: i + 1, rows, packed: packSpent(rows) });
      rows = [];
    }
  }
  return parts;
}

function spentRow(txid: Uint8Array, vout: number, txNum: number, value: bigint, script: Uint8Array): SpentRow {
  const k = scriptKeys(script);
  return {
    txid: Buffer.from(txid),
    vout,
    tx_num: BigInt(txNum),
    value,
    script: Buffer.from(script),
    addr_key: typeof k === 'string' ? k : null,
  };
}

/** Mainnet 866,342 with its prevouts (the fixtures' spent_utxos; test/support/mainnet-block.ts). */
function mainnetCase(d: typeof Derive): Case {
  const { block, inputs } = loadMainnetBlock();
  const byOutpoint = new Map<string, SpentRow>();
  for (const i of inputs) byOutpoint.set(`${hashToHex(i.prevTxid)}:${i.vout}`, spentRow(i.prevTxid, i.vout, i.txNum, i.value, i.script));
  const parts = partsOf(d.blockSpends(block).external, (txid, vout) => byOutpoint.get(`${hashToHex(txid)}:${vout}`)!);
  return { name: 'mainnet 866342', raw: block.bytes, block, height: MAINNET_BLOCK_HEIGHT, parts };
}

/** The corpus's first tail block (4,000 transactions), its prevouts found in the blocks below it. */
async function corpusCase(d: typeof Derive, blocks: string): Promise<Case> {
  const size = runSize({ blocks, 'live-blocks': '40', 'catchup-blocks': '0' });
  const { dir } = ensureCorpus(cacheDir(), size.corpus, say);
  const m = await loadCorpusManifest(dir);
  const chain = corpusMainChain(m);
  const files = new Map<number, number>();
  try {
    const height = chain.findIndex((b) => b !== undefined && b.txs >= 4000);
    const block = decodeBlock(readCorpusBlock(dir, m, chain[height]!, files));
    const { external } = d.blockSpends(block);
    const want = new Set(external.flat().map((o) => hashToHex(o.txid)));
    const byOutpoint = new Map<string, SpentRow>();
    for (let h = height - 1; h >= 0 && want.size > 0; h--) {
      const b = decodeBlock(readCorpusBlock(dir, m, chain[h]!, files));
      b.txs.forEach((tx, pos) => {
        const id = hashToHex(tx.txid);
        if (!want.delete(id)) return;
        tx.outputs.forEach((o, vout) => byOutpoint.set(`${id}:${vout}`, spentRow(tx.txid, vout, txNumOf(h, pos), o.value, o.script)));
      });
    }
    const parts = partsOf(external, (txid, vout) => byOutpoint.get(`${hashToHex(txid)}:${vout}`)!);
    return { name: `corpus ${height} (${block.txs.length} txs)`, raw: block.bytes, block, height, parts };
  } finally {
    for (const fd of files.values()) closeSync(fd);
  }
}

/**
 * What the writer computes for `c`'s block, as apply.ts does it (spendAndDerive, then the rows
 * of history and balances); returns the bytes encoded (kept, so nothing is optimized away).
 */
function writerWork(v: Version, c: Case, block: DecodedBlock): number {
  const { derive: d, rows: r } = v;
  const { height } = c;
  const { spentHere } = d.blockSpends(block);
  const keys = d.outputKeys(block);
  const lookup = prevoutLookup(v);
  const derivation = new d.BlockDerivation(block, height, lookup.get, { touches: false, outputKeys: keys, spentHere });
  let bytes = 0;
  // The block's new outputs before any part is derived (`blockCreated`), or each part's after it
  // is (`createdRows`, a baseline's writer before blockCreated).
  const early = 'blockCreated' in d;
  if (early) bytes += r.utxosCopy(d.blockCreated(block, height, keys, spentHere)).finish().length;
  let derived = 0;
  for (const p of c.parts) {
    lookup.take(p);
    derivation.through(p.end);
    bytes += r.txsCopy(derivation.txRows(derived, p.end), new Map()).finish().length;
    if (!early) {
      const before = derivation as unknown as { createdRows(from: number, end: number): Parameters<typeof r.utxosCopy>[0] };
      bytes += r.utxosCopy(before.createdRows(derived, p.end)).finish().length;
    }
    derived = p.end;
  }
  const rows = derivation.rows();
  bytes += r.historyCopy(historyChunks(rows.history)).finish().length;
  // addBalances' arrays
  const ks: string[] = [];
  const sats: string[] = [];
  for (const [k, delta] of rows.balances) {
    ks.push(k);
    sats.push(delta.sats.toString());
  }
  return bytes + ks.length + sats.length + rows.undo.length;
}

/**
 * The prevouts of the spent rows as apply.ts keeps them: `spendUtxos`' map (chain-rows.ts
 * `takePacked` reading the packed answer, or, in versions before it, `takeSpent` reading rows,
 * into a txid-maps.ts `OutpointMap`; before those, a Map keyed by `hashKey(txid):vout`). A
 * version that reads rows gets them parsed already: node-postgres's parse of the text rows, which
 * its writer paid, is not counted, where `takePacked`'s reading of the packed answer is.
 */
function prevoutLookup(v: Version): { take(part: Case['parts'][number]): void; get: Derive.PrevoutLookup } {
  const { derive: d, rows: r, maps } = v;
  if (maps !== undefined && 'takePacked' in r) {
    const found = new maps.OutpointMap<Derive.Prevout>();
    return { take: (part) => r.takePacked(found as never, part.rows, part.packed), get: (txid, vout) => found.get(txid, vout) };
  }
  if (maps !== undefined && 'takeSpent' in r) {
    const found = new maps.OutpointMap<Derive.Prevout>();
    const takeSpent = (r as { takeSpent: (found: unknown, rows: readonly SpentRow[]) => void }).takeSpent;
    return { take: (part) => takeSpent(found, part.rows), get: (txid, vout) => found.get(txid, vout) };
  }
  const found = new Map<string, Derive.Prevout>();
  return {
    take({ rows }) {
      for (const x of rows)
        found.set(`${d.hashKey(x.txid)}:${x.vout}`, {
          txNum: Number(x.tx_num),
          value: x.value,
          script: x.script,
          ...(x.addr_key !== null ? { keys: x.addr_key } : {}),
        });
    },
    get: (txid, vout) => found.get(`${d.hashKey(txid)}:${vout}`),
  };
}

/** The module at `path`, or undefined when the version has no such file. */
async function importIf(path: string): Promise<Version['maps']> {
  return existsSync(path) ? ((await import(path)) as Version['maps']) : undefined;
}

/** `c`'s block decoded anew, its txids computed (checkBlock's Merkle check does it before the writer gets it). */
function fresh(c: Case): DecodedBlock {
  const block = decodeBlock(c.raw);
  for (const tx of block.txs) void tx.txid;
  return block;
}

function cpuMs(f: () => void): number {
  const t0 = process.cpuUsage();
  f();
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / 1000;
}

async function main(): Promise<void> {
  const { values } = benchArgs(import.meta.url, {
    options: {
      baseline: { type: 'string' },
      rounds: { type: 'string', default: '15' },
      warmup: { type: 'string', default: '5' },
      blocks: { type: 'string', default: '300' },
      only: { type: 'string' },
    },
  });
  const current: Version = {
    name: 'current',
    derive: await import('../indexer/writer/derive.js'),
    rows: await import('../indexer/writer/chain-rows.js'),
    maps: await importIf(fileURLToPath(new URL('../indexer/writer/txid-maps.ts', import.meta.url))),
  };
  const base = values.baseline ? checkoutBaseline(values.baseline, say) : undefined;
  try {
    const versions: Version[] = [current];
    if (base)
      versions.unshift({
        name: `baseline ${base.commit.slice(0, 7)}`,
        derive: (await import(join(base.dir, 'indexer/writer/derive.ts'))) as typeof Derive,
        rows: (await import(join(base.dir, 'indexer/writer/chain-rows.ts'))) as typeof ChainRows,
        maps: await importIf(join(base.dir, 'indexer/writer/txid-maps.ts')),
      });
    const cases: Case[] = [];
    if (values.only !== 'corpus') cases.push(mainnetCase(current.derive));
    if (values.only !== 'mainnet') cases.push(await corpusCase(current.derive, values.blocks));
    // The versions give the same bytes.
    for (const c of cases) {
      const sizes = versions.map((v) => writerWork(v, c, fresh(c)));
      if (new Set(sizes).size !== 1) throw new Error(`${c.name}: the versions encode ${sizes.join(' vs ')} bytes`);
    }
    const warmup = Number(values.warmup);
    const rounds = Number(values.rounds);
    const samples = new Map<string, number[]>();
    for (let r = 0; r < warmup + rounds; r++) {
      const order = r % 2 === 0 ? versions : [...versions].reverse();
      for (const c of cases)
        for (const v of order) {
          const block = fresh(c);
          const ms = cpuMs(() => writerWork(v, c, block));
          if (r < warmup) continue;
          const key = `${c.name}\t${v.name}`;
          samples.set(key, [...(samples.get(key) ?? []), ms]);
        }
    }
    say('| block | version | rounds | CPU ms p50 | min |\n|---|---|---|---|---|');
    for (const [key, xs] of samples) {
      const [block, version] = key.split('\t');
      say(`| ${block} | ${version} | ${xs.length} | ${round(pct(xs, 50), 1)} | ${round(Math.min(...xs), 1)} |`);
    }
  } finally {
    base?.remove();
  }
}

await main();
