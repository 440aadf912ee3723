/**
 * Reading Bitcoin Core's blocks directory from disk: blk?????.dat files in number order,
 * de-obfuscated with blocks/xor.dat when present (Core ≥ 28), streamed in chunks so that memory
 * stays near one chunk plus one block whatever the size of the directory. Record parsing and XOR
 * are in src/bitcoin/blk.ts (pure).
 * @module
 */
import { type FileHandle, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { blkMagic, type BlkRecord, parseBlkRecords, xorBlockData } from '../src/bitcoin/blk.js';
import type { Network, NetworkName } from '../src/bitcoin/network.js';
import { ParseError } from '../src/bitcoin/wire.js';

/** A record read from a block file, with the file it came from. */
export interface BlkFileRecord extends BlkRecord {
  /** Path of the blk file. */
  readonly file: string;
  /** Its number (blk00042.dat → 42). */
  readonly fileNumber: number;
}

/** Options for reading block files. */
export interface BlkReadOptions {
  /** Network (or its 4 magic bytes) whose records to expect. */
  readonly network: NetworkName | Network | Uint8Array;
  /** Obfuscation key (blocks/xor.dat); omitted or null for none. */
  readonly xorKey?: Uint8Array | null;
  /** Bytes read per chunk (default 16 MiB); a block larger than a chunk is read whole. */
  readonly chunkBytes?: number;
}

const BLK_NAME = /^blk(\d{5,})\.dat$/;

/** The blk*.dat files of a blocks directory, in number order. */
export async function listBlkFiles(blocksDir: string): Promise<{ path: string; number: number }[]> {
  const names = await readdir(blocksDir);
  return names
    .map((name) => ({ name, m: BLK_NAME.exec(name) }))
    .filter((e): e is { name: string; m: RegExpExecArray } => e.m !== null)
    .map((e) => ({ path: join(blocksDir, e.name), number: Number(e.m[1]) }))
    .sort((a, b) => a.number - b.number);
}

/**
 * The obfuscation key of a blocks directory: the 8 bytes of xor.dat, or null when there is no
 * xor.dat (Core < 28) or the key is all zeros.
 * @throws Error when xor.dat exists but is not 8 bytes.
 */
export async function loadXorKey(blocksDir: string): Promise<Uint8Array | null> {
  let key: Buffer;
  try {
    key = await readFile(join(blocksDir, 'xor.dat'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  if (key.length !== 8) throw new Error(`${join(blocksDir, 'xor.dat')} must hold 8 bytes, found ${key.length}`);
  return key.every((b) => b === 0) ? null : new Uint8Array(key);
}

/**
 * Streams the records of one block file. Each yielded block is a view into a buffer of its own
 * chunk: keep it as long as needed, nothing reuses it.
 * @throws ParseError (from blk.ts) on a wrong magic, bad length or truncated last record.
 */
export async function* readBlkFile(path: string, options: BlkReadOptions): AsyncGenerator<BlkRecord> {
  const magic = blkMagic(options.network);
  const chunk = options.chunkBytes ?? 16 << 20;
  const key = options.xorKey ?? null;
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    let carry = new Uint8Array(0); // unparsed bytes, starting at file offset `start`
    let start = 0;
    let pos = 0; // next file offset to read
    let want = chunk;
    while (pos < size) {
      const n = Math.min(Math.max(want, chunk), size - pos);
      const buf = new Uint8Array(carry.length + n);
      buf.set(carry, 0);
      const { bytesRead } = await fh.read(buf, carry.length, n, pos);
      if (bytesRead !== n) throw new Error(`${path}: short read at offset ${pos} (${bytesRead} of ${n} bytes)`);
      if (key) xorBlockData(buf.subarray(carry.length), key, pos);
      pos += n;
      const final = pos >= size;
      const res = parseBlkRecords(buf, start, magic, final);
      for (const r of res.records) yield r;
      if (res.padding) {
        await expectZerosToEnd(fh, path, pos, size, key, chunk);
        return;
      }
      carry = buf.subarray(res.consumed);
      start += res.consumed;
      // An incomplete record: read at least the rest of it next time.
      want = carry.length >= 8 ? carry[4]! + carry[5]! * 0x100 + carry[6]! * 0x10000 + carry[7]! * 0x1000000 + 8 - carry.length : chunk;
    }
  } finally {
    await fh.close();
  }
}

/** Checks that a file holds only (de-obfuscated) zeros from `pos` to its end: preallocated space. */
async function expectZerosToEnd(
  fh: FileHandle,
  path: string,
  pos: number,
  size: number,
  key: Uint8Array | null,
  chunk: number,
): Promise<void> {
  const buf = new Uint8Array(Math.min(chunk, Math.max(size - pos, 0)));
  while (pos < size) {
    const n = Math.min(buf.length, size - pos);
    const { bytesRead } = await fh.read(buf, 0, n, pos);
    if (bytesRead !== n) throw new Error(`${path}: short read at offset ${pos} (${bytesRead} of ${n} bytes)`);
    if (key) xorBlockData(buf.subarray(0, n), key, pos);
    const z = buf.subarray(0, n).findIndex((b) => b !== 0);
    if (z >= 0)
      throw new ParseError(
        `non-zero byte 0x${buf[z]!.toString(16).padStart(2, '0')} after zero padding at file offset ${pos + z}`,
        pos + z,
      );
    pos += n;
  }
}

/**
 * Streams every block of a blocks directory in file order (and, within a file, in the order
 * Core wrote them, which is not always height order), de-obfuscating with its xor.dat.
 */
export async function* readBlocksDir(
  blocksDir: string,
  options: Omit<BlkReadOptions, 'xorKey'> & { readonly fromFile?: number },
): AsyncGenerator<BlkFileRecord> {
  const xorKey = await loadXorKey(blocksDir);
  for (const f of await listBlkFiles(blocksDir)) {
    if (options.fromFile !== undefined && f.number < options.fromFile) continue;
    for await (const r of readBlkFile(f.path, { ...options, xorKey })) {
      yield { file: f.path, fileNumber: f.number, offset: r.offset, block: r.block };
    }
  }
}
