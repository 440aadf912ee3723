/**
 * The manifest of a block corpus on disk (written by bench/corpus/generate.ts, served by
 * corpus.ts): Bitcoin Core block files under `blocks/` (blk*.dat, xor.dat) plus `corpus.json`
 * listing every block record (stale ones included) in file order, and the order in which a node
 * would have connected and disconnected them, so a server can replay the reorgs.
 * @module
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { xorBlockData } from '../src/bitcoin/blk.js';
import { hexToBytes } from '../src/bitcoin/hash.js';

/** One block record in the block files. */
export interface CorpusBlock {
  height: number;
  /** Display hex, as Core prints it. */
  hash: string;
  prev: string;
  /** blk<file>.dat */
  file: number;
  /** Offset of the block bytes in that file (after magic and length). */
  offset: number;
  length: number;
  txs: number;
  /** True for a block of a branch that lost (a reorg replaced it). */
  stale?: boolean;
}

/** `C` connects, `D` disconnects the block at that index of `blocks`. */
export type CorpusEvent = ['C' | 'D', number];

export interface CorpusManifest {
  format: 1;
  network: 'regtest';
  /** The generator's parameters (seed, blocks, txs per block, …). */
  params: Record<string, number | string>;
  /** Identifies the parameters and the generator version (the cache key). */
  key: string;
  /** Every record, in file order. */
  blocks: CorpusBlock[];
  /** Connect/disconnect order; ends with the main chain connected up to its tip. */
  events: CorpusEvent[];
  tip: { height: number; hash: string };
  /** Transactions and serialized bytes of the main chain (stale blocks excluded). */
  txs: number;
  rawBytes: number;
  reorgs: number;
  staleBlocks: number;
  /** Addresses paid by a large share of the transactions (each with its output script). */
  hot: { address: string; script: string }[];
  /** The xor.dat key (hex; all zeros for none). */
  xor: string;
  generatedMs: number;
}

export const MANIFEST_FILE = 'corpus.json';

/** The blocks directory of a corpus. */
export function corpusBlocksDir(dir: string): string {
  return join(dir, 'blocks');
}

/** Reads `corpus.json` of a corpus directory. */
export async function loadCorpusManifest(dir: string): Promise<CorpusManifest> {
  const m = JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8')) as CorpusManifest;
  if (m.format !== 1) throw new Error(`${join(dir, MANIFEST_FILE)}: unknown corpus format ${String(m.format)}`);
  return m;
}

/** The main chain's records by height. */
export function corpusMainChain(m: CorpusManifest): CorpusBlock[] {
  const chain: CorpusBlock[] = [];
  for (const b of m.blocks) if (!b.stale) chain[b.height] = b;
  return chain;
}

/**
 * The serialized bytes of the record `b` of the corpus in `dir` (de-obfuscated with the
 * manifest's xor key). `files` keeps the block files open between calls (blk file number → file
 * descriptor; the caller closes them); without it the file is opened and closed for this read.
 */
export function readCorpusBlock(dir: string, m: CorpusManifest, b: CorpusBlock, files?: Map<number, number>): Buffer {
  let fd = files?.get(b.file);
  const own = fd === undefined && files === undefined;
  if (fd === undefined) {
    fd = openSync(join(corpusBlocksDir(dir), `blk${String(b.file).padStart(5, '0')}.dat`), 'r');
    files?.set(b.file, fd);
  }
  try {
    const buf = Buffer.allocUnsafe(b.length);
    const n = readSync(fd, buf, 0, b.length, b.offset);
    if (n !== b.length) throw new Error(`short read of block ${b.hash}`);
    xorBlockData(buf, hexToBytes(m.xor), b.offset);
    return buf;
  } finally {
    if (own) closeSync(fd);
  }
}
