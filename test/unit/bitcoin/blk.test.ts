import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseBlkRecords, readBlkRecords, xorBlockData } from '../../../src/bitcoin/blk.js';
import { listBlkFiles, loadXorKey, readBlkFile, readBlocksDir } from '../../../indexer/blk-file.js';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { equalBytes, hashToHex } from '../../../src/bitcoin/hash.js';
import { NETWORKS } from '../../../src/bitcoin/network.js';
import { ParseError } from '../../../src/bitcoin/wire.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';

function chainFile(i: 0 | 1): Uint8Array {
  const name = i === 0 ? 'mainnet_blk_h000000-000299.dat' : 'mainnet_blk_h000300-000599.dat';
  return new Uint8Array(readFileSync(fixturePath('mainnet', 'chain', name)));
}

function parseError(fn: () => unknown): ParseError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ParseError);
    return e as ParseError;
  }
  throw new Error('expected a ParseError');
}

describeFixtures('blk files in memory', () => {
  it('reads the first 600 mainnet blocks, linked by prev-hash from genesis', () => {
    let prev = new Uint8Array(32) as Uint8Array;
    let height = 0;
    const txs = [0, 0];
    for (const i of [0, 1] as const) {
      for (const r of readBlkRecords(chainFile(i), 'main')) {
        const block = decodeBlock(r.block);
        expect(equalBytes(block.header.prevHash, prev)).toBe(true);
        if (height === 0) expect(hashToHex(block.hash)).toBe(NETWORKS.main.genesisHash);
        if (height === 170) expect(hashToHex(block.hash).startsWith('00000000d1145790')).toBe(true);
        prev = block.hash;
        txs[i] = txs[i]! + block.txs.length;
        height++;
      }
    }
    expect(height).toBe(600);
    expect(txs).toEqual([307, 309]);
    expect(hashToHex(prev).startsWith('0000000042844571')).toBe(true);
  });

  it('gives each record the file offset of its block bytes', () => {
    const file = chainFile(0);
    const records = readBlkRecords(file, NETWORKS.main.magic);
    expect(records[0]!.offset).toBe(8);
    expect(records[1]!.offset).toBe(8 + records[0]!.block.length + 8);
    const last = records[records.length - 1]!;
    expect(last.offset + last.block.length).toBe(file.length);
  });

  it('reads the one-record blk file of block 277647', () => {
    const records = readBlkRecords(new Uint8Array(readFileSync(fixturePath('mainnet', 'blocks', 'mainnet_h277647.blkframed.dat'))), 'main');
    expect(records.length).toBe(1);
    const block = decodeBlock(records[0]!.block);
    expect(hashToHex(block.hash).startsWith('0000000000000000054a')).toBe(true);
    expect(block.txs.length).toBe(213);
  });

  it('rejects another network, a bad length, a truncated record and data after padding', () => {
    const file = chainFile(0);
    expect(parseError(() => readBlkRecords(file, 'test')).message).toBe('bad magic f9beb4d9 at file offset 0 (expected 0b110907)');
    const bad = file.slice(0, 300);
    bad.set([0xff, 0xff, 0xff, 0x7f], 4);
    expect(parseError(() => readBlkRecords(bad, 'main')).message).toBe('bad block length 2147483647 at file offset 4');
    expect(parseError(() => readBlkRecords(file.subarray(0, 200), 'main')).message).toBe(
      'truncated block at file offset 8: 192 of 285 bytes',
    );
    expect(parseError(() => readBlkRecords(file.subarray(0, 5), 'main')).message).toBe(
      'truncated record header at file offset 0: 5 of 8 bytes',
    );
    const padded = new Uint8Array(file.length + 100);
    padded.set(file);
    expect(readBlkRecords(padded, 'main').length).toBe(300);
    padded[file.length + 50] = 7;
    expect(parseError(() => readBlkRecords(padded, 'main')).message).toBe(
      `non-zero byte 0x07 after zero padding at file offset ${file.length + 50}`,
    );
  });

  it('stops before an incomplete record when more data may follow', () => {
    const file = chainFile(0);
    const res = parseBlkRecords(file.subarray(0, 1000), 0, 'main', false);
    const all = readBlkRecords(file, 'main');
    const complete = all.filter((r) => r.offset + r.block.length <= 1000);
    expect(res.records.length).toBe(complete.length);
    expect(res.records.length).toBeLessThan(all.length);
    const last = res.records[res.records.length - 1]!;
    expect(res.consumed).toBe(last.offset + last.block.length);
    expect(res.padding).toBe(false);
  });
});

