/**
 * derive.ts on real blocks (electrs shape: pure, no services): the 4,864-transaction taproot-era
 * mainnet block 866342 with the outputs its inputs spent (Floresta's spent_utxos), the genesis
 * block's P2PK coinbase, and block 300025's bare multisig outputs. deriveUndo gives back exactly
 * what deriveBlock did, and deriveMempoolTx gives each transaction the same touches and outputs.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { addressToScript, pubkeyToP2pkhAddress } from '../../../src/bitcoin/address.js';
import { classifyScript } from '../../../src/bitcoin/script.js';
import {
  hashKey,
  deriveBlock,
  deriveMempoolTx,
  deriveUndo,
  externalOutpoints,
  externalOutpointsByTx,
  BlockDerivation,
  blockCreated,
  blockSpends,
  outputKeys,
  type Prevout,
  type StoredTx,
  type UtxoRow,
} from '../../../indexer/writer/derive.js';
import { txNumOf } from '../../../src/db/tx-num.js';
import { isUnspendable, scriptKeys } from '../../../indexer/writer/address-keys.js';
import { addressKey } from '../../../src/db/address-key.js';
import { decodeOutTags, PackedWriter } from '../../../src/db/packed.js';
import { describeFixtures, fixturePath } from '../../support/fixtures.js';
import { loadMainnet600 } from '../../support/chain-fixture.js';
import { loadMainnetBlock } from '../../support/mainnet-block.js';

describeFixtures('deriveBlock', () => {
  describe('mainnet block 866342 (4,864 transactions, 7,972 inputs)', () => {
    const { block, inputs } = loadMainnetBlock();
    const prevouts = new Map<string, Prevout>(
      inputs.map((i) => [`${hashKey(i.prevTxid)}:${i.vout}`, { txNum: i.txNum, value: i.value, script: i.script }]),
    );
    /** What the node's spenttxouts gives: each input's prevout, per transaction. */
    const perTx: { value: bigint; script: Uint8Array }[][] = block.txs.map(() => []);
    for (const i of inputs) perTx[i.pos]!.push({ value: i.value, script: i.script });
    const rows = deriveBlock(block, 866342, (txid, vout) => prevouts.get(`${hashKey(txid)}:${vout}`), { touches: true });

    it('uses every recorded prevout and the right fee total', () => {
      expect(inputs).toHaveLength(7972);
      const inBlock = 7972 - externalOutpoints(block).length;
      expect(rows.spent).toHaveLength(7972 - inBlock);
      const outs = block.txs.slice(1).reduce((a, t) => a + t.outputs.reduce((b, o) => b + o.value, 0n), 0n);
      const ins = inputs.reduce((a, i) => a + i.value, 0n);
      const coinbase = block.txs[0]!.outputs.reduce((a, o) => a + o.value, 0n);
      expect(ins - outs).toBe(coinbase - 312_500_000n);
    });

    it('writes one txs row per transaction and keeps only spendable, unspent outputs', () => {
      expect(rows.txs).toHaveLength(4864);
      expect(rows.txs[0]!.ins).toHaveLength(0);
      const all = block.txs.flatMap((t) => t.outputs);
      const unspendable = all.filter((o) => isUnspendable(o.script)).length;
      expect(unspendable).toBeGreaterThanOrEqual(3971);
      expect(rows.created.length).toBe(all.length - unspendable - (7972 - rows.spent.length));
      expect(rows.created.every((c) => !isUnspendable(c.script))).toBe(true);
    });

    it("tags every output as outTagOf does (a template's tag taken from its address key)", () => {
      const templates = block.txs
        .flatMap((t) => t.outputs)
        .filter((o) => ['witness_v0_keyhash', 'witness_v1_taproot'].includes(classifyScript(o.script)));
      expect(templates.length).toBeGreaterThan(1000);
      block.txs.forEach((tx, i) => {
        const w = new PackedWriter(64);
        tx.outputs.forEach((o, vout) => w.packTaggedOut(vout, o.value, o.script));
        expect(Buffer.from(rows.txs[i]!.outs).equals(Buffer.from(w.buf.subarray(0, w.len))), `tx ${i}`).toBe(true);
      });
    });

    it('balance deltas are received minus spent per address', () => {
      const want = new Map<string, bigint>();
      const add = (script: Uint8Array, v: bigint) => {
        const key = scriptKeys(script);
        if (typeof key === 'string') want.set(key, (want.get(key) ?? 0n) + v);
      };
      block.txs.forEach((t) => t.outputs.forEach((o) => add(o.script, o.value)));
      for (const p of inputs) add(p.script, -p.value);
      for (const [key, v] of want) if (v !== 0n || rows.balances.has(key)) expect(rows.balances.get(key)?.sats, key).toBe(v);
      const touched = rows.touches!;
      for (const t of touched) expect(rows.history.get(t.key)).toContain(txNumOf(866342, t.pos));
    });

    for (const [form, spentOf] of [
      ['its block_undo row', () => ({ undo: rows.undo })],
      ["the node's spent outputs", () => ({ perTx })],
    ] as const)
      it(`deriveUndo is the exact inverse, from the block and ${form}`, () => {
        const stored: StoredTx[] = rows.txs.map((t) => ({ txNum: t.txNum, txid: t.txid, ins: t.ins }));
        const u = deriveUndo(866342, block, stored, spentOf(), { touches: true });
        expect([...u.balances].map(([key, d]) => [key, d.sats, d.count]).sort()).toEqual(
          [...rows.balances].map(([key, d]) => [key, d.sats, d.count]).sort(),
        );
        expect(u.restored.map((r) => `${hashKey(r.txid)}:${r.vout}`).sort()).toEqual(
          rows.spent.map((r) => `${hashKey(r.txid)}:${r.vout}`).sort(),
        );
        expect(new Set(u.keys)).toEqual(new Set(rows.history.keys()));
        expect(u.touches!.map((t) => `${t.key}:${t.pos}:${t.received}:${t.sent}`).sort()).toEqual(
          rows.touches!.map((t) => `${t.key}:${t.pos}:${t.received}:${t.sent}`).sort(),
        );
      });

    it('derives part by part, each part knowing only its own spent outputs, the same rows as at once', () => {
      const byTx = externalOutpointsByTx(block);
      expect(byTx.flat()).toEqual(externalOutpoints(block));
      const known = new Map<string, Prevout>();
      const d = new BlockDerivation(block, 866342, (txid, vout) => known.get(`${hashKey(txid)}:${vout}`), { touches: true });
      const ends = [1, 700, 701, 2500, 4864];
      let from = 0;
      const created: UtxoRow[] = [];
      const keys = outputKeys(block);
      const { spentHere } = blockSpends(block);
      for (const end of ends) {
        for (const o of byTx.slice(from, end).flat())
          known.set(`${hashKey(o.txid)}:${o.vout}`, prevouts.get(`${hashKey(o.txid)}:${o.vout}`)!);
        d.through(end);
        // A part's new outputs leave out those a later part spends: known from the block alone.
        created.push(...blockCreated(block, 866342, keys, spentHere, from, end));
        from = end;
      }
      expect(d.rows()).toEqual(rows);
      expect(created).toEqual(rows.created);
      // (the block spends outputs of an earlier part in a later one: the parts' rows could differ)
      const pos = new Map(block.txs.map((t, i) => [hashKey(t.txid), i]));
      const across = block.txs.flatMap((t, i) =>
        i === 0 ? [] : t.inputs.filter((input) => (pos.get(hashKey(input.prevTxid)) ?? i) < 700 && i >= 700),
      );
      expect(across.length).toBeGreaterThan(0);
      expect(() => d.txRows(0, 4865)).toThrow(/4864 of 4865 transactions derived/);
      // A part whose spent outputs are not known yet is an error, not a guess.
      const early = new BlockDerivation(block, 866342, (txid, vout) => known.get(`${hashKey(txid)}:${vout}`));
      known.clear();
      expect(() => early.through(2)).toThrow(/is not in the index/);
      expect(() => early.rows()).toThrow(/0 of 4864 transactions derived/);
    });

    it('gives the new unspent outputs from the block alone (blockCreated), the derived rows, whole or in parts', () => {
      const keys = outputKeys(block);
      const { spentHere } = blockSpends(block);
      expect(blockCreated(block, 866342, keys, spentHere)).toEqual(rows.created);
      const parts = [0, 1, 700, 701, 2500, 4864];
      const inParts = parts.slice(1).flatMap((end, i) => blockCreated(block, 866342, keys, spentHere, parts[i], end));
      expect(inParts).toEqual(rows.created);
      // (some of the block's outputs are spent inside it, some are unspendable: left out alike)
      expect(rows.created.length).toBeLessThan(block.txs.reduce((n, t) => n + t.outputs.length, 0));
    });

    it('derives each transaction as the mempool path the same as the block path', () => {
      // The block's own outputs as a mempool transaction would find them (parents in the mempool).
      const own = new Map<string, { value: bigint; script: Uint8Array }>();
      block.txs.forEach((t) => t.outputs.forEach((o, v) => own.set(`${hashKey(t.txid)}:${v}`, o)));
      const lookup = (txid: Uint8Array, vout: number) => own.get(`${hashKey(txid)}:${vout}`) ?? prevouts.get(`${hashKey(txid)}:${vout}`);
      const touchesAt = new Map<number, string[]>();
      for (const t of rows.touches!) touchesAt.set(t.pos, [...(touchesAt.get(t.pos) ?? []), `${t.key}:${t.received}:${t.sent}`]);
      const createdAt = new Map<string, string>();
      for (const c of rows.created) createdAt.set(`${hashKey(c.txid)}:${c.vout}`, `${c.key}:${c.value}`);
      let fees = 0n;
      let compared = 0;
      block.txs.forEach((tx, pos) => {
        if (pos === 0) return;
        const m = deriveMempoolTx(tx, lookup, new Date(0));
        expect(
          m.addresses.map((a) => `${a.key}:${a.received}:${a.sent}`),
          `tx ${pos}`,
        ).toEqual(touchesAt.get(pos) ?? []);
        expect(m.spends.map((s) => `${hashKey(s.prevTxid)}:${s.prevVout}`)).toEqual(
          tx.inputs.map((i) => `${hashKey(i.prevTxid)}:${i.vout}`),
        );
        expect(m.outputs.every((o) => !isUnspendable(o.script))).toBe(true);
        for (const o of m.outputs) {
          const c = createdAt.get(`${hashKey(tx.txid)}:${o.vout}`);
          // Outputs the block spends itself are not among its created rows.
          if (c !== undefined) {
            expect(`${o.key}:${o.value}`).toBe(c);
            compared++;
          }
        }
        fees += m.fee!;
      });
      expect(compared).toBe(rows.created.length - block.txs[0]!.outputs.filter((o) => !isUnspendable(o.script)).length);
      expect(fees).toBe(block.txs[0]!.outputs.reduce((a, o) => a + o.value, 0n) - 312_500_000n);
    });
  });

  it('indexes a P2PK coinbase under its P2PKH address (block 1); the genesis coinbase under none', () => {
    const [genesis, first] = loadMainnet600();
    const block1 = decodeBlock(first!.raw);
    const rows = deriveBlock(block1, 1, () => undefined);
    // <65-byte public key> OP_CHECKSIG, counted under that key's P2PKH address
    const key = addressKey(addressToScript(pubkeyToP2pkhAddress(block1.txs[0]!.outputs[0]!.script.subarray(1, 66), 'main'), 'main'));
    expect(rows.balances.get(key)).toEqual({ sats: 5_000_000_000n, count: 1 });
    expect(rows.history.get(key)).toEqual([txNumOf(1, 0)]);
    expect(rows.created[0]!.key).toBe(key);
    // Core never puts the genesis coinbase in its UTXO set: no balance, unspent output or history,
    // while the block keeps its transaction and its output.
    const g = deriveBlock(decodeBlock(genesis!.raw), 0, () => undefined);
    expect(g.balances.size).toBe(0);
    expect(g.history.size).toBe(0);
    expect(g.created).toEqual([]);
    const gb = decodeBlock(genesis!.raw);
    expect(blockCreated(gb, 0, outputKeys(gb), blockSpends(gb).spentHere)).toEqual([]);
    expect(blockCreated(block1, 1, outputKeys(block1), blockSpends(block1).spentHere)).toEqual(rows.created);
    expect(g.txs).toHaveLength(1);
    expect(decodeOutTags(g.txs[0]!.outs)[0]!.value).toBe(5_000_000_000n);
  });

  it("puts bare multisig outputs in each key's history but in no balance", () => {
    const block = decodeBlock(new Uint8Array(readFileSync(fixturePath('mainnet', 'blocks', 'mainnet_h300025.raw'))));
    const multis = block.txs.flatMap((t) => t.outputs).filter((o) => Array.isArray(scriptKeys(o.script)));
    expect(multis.length).toBe(block.txs.flatMap((t) => t.outputs).filter((o) => classifyScript(o.script) === 'multisig').length);
    expect(multis.length).toBeGreaterThan(0);
    // Its inputs' prevouts are not in the fixture: give every external input a placeholder.
    const rows = deriveBlock(block, 300025, () => ({ txNum: 1, value: 0n, script: new Uint8Array([0x6a]) }));
    for (const o of multis) {
      for (const key of scriptKeys(o.script) as string[]) {
        expect(rows.history.has(key)).toBe(true);
        expect(rows.balances.has(key)).toBe(false);
      }
    }
    const created = rows.created.filter((c) => Array.isArray(c.keys));
    expect(created.every((c) => c.key === null)).toBe(true);
  });
});
