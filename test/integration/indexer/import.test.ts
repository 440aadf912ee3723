/**
 * `blockwire import --blocks-dir DIR` as a real command: mainnet blocks 0–599 in two blk files,
 * obfuscated with an xor.dat key as Core ≥ 28 writes them, out of height order and with a stale
 * block the most-work rule must leave out. The index equals the per-block index of the chain, and
 * so it does with history buckets on (HISTORY_BUSY's default), off (HISTORY_BUSY=0) and switched on
 * first with another `busy` (`blockwire history-buckets --busy N`, which HISTORY_BUSY leaves).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { encodeBlock } from '../../../src/bitcoin/encode.js';
import { xorBlockData } from '../../../src/bitcoin/blk.js';
import { NETWORKS } from '../../../src/bitcoin/network.js';
import { applyBlock } from '../../../indexer/writer/apply.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createMigratedDatabase, createTestDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures, projectRoot } from '../../support/fixtures.js';
import { loadMainnet600 } from '../../support/chain-fixture.js';
import { readHistoryPlaces, snapshotIndex } from '../../support/chain-snapshot.js';
import { foldAllHistory } from '../../support/history-rows.js';

const run = promisify(execFile);

function frame(blocks: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const b of blocks) {
    const head = Buffer.alloc(8);
    Buffer.from(NETWORKS.main.magic).copy(head, 0);
    head.writeUInt32LE(b.length, 4);
    parts.push(head, Buffer.from(b));
  }
  return Buffer.concat(parts);
}

describeFixtures('blockwire import', () => {
  let dir: string;
  const dbs: TestDatabase[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'blockwire-blk-'));
    const blocks = loadMainnet600().map((b) => b.raw);
    // A stale sibling of block 500 (another nonce: another hash, same parent, less total work).
    const sib = decodeBlock(blocks[500]!);
    const stale = encodeBlock({ header: { ...sib.header, nonce: (sib.header.nonce + 1) >>> 0 }, txs: sib.txs });
    // Out of height order across files, as Core writes blocks received out of order.
    const files = [
      frame([...blocks.slice(0, 250), ...blocks.slice(300, 310)]),
      frame([...blocks.slice(250, 300), stale, ...blocks.slice(310)]),
    ];
    const key = Uint8Array.from([0x51, 0x0f, 0xa3, 0x7e, 0x00, 0xc4, 0x99, 0x12]);
    for (const [i, f] of files.entries()) {
      xorBlockData(f, key, 0);
      await writeFile(join(dir, `blk0000${i}.dat`), f);
    }
    await writeFile(join(dir, 'xor.dat'), key);
  });
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
    await rm(dir, { recursive: true, force: true });
  });

  /** `blockwire import` of the directory into a new database, with `env`; the database and the per-block index at `busy`, folded. */
  const importAgainst = async (name: string, busy: number, env: Record<string, string> = {}) => {
    const imported = await createTestDatabase(name);
    const ref = await createMigratedDatabase(`${name}ref`);
    dbs.push(imported, ref);
    const { stdout } = await run(
      process.execPath,
      [join(projectRoot, 'bin', 'blockwire.js'), 'import', '--blocks-dir', dir, '--near-tip', '0'],
      {
        env: { ...process.env, DATABASE_URL: imported.url, LOG_LEVEL: 'warn', INDEXER_BULK_BATCH_TXS: '100', ...env },
      },
    );
    expect(stdout).toMatch(/^imported 600 blocks \(616 transactions\) to height 599/);
    await sql`UPDATE history_bucket_params SET busy = ${busy} WHERE id = 1`.execute(ref.db);
    for (const b of loadMainnet600()) expect((await applyBlock(ref.db, decodeBlock(b.raw), b.height)).kind).toBe('applied');
    await foldAllHistory(ref.db);
    expect((await readTip(imported.db)).height).toBe(599);
    const p = await sql<{ busy: number }>`SELECT busy FROM history_bucket_params`.execute(imported.db);
    expect(p.rows[0]!.busy).toBe(busy);
    expect(await snapshotIndex(imported.db)).toEqual(await snapshotIndex(ref.db));
    return readHistoryPlaces(imported.db);
  };

  it('indexes the most-work chain of the blocks directory like the per-block path (history buckets on: HISTORY_BUSY 100)', async () => {
    const places = await importAgainst('imp', 100);
    // Every address of these early blocks has at most 100 transactions: all in their buckets.
    expect(places.records.size).toBeGreaterThan(100);
    expect(places.chunks.size).toBe(0);
  });

  it('with HISTORY_BUSY=0: every address in chunk rows, as the per-block index without buckets', async () => {
    const places = await importAgainst('imp0', 0, { HISTORY_BUSY: '0' });
    expect(places.chunks.size).toBeGreaterThan(100);
    expect(places.records.size).toBe(0);
  });

  it('with history buckets switched on first (`blockwire history-buckets`): the per-block index at the same busy', async () => {
    const imported = await createTestDatabase('impb');
    const ref = await createMigratedDatabase('impbref');
    dbs.push(imported, ref);
    const cli = (...args: string[]) =>
      run(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), ...args], {
        env: { ...process.env, DATABASE_URL: imported.url, LOG_LEVEL: 'warn', INDEXER_BULK_BATCH_TXS: '100', HISTORY_BUSY: '100' },
      });
    await expect(cli('history-buckets', '--busy', '0')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--busy must be'),
    });
    // (an empty index's bucket count is the first import's to choose)
    await expect(cli('history-buckets', '--busy', '2', '--base', '5')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('the index is empty'),
    });
    const on = await cli('history-buckets', '--busy', '2');
    expect(on.stdout).toMatch(/^history buckets on: busy 2, base 16; 0 records/);
    await expect(cli('history-buckets', '--busy', '3')).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('on already') });
    // (HISTORY_BUSY does not undo a switch: the index keeps busy 2)
    const { stdout } = await cli('import', '--blocks-dir', dir, '--near-tip', '0');
    expect(stdout).toMatch(/^imported 600 blocks/);
    expect((await sql<{ busy: number }>`SELECT busy FROM history_bucket_params`.execute(imported.db)).rows[0]!.busy).toBe(2);
    await sql`UPDATE history_bucket_params SET busy = 2 WHERE id = 1`.execute(ref.db);
    for (const b of loadMainnet600()) expect((await applyBlock(ref.db, decodeBlock(b.raw), b.height)).kind).toBe('applied');
    await foldAllHistory(ref.db);
    expect(await snapshotIndex(imported.db)).toEqual(await snapshotIndex(ref.db));
    // Most addresses are in their buckets, the busy ones in chunk rows: the same as block by block.
    const places = await readHistoryPlaces(imported.db);
    expect(places.records.size).toBeGreaterThan(100);
    expect(places.chunks.size).toBeGreaterThan(0);
    const refPlaces = await readHistoryPlaces(ref.db);
    expect([...places.chunks.keys()].sort()).toEqual([...refPlaces.chunks.keys()].sort());
    expect([...places.records.keys()].sort()).toEqual([...refPlaces.records.keys()].sort());
  });

  it('refuses a missing directory argument with usage', async () => {
    await expect(run(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'import'])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--blocks-dir is required'),
    });
  });
});
