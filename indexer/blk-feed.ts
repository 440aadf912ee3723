/**
 * Blocks straight from Bitcoin Core's blocks directory (blk*.dat, de-obfuscated with xor.dat)
 * for `blockwire import`: a first pass reads only the 80-byte headers of every record and picks
 * the chain with the most work (Core stores blocks in arrival order, stale ones included), a
 * second pass feeds that chain's blocks to the bulk path in height order by file position.
 * Record framing and XOR come from src/bitcoin/blk.ts.
 * @module
 */
import { open, type FileHandle } from 'node:fs/promises';
import { xorBlockData } from '../src/bitcoin/blk.js';
import { listBlkFiles, loadXorKey } from './blk-file.js';
import { decodeHeader } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { NETWORKS, type NetworkName } from '../src/bitcoin/network.js';
import { prefetchFeed, type BlockFeed } from './prefetch.js';

/** Where one block lives. */
export interface BlkLocation {
  hash: string;
  prevHash: string;
  bits: number;
  file: string;
  /** Offset of the block bytes (after magic and length). */
  offset: number;
  length: number;
}

/** The best chain found in a blocks directory. */
export interface BlkChain {
  network: NetworkName;
  /** Blocks by height, genesis first. */
  blocks: BlkLocation[];
  /** Records seen in all (stale and orphan blocks included). */
  records: number;
  xorKey: Uint8Array | null;
}

/** Proof-of-work of a header's compact target: 2^256 / (target + 1). */
function headerWork(bits: number): bigint {
  const exp = bits >>> 24;
  const mant = BigInt(bits & 0x007fffff);
  const target = exp <= 3 ? mant >> BigInt(8 * (3 - exp)) : mant << BigInt(8 * (exp - 3));
  if (target <= 0n || bits & 0x00800000) return 0n;
  return (1n << 256n) / (target + 1n);
}

async function readAt(fh: FileHandle, pos: number, n: number, key: Uint8Array | null): Promise<Uint8Array> {
  const buf = new Uint8Array(n);
  const { bytesRead } = await fh.read(buf, 0, n, pos);
  const out = buf.subarray(0, bytesRead);
  if (key) xorBlockData(out, key, pos);
  return out;
}

/** Scans every record's header and returns the chain with the most work. */
export async function scanBlocksDir(dir: string, network?: NetworkName): Promise<BlkChain> {
  const files = await listBlkFiles(dir);
  if (files.length === 0) throw new Error(`no blk*.dat files in ${dir}`);
  const xorKey = await loadXorKey(dir);
  const byHash = new Map<string, BlkLocation>();
  let net: NetworkName | undefined = network;
  let records = 0;
  for (const f of files) {
    const fh = await open(f.path, 'r');
    try {
      const size = (await fh.stat()).size;
      let pos = 0;
      while (pos + 88 <= size) {
        const head = await readAt(fh, pos, 88, xorKey);
        if (head[0] === 0 && head[1] === 0 && head[2] === 0 && head[3] === 0) break; // preallocated tail
        const magic = head.subarray(0, 4);
        if (net === undefined) {
          net = (Object.values(NETWORKS).find((n) => Buffer.compare(Buffer.from(n.magic), Buffer.from(magic)) === 0)?.name ?? undefined) as
            NetworkName | undefined;
          if (net === undefined) throw new Error(`${f.path}: unknown network magic ${Buffer.from(magic).toString('hex')}`);
        }
        if (Buffer.compare(Buffer.from(NETWORKS[net].magic), Buffer.from(magic)) !== 0) {
          throw new Error(`${f.path}: bad magic ${Buffer.from(magic).toString('hex')} at offset ${pos} (expected ${net})`);
        }
        const length = Buffer.from(head.buffer, head.byteOffset + 4, 4).readUInt32LE(0);
        if (pos + 8 + length > size) break; // a record Core had not finished writing
        const h = decodeHeader(head, 8);
        const hash = hashToHex(h.hash);
        byHash.set(hash, { hash, prevHash: hashToHex(h.prevHash), bits: h.bits, file: f.path, offset: pos + 8, length });
        records++;
        pos += 8 + length;
      }
    } finally {
      await fh.close();
    }
  }
  if (net === undefined) throw new Error(`no blocks in ${dir}`);
  // Cumulative work per block (iteratively, chains are long), then the most-work tip.
  const work = new Map<string, { work: bigint; height: number } | null>();
  const resolve = (start: string) => {
    const stack: string[] = [];
    let h: string | undefined = start;
    while (h !== undefined && !work.has(h)) {
      const loc = byHash.get(h);
      if (!loc) break;
      stack.push(h);
      h = loc.prevHash;
    }
    let base = h !== undefined ? work.get(h) : undefined;
    for (let i = stack.length - 1; i >= 0; i--) {
      const loc = byHash.get(stack[i]!)!;
      const isGenesis = /^0+$/.test(loc.prevHash);
      const parent = isGenesis ? { work: 0n, height: -1 } : (base ?? null);
      const w = parent === null ? null : { work: parent.work + headerWork(loc.bits), height: parent.height + 1 };
      work.set(stack[i]!, w);
      base = w;
    }
  };
  let best: string | null = null;
  let bestWork = -1n;
  for (const hash of byHash.keys()) {
    resolve(hash);
    const w = work.get(hash);
    if (w && w.work > bestWork) {
      bestWork = w.work;
      best = hash;
    }
  }
  if (best === null) throw new Error(`no chain from the genesis block in ${dir}`);
  const chain: BlkLocation[] = [];
  for (let h: string | null = best; h !== null;) {
    const loc: BlkLocation = byHash.get(h)!;
    chain.push(loc);
    h = /^0+$/.test(loc.prevHash) ? null : loc.prevHash;
  }
  chain.reverse();
  return { network: net, blocks: chain, records, xorKey };
}

/** Feeds `chain.blocks[from..to]`, reading a few blocks ahead. */
export function blkFeed(chain: BlkChain, from: number, to: number, readAhead = 16): BlockFeed {
  const handles = new Map<string, Promise<FileHandle>>();
  const handle = (file: string) => {
    let h = handles.get(file);
    if (!h) {
      h = open(file, 'r');
      handles.set(file, h);
    }
    return h;
  };
  const last = Math.min(to, chain.blocks.length - 1);
  return prefetchFeed(
    from,
    last,
    readAhead,
    async (height) => {
      const loc = chain.blocks[height]!;
      return { height, hash: loc.hash, raw: await readAt(await handle(loc.file), loc.offset, loc.length, chain.xorKey) };
    },
    () => {
      for (const h of handles.values()) void h.then((fh) => fh.close()).catch(() => undefined);
      handles.clear();
    },
  );
}