describe('xorBlockData', () => {
  it('is its own inverse and depends only on the file offset, however the data is split', () => {
    const key = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const data = randomBytes(1000);
    const whole = new Uint8Array(data);
    xorBlockData(whole, key, 13);
    for (let i = 0; i < 1000; i++) expect(whole[i]).toBe(data[i]! ^ key[(13 + i) % 8]!);
    for (const split of [1, 3, 7, 8, 333, 999]) {
      // Unaligned views: byteOffset 1 inside a larger buffer.
      const backing = new Uint8Array(1001);
      backing.set(data, 1);
      const part = backing.subarray(1);
      xorBlockData(part.subarray(0, split), key, 13);
      xorBlockData(part.subarray(split), key, 13 + split);
      expect(equalBytes(part, whole)).toBe(true);
    }
    xorBlockData(whole, key, 13);
    expect(equalBytes(whole, data)).toBe(true);
    const zero = new Uint8Array(data);
    xorBlockData(zero, new Uint8Array(8), 0);
    expect(equalBytes(zero, data)).toBe(true);
    expect(() => xorBlockData(zero, new Uint8Array(7), 0)).toThrow(new TypeError('XOR key must be 8 bytes'));
  });
});

describeFixtures('blocks directory on disk (XOR-obfuscated, preallocated)', () => {
  let dir: string;
  let plain: Uint8Array[];
  const key = new Uint8Array(randomBytes(8));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'blockwire-blk-'));
    plain = [chainFile(0), chainFile(1)];
    for (const [i, file] of plain.entries()) {
      // Preallocated: zeros after the last record, obfuscated like the rest of the file.
      const padded = new Uint8Array(file.length + (i === 1 ? 70_000 : 0));
      padded.set(file);
      xorBlockData(padded, key, 0);
      await writeFile(join(dir, `blk0000${i}.dat`), padded);
    }
    await writeFile(join(dir, 'rev00000.dat'), new Uint8Array(16));
    await writeFile(join(dir, 'xor.dat'), key);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lists blk files in order and loads the key', async () => {
    expect((await listBlkFiles(dir)).map((f) => f.number)).toEqual([0, 1]);
    expect(await loadXorKey(dir)).toEqual(key);
  });

  it('streams the 600 blocks de-obfuscated, in order, with small chunks', async () => {
    const expected = plain.flatMap((f) => readBlkRecords(f, 'main'));
    for (const chunkBytes of [4096, 1 << 20]) {
      const got: { file: number; offset: number; block: Uint8Array }[] = [];
      for await (const r of readBlocksDir(dir, { network: 'main', chunkBytes }))
        got.push({ file: r.fileNumber, offset: r.offset, block: r.block });
      expect(got.length).toBe(600);
      expect(got.every((r, i) => equalBytes(r.block, expected[i]!.block) && r.offset === expected[i]!.offset)).toBe(true);
      expect(got.filter((r) => r.file === 1).length).toBe(300);
    }
    const fromSecond = [];
    for await (const r of readBlocksDir(dir, { network: 'main', fromFile: 1 })) fromSecond.push(r);
    expect(fromSecond.length).toBe(300);
  });

  it('checks preallocated zeros across chunks, to the end of the file', async () => {
    const file = chainFile(0);
    const padded = new Uint8Array(file.length + 20_000);
    padded.set(file);
    const path = join(dir, 'padded.dat');
    await writeFile(path, padded);
    let n = 0;
    for await (const r of readBlkFile(path, { network: 'main', chunkBytes: 4096 })) n += r.block.length > 0 ? 1 : 0;
    expect(n).toBe(300);
    padded[padded.length - 1] = 1;
    await writeFile(path, padded);
    const records = readBlkFile(path, { network: 'main', chunkBytes: 4096 });
    await expect(
      (async () => {
        for await (const _ of records) void _;
      })(),
    ).rejects.toThrow(`non-zero byte 0x01 after zero padding at file offset ${padded.length - 1}`);
  });

  it('reads a block larger than a chunk', async () => {
    const framed = new Uint8Array(readFileSync(fixturePath('mainnet', 'blocks', 'mainnet_h277647.blkframed.dat')));
    const path = join(dir, 'big.dat');
    await writeFile(path, framed);
    const got = [];
    for await (const r of readBlkFile(path, { network: 'main', chunkBytes: 1000 })) got.push(r);
    expect(got.length).toBe(1);
    expect(decodeBlock(got[0]!.block).txs.length).toBe(213);
  });

  it('fails on the obfuscated files without the key, and on a bad xor.dat', async () => {
    const records = readBlkFile(join(dir, 'blk00000.dat'), { network: 'main' });
    await expect(records.next()).rejects.toThrow(ParseError);
    const bad = await mkdtemp(join(tmpdir(), 'blockwire-blk-'));
    try {
      await writeFile(join(bad, 'xor.dat'), new Uint8Array(4));
      await expect(loadXorKey(bad)).rejects.toThrow(`${join(bad, 'xor.dat')} must hold 8 bytes, found 4`);
      await writeFile(join(bad, 'xor.dat'), new Uint8Array(8));
      expect(await loadXorKey(bad)).toBeNull();
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });
});
