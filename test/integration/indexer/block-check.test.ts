/**
 * A block the node sends whose transactions are not the ones its header commits to (a byte
 * changed on the way, or CVE-2012-2459's repeated last transaction, which keeps the Merkle root)
 * is never committed: the run loop checks the block's hash when it arrives and the writer checks
 * the Merkle root inside the block's transaction, before the commit (block-check.ts). A
 * mismatch rolls back everything the transaction wrote, block by block or in a turn of several
 * blocks, and the run loop asks the node again; the index then equals one built from the
 * blocks as sent whole.
 */
import { expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { writeCompactSize, compactSizeBytes } from '../../../src/bitcoin/wire.js';
import { silentLogger } from '../../../src/log.js';
import { applyBlocks } from '../../../indexer/writer/apply.js';
import { TxidCache, fillFromIndex } from '../../../indexer/writer/txid-cache.js';
import { checkBlock, decodeAsked } from '../../../indexer/block-check.js';
import { createRunLoop } from '../../../indexer/run.js';
import { readTip } from '../../../indexer/writer/chain-rows.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { describeFixtures } from '../../support/fixtures.js';
import { FixtureChain, loadChainA } from '../../support/chain-fixture.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { readEvents } from '../../support/chain-indexer.js';

/** `raw` with its last byte (the last transaction's locktime) changed: it decodes, its hash is the same, one txid differs. */
function tampered(raw: Uint8Array): Uint8Array {
  const out = Uint8Array.from(raw);
  out[out.length - 1]! ^= 0x01;
  return out;
}

/** `raw` (an odd number of transactions) with its last transaction repeated: same header, same Merkle root (CVE-2012-2459). */
function lastRepeated(raw: Uint8Array): Uint8Array {
  const block = decodeBlock(raw);
  const n = block.txs.length;
  if (n % 2 === 0) throw new Error('needs an odd number of transactions');
  const last = block.txs[n - 1]!.bytes;
  const body = raw.subarray(80 + compactSizeBytes(n));
  const out = new Uint8Array(80 + compactSizeBytes(n + 1) + body.length + last.length);
  out.set(raw.subarray(0, 80), 0);
  const at = writeCompactSize(out, 80, n + 1);
  out.set(body, at);
  out.set(last, at + body.length);
  return out;
}

/**
 * `raw` with one input's vout changed to an output its transaction does not have: the derivation
 * finds no such unspent output before the Merkle check would run, if the writer let it.
 */
function prevoutChanged(raw: Uint8Array): Uint8Array {
  const block = decodeBlock(raw);
  const ids = new Set(block.txs.map((t) => Buffer.from(t.txid).toString('hex')));
  const input = block.txs
    .slice(1)
    .flatMap((t) => t.inputs)
    .find((i) => !ids.has(Buffer.from(i.prevTxid).toString('hex')));
  if (input === undefined) throw new Error('needs an input spending an earlier block');
  // The first outpoint naming that txid (this input's, or another spending the same transaction).
  const at = Buffer.from(raw).indexOf(Buffer.from(input.prevTxid), 80);
  const out = Uint8Array.from(raw);
  out[at + 32] = 0xfe;
  out[at + 33] = 0xfe;
  return out;
}

/** The whole index and outbox, for comparing before and after a refused block. */
const stateOf = async (t: TestDatabase) => ({ index: await snapshotIndex(t.db), events: await readEvents(t.db), tip: await readTip(t.db) });

describeFixtures('a block that does not match its header', () => {
  const chain = loadChainA();
  const raw = (h: number) => chain.blocks.get(chain.main[h]!)!.raw;
  // The first main-chain block above the coinbase-only ones with an odd number of transactions,
  // some of them spending: every table is written before the check refuses it.
  const bad = chain.main.findIndex((_, h) => h > 0 && decodeBlock(raw(h)).txs.length % 2 === 1 && decodeBlock(raw(h)).txs.length > 1);
  const at = (h: number, bytes = raw(h)) => ({ block: decodeAsked(bytes, chain.main[h]!), height: h, unchecked: true });

  it('is refused by checkBlock, and its hash is the one asked for', () => {
    expect(bad).toBeGreaterThan(0);
    for (const bytes of [tampered(raw(bad)), lastRepeated(raw(bad)), prevoutChanged(raw(bad))]) {
      expect(decodeAsked(bytes, chain.main[bad]!).txs.length).toBeGreaterThan(1);
      expect(() => checkBlock(bytes, chain.main[bad]!)).toThrow(expect.objectContaining({ code: 'ERR_BLOCK_MERKLE' }));
    }
    expect(() => decodeAsked(raw(bad), chain.main[bad - 1]!)).toThrow(expect.objectContaining({ code: 'ERR_BLOCK_MISMATCH' }));
    expect(checkBlock(raw(bad), chain.main[bad]!).txs.length).toBe(decodeBlock(raw(bad)).txs.length);
  });

  it('rolls its transaction back, alone or in a turn of blocks, whatever was written before the check', async () => {
    const t = await createMigratedDatabase('bck');
    try {
      const upTo = (n: number) => Array.from({ length: n }, (_, h) => at(h));
      expect((await applyBlocks(t.db, upTo(bad - 1))).every((r) => r.kind === 'applied')).toBe(true);
      for (const bytes of [tampered(raw(bad)), lastRepeated(raw(bad)), prevoutChanged(raw(bad))]) {
        // In a turn of blocks (catching up): the good block before it is not committed either.
        const before = await stateOf(t);
        await expect(applyBlocks(t.db, [at(bad - 1), at(bad, bytes), at(bad + 1)])).rejects.toMatchObject({ code: 'ERR_BLOCK_MERKLE' });
        expect(await stateOf(t)).toEqual(before);
      }
      expect((await applyBlocks(t.db, [at(bad - 1)])).map((r) => r.kind)).toEqual(['applied']);
      // With the recent transactions known, as the run loop holds them: the changed prevout is
      // deleted by key, finds no row, and is looked up again in a second statement before the
      // derivation fails (that statement, too, settles before the rollback).
      const txids = new TxidCache(1_000_000);
      expect(await fillFromIndex(t.db, txids)).toBeGreaterThan(0);
      for (const ctx of [{}, { txids }])
        for (const bytes of [tampered(raw(bad)), lastRepeated(raw(bad)), prevoutChanged(raw(bad))]) {
          // Alone (the live path): checked once every row's statement is sent, or when the
          // derivation fails first (an input naming no output): the mismatch, retryable, is the error.
          const before = await stateOf(t);
          await expect(applyBlocks(t.db, [at(bad, bytes)], ctx)).rejects.toMatchObject({ code: 'ERR_BLOCK_MERKLE' });
          expect(await stateOf(t)).toEqual(before);
        }
      // The block as sent whole then applies, with the next one.
      const r = await applyBlocks(t.db, [{ block: decodeBlock(raw(bad)), height: bad }, at(bad + 1)]);
      expect(r.map((x) => x.kind)).toEqual(['applied', 'applied']);
    } finally {
      await t.drop();
    }
  });

  it('the run loop asks the node again and commits the block once it comes whole', async () => {
    class Tampering extends FixtureChain {
      served = 0;
      override async getBlock(hash: string): Promise<Uint8Array | null> {
        const bytes = await super.getBlock(hash);
        if (hash !== chain.main[bad] || bytes === null || this.served >= 3) return bytes;
        return [tampered, lastRepeated, prevoutChanged][this.served++]!(bytes);
      }
    }
    const node = new Tampering(chain.main.map((h) => chain.blocks.get(h)!));
    node.setActive(chain.main);
    const [t, whole] = await Promise.all([createMigratedDatabase('bcl'), createMigratedDatabase('bcw')]);
    const errors: string[] = [];
    // Block by block, as at the tip (the bad block alone in its transaction).
    const loop = createRunLoop({ db: t.db, source: node, log: silentLogger(), pollIntervalMs: 20, maxReorgDepth: 100, catchupBlocks: 1 });
    const running = loop.run();
    try {
      const last = chain.main.length - 1;
      for (let i = 0; i < 3000 && (await readTip(t.db)).height < last; i++) {
        const e = loop.status().lastError;
        if (e !== null && !errors.includes(e)) errors.push(e);
        await new Promise((r) => setTimeout(r, 10));
      }
      expect((await readTip(t.db)).height).toBe(last);
      expect(node.served).toBe(3);
      expect(errors.some((e) => e.includes('does not match its Merkle root'))).toBe(true);
      expect(loop.metrics.retries).toBeGreaterThanOrEqual(3);
      expect(loop.status().mode).not.toBe('stopped');
      for (let h = 0; h <= last; h += 7)
        await applyBlocks(
          whole.db,
          Array.from({ length: Math.min(7, last + 1 - h) }, (_, i) => at(h + i)),
        );
      expect(await snapshotIndex(t.db)).toEqual(await snapshotIndex(whole.db));
      const ev = (x: TestDatabase) => readEvents(x.db).then((es) => es.map(({ seq: _seq, ...e }) => e));
      expect(await ev(t)).toEqual(await ev(whole));
    } finally {
      await loop.stop();
      await running.catch(() => undefined);
      await Promise.all([t.drop(), whole.drop()]);
    }
  });
});
