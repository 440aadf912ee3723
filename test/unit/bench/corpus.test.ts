// The benchmark corpus generator (bench/corpus): deterministic for a seed, and every block it
// writes is a valid regtest block (structure, Merkle root, witness commitment, proof of work,
// BIP34 height, weight) whose inputs spend outputs that exist and are unspent, with values that
// add up; the block files parse as Core's (xor.dat), and the manifest's reorgs are real forks.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { readBlocksDir } from '../../../indexer/blk-file.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { blockMerkleRoot, checkWitnessCommitment } from '../../../src/bitcoin/merkle.js';
import { checkProofOfWork, REGTEST } from '../../../devnode/consensus.js';
import { corpusMainChain, loadCorpusManifest } from '../../../devnode/corpus-manifest.js';
import { DEFAULT_PARAMS, generateCorpus, type CorpusParams } from '../../../bench/corpus/generate.js';

const root = mkdtempSync(join(tmpdir(), 'bw-corpus-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const params: CorpusParams = {
  ...DEFAULT_PARAMS,
  blocks: 40,
  txsPerBlock: 150,
  tailBlocks: 2,
  tailTxs: 200,
  seed: 'unit',
  reorgsPerThousand: 50,
  hotShare: 0.05,
};

describe('bench corpus generator', () => {
  it('writes the same bytes for the same seed, other bytes for another seed', () => {
    generateCorpus({ out: join(root, 'a'), params });
    generateCorpus({ out: join(root, 'b'), params });
    generateCorpus({ out: join(root, 'c'), params: { ...params, seed: 'other' } });
    const file = (d: string) => readFileSync(join(root, d, 'blocks', 'blk00000.dat'));
    expect(file('a').equals(file('b'))).toBe(true);
    expect(file('a').equals(file('c'))).toBe(false);
    const strip = (d: string) => ({ ...JSON.parse(readFileSync(join(root, d, 'corpus.json'), 'utf8')), generatedMs: 0 });
    expect(strip('a')).toEqual(strip('b'));
  });

  it('writes valid blocks that spend existing outputs, with reorgs and hot addresses', async () => {
    const dir = join(root, 'a');
    const m = await loadCorpusManifest(dir);
    expect(m.tip.height).toBe(params.blocks);
    expect(m.reorgs).toBeGreaterThanOrEqual(1);
    expect(m.staleBlocks).toBeGreaterThanOrEqual(1);
    const byHash = new Map(m.blocks.map((b) => [b.hash, b]));
    const main = corpusMainChain(m);
    expect(main).toHaveLength(params.blocks + 1);

    // Records as Core's reader sees them (de-obfuscated with xor.dat), in the manifest's order.
    const raws: Uint8Array[] = [];
    for await (const r of readBlocksDir(join(dir, 'blocks'), { network: 'regtest' })) raws.push(r.block);
    expect(raws).toHaveLength(m.blocks.length);

    const utxo = new Map<string, bigint>();
    const hotScripts = new Set(m.hot.map((h) => h.script));
    const hotTxs = new Map<string, number>();
    let txs = 0;
    let bytes = 0;
    const decoded = raws.map((raw) => decodeBlock(raw));
    decoded.forEach((block, i) => {
      const rec = m.blocks[i]!;
      expect(hashToHex(block.hash)).toBe(rec.hash);
      expect(block.txs).toHaveLength(rec.txs);
      expect(hashToHex(block.header.prevHash)).toBe(rec.prev);
      expect(Buffer.from(blockMerkleRoot(block.txs)).equals(Buffer.from(block.header.merkleRoot))).toBe(true);
      expect(checkProofOfWork(block.hash, block.header.bits)).toBe(true);
      expect(block.header.bits).toBe(REGTEST.bits);
      expect(block.weight).toBeLessThanOrEqual(REGTEST.maxBlockWeight);
      if (rec.height > 0) {
        expect(block.height).toBe(rec.height);
        expect(checkWitnessCommitment(block)).toBe(true);
        expect(byHash.get(rec.prev)?.height).toBe(rec.height - 1);
      }
    });
    // Replay the main chain: every input spends an unspent output, values add up.
    for (const rec of main) {
      const block = decoded[m.blocks.indexOf(rec)]!;
      txs += block.txs.length;
      bytes += block.size;
      let fees = 0n;
      block.txs.forEach((tx, pos) => {
        let valueIn = 0n;
        if (pos > 0) {
          for (const input of tx.inputs) {
            const k = `${hashToHex(input.prevTxid)}:${input.vout}`;
            const v = utxo.get(k);
            expect(v, `input ${k} of block ${rec.height}`).toBeDefined();
            valueIn += v!;
            utxo.delete(k);
          }
        }
        let valueOut = 0n;
        tx.outputs.forEach((o, vout) => {
          valueOut += o.value;
          if (o.script[0] !== 0x6a) utxo.set(`${hashToHex(tx.txid)}:${vout}`, o.value);
          const s = Buffer.from(o.script).toString('hex');
          if (hotScripts.has(s)) hotTxs.set(s, (hotTxs.get(s) ?? 0) + 1);
        });
        if (pos > 0) {
          expect(valueOut <= valueIn).toBe(true);
          fees += valueIn - valueOut;
        }
      });
      if (rec.height > 0) {
        const subsidy = (50n * 100_000_000n) >> BigInt(Math.floor(rec.height / 150));
        expect(block.txs[0]!.outputs.reduce((s, o) => s + o.value, 0n)).toBe(subsidy + fees);
      }
    }
    expect(txs).toBe(m.txs);
    expect(bytes).toBe(m.rawBytes);
    for (const h of m.hot) expect(hotTxs.get(h.script) ?? 0).toBeGreaterThan(10);
    // The tail blocks hold exactly tailTxs transactions.
    for (const rec of main.slice(-params.tailBlocks)) expect(rec.txs).toBe(params.tailTxs);
    // Events: stale blocks are connected, then disconnected before the main branch.
    for (const b of m.blocks.filter((x) => x.stale)) {
      const i = m.blocks.indexOf(b);
      const c = m.events.findIndex((e) => e[0] === 'C' && e[1] === i);
      const d = m.events.findIndex((e) => e[0] === 'D' && e[1] === i);
      expect(c).toBeGreaterThanOrEqual(0);
      expect(d).toBeGreaterThan(c);
    }
  });
});
