import { readFileSync } from 'node:fs';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { RawTx, Transaction } from '@scure/btc-signer';
import { describe, expect, it } from 'vitest';
import { decodeBlock, decodeHeader } from '../../../src/bitcoin/block.js';
import { encodeBlock, encodeHeader, encodeTx } from '../../../src/bitcoin/encode.js';
import { bytesToHex, equalBytes, hashToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { blockMerkleRoot, checkWitnessCommitment, computeMerkleRoot, witnessCommitment } from '../../../src/bitcoin/merkle.js';
import { type DecodedTx, decodeTx, InputCursor, OutputCursor } from '../../../src/bitcoin/tx.js';
import { describeFixtures, fixturePath, readFixtureJsonl } from '../../support/fixtures.js';
import { FIXTURE_BLOCKS, readFixtureBlock, readRpcFixture } from './fixture-blocks.js';

const scureOpts = { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true, allowLegacyWitnessUtxo: true };

function nobleSha256d(b: Uint8Array): Uint8Array {
  return nobleSha256(nobleSha256(b));
}

/** Our decoding of a transaction as text: every field scure also decodes, plus txid and wtxid. */
function describeOurs(tx: DecodedTx): string {
  return JSON.stringify({
    version: tx.version,
    locktime: tx.locktime,
    segwit: tx.hasWitness,
    inputs: tx.inputs.map((i) => [hashToHex(i.prevTxid), i.vout, bytesToHex(i.scriptSig), i.sequence, i.witness.map(bytesToHex)]),
    outputs: tx.outputs.map((o) => [o.value.toString(), bytesToHex(o.script)]),
    txid: hashToHex(tx.txid),
    wtxid: hashToHex(tx.wtxid),
    baseSize: tx.baseSize,
  });
}

/**
 * `describeOurs` read through the in-place cursors (the bulk sync's path), each output's
 * in-place fields (script position, value as a number, end bytes) checked against its views.
 */
function describeCursors(tx: DecodedTx): string {
  const inputs: unknown[] = [];
  const ins = new InputCursor().start(tx);
  while (ins.next()) {
    const atTxid = bytesToHex(ins.src.subarray(ins.outpointAt, ins.outpointAt + 32));
    inputs.push([hashToHex(ins.prevTxid), ins.vout, bytesToHex(ins.scriptSig), ins.sequence, ins.witness.map(bytesToHex), atTxid]);
  }
  const outputs: unknown[] = [];
  const outs = new OutputCursor().start(tx);
  while (outs.next()) {
    const s = outs.script;
    const inPlace = outs.bytes.subarray(outs.scriptAt, outs.scriptAt + outs.scriptLength);
    if (
      !equalBytes(inPlace, s) ||
      outs.sats !== Number(outs.value) ||
      outs.firstByte !== (s[0] ?? -1) ||
      outs.lastByte !== (s[s.length - 1] ?? -1)
    )
      throw new Error(`output ${outs.vout} of ${hashToHex(tx.txid)}: in-place fields differ from its views`);
    outputs.push([outs.value.toString(), bytesToHex(s)]);
  }
  if (ins.next() || outs.next() || ins.index !== tx.inputCount - 1 || outs.vout !== tx.outputCount - 1)
    throw new Error('cursor moved past the end');
  return JSON.stringify({
    version: tx.version,
    locktime: tx.locktime,
    segwit: tx.hasWitness,
    inputs: inputs.map((i) => (i as unknown[]).slice(0, 5)),
    outputs,
    txid: hashToHex(tx.txid),
    wtxid: hashToHex(tx.wtxid),
    baseSize: tx.baseSize,
    atTxids: inputs.map((i) => (i as unknown[])[5]),
  });
}

/**
 * The same from @scure/btc-signer's RawTx decoder; the txid hashes scure's own legacy
 * serialization with @noble, independently of our encoder and hashing.
 */
function describeScure(bytes: Uint8Array): string {
  const raw = RawTx.decode(bytes);
  const legacy = RawTx.encode({ ...raw, segwitFlag: false, witnesses: undefined });
  return JSON.stringify({
    version: raw.version,
    locktime: raw.lockTime,
    segwit: raw.segwitFlag === true,
    inputs: raw.inputs.map((r, i) => [
      bytesToHex(r.txid),
      r.index,
      bytesToHex(r.finalScriptSig),
      r.sequence,
      (raw.witnesses?.[i] ?? []).map(bytesToHex),
    ]),
    outputs: raw.outputs.map((o) => [o.amount.toString(), bytesToHex(o.script)]),
    txid: bytesToHex(nobleSha256d(legacy).reverse()),
    wtxid: bytesToHex(nobleSha256d(bytes).reverse()),
    baseSize: legacy.length,
  });
}

describeFixtures('decodeBlock on the mainnet fixture blocks', () => {
  for (const f of FIXTURE_BLOCKS) {
    describe(f.file, () => {
      const bytes = readFixtureBlock(f.file);
      const block = decodeBlock(bytes);

      it('has the hash, transaction count and height SOURCES.md gives', () => {
        const hash = hashToHex(block.hash);
        expect(hash.startsWith(f.hashStart)).toBe(true);
        expect(hash.endsWith(f.hashEnd)).toBe(true);
        expect(block.txs.length).toBe(f.txs);
        expect(block.height).toBe(f.bip34 ? f.height : null);
        expect(block.size).toBe(bytes.length);
        expect(block.weight).toBeLessThanOrEqual(4_000_000);
      });

      it('re-encodes byte for byte, with and without witness', () => {
        expect(equalBytes(encodeBlock(block), bytes)).toBe(true);
        expect(encodeHeader(block.header)).toEqual(bytes.subarray(0, 80));
        const stripped = encodeBlock(block, { witness: false });
        expect(stripped.length).toBe(block.strippedSize);
        expect(block.weight).toBe(block.strippedSize * 3 + block.size);
        const bad = block.txs.filter(
          (tx) => !equalBytes(encodeTx(tx), tx.bytes) || !equalBytes(bytes.subarray(tx.offset, tx.offset + tx.size), tx.bytes),
        );
        expect(bad.map((tx) => tx.offset)).toEqual([]);
        expect(block.txs.map((tx) => tx.offset + tx.size).slice(0, -1)).toEqual(block.txs.slice(1).map((tx) => tx.offset));
      });

      it('recomputes the header merkle root from the txids and checks the witness commitment', () => {
        expect(hashToHex(blockMerkleRoot(block.txs))).toBe(hashToHex(block.header.merkleRoot));
        expect(computeMerkleRoot(block.txs.map((t) => t.txid)).mutated).toBe(false);
        expect(checkWitnessCommitment(block)).toBe(f.segwit ? true : null);
        expect(block.txs.some((t) => t.hasWitness)).toBe(f.segwit);
      });

      it('agrees with @scure/btc-signer on every transaction', () => {
        const differing = block.txs.filter((tx) => describeOurs(tx) !== describeScure(tx.bytes));
        expect(differing.map((tx) => `${tx.offset}: ${describeOurs(tx)} != ${describeScure(tx.bytes)}`)).toEqual([]);
        expect(block.txs.map((tx) => tx.isCoinbase)).toEqual(block.txs.map((_, i) => i === 0));
      });

      it('reads the same inputs and outputs through the in-place cursors as @scure/btc-signer', () => {
        const scure = (tx: DecodedTx) => {
          const d = JSON.parse(describeScure(tx.bytes)) as { inputs: unknown[][] };
          return JSON.stringify({ ...d, atTxids: d.inputs.map((i) => bytesToHex(hexToBytes(i[0] as string).reverse())) });
        };
        const differing = block.txs.filter((tx) => describeCursors(tx) !== scure(tx));
        expect(differing.map((tx) => `${tx.offset}: ${describeCursors(tx)} != ${scure(tx)}`)).toEqual([]);
      });
    });
  }

  it('agrees with Transaction.fromRaw (txid, wtxid, weight, vsize) on a segwit block', () => {
    const block = decodeBlock(readFixtureBlock('mainnet_h702861.raw'));
    for (const tx of block.txs.slice(1, 400)) {
      const t = Transaction.fromRaw(tx.bytes, scureOpts);
      expect(hashToHex(tx.txid)).toBe(t.id);
      expect(hashToHex(tx.wtxid)).toBe(bytesToHex(nobleSha256d(t.toBytes(true, true)).reverse()));
      expect(tx.weight).toBe(t.weight);
      expect(tx.vsize).toBe(t.vsize);
    }
  });

  it('links 227836 to 227835 and decodes a Buffer input as plain Uint8Array views', () => {
    const a = decodeBlock(readFileSync(fixturePath('mainnet', 'blocks', 'mainnet_h227835.raw')));
    const b = decodeBlock(readFixtureBlock('mainnet_h227836.raw'));
    expect(b.header.prevHash).toEqual(a.hash);
    expect(Object.getPrototypeOf(a.txs[1]!.outputs[0]!.script)).toBe(Uint8Array.prototype);
    expect(Object.getPrototypeOf(a.hash)).toBe(Uint8Array.prototype);
  });
});

describeFixtures('decodeTx', () => {
  it('decodes the 1 MB, 5,569-input transaction', () => {
    const bytes = new Uint8Array(readFileSync(fixturePath('mainnet', 'txs', 'mainnet_tx_bb41a757_5569in_1MB.raw')));
    const tx = decodeTx(bytes);
    expect(hashToHex(tx.txid)).toBe('bb41a757f405890fb0f5856228e23b715702d714d59bf2b1feb70d8b2b4e3e08');
    expect(tx.inputs.length).toBe(5569);
    expect(tx.outputs.length).toBe(1);
    expect(tx.hasWitness).toBe(false);
    expect(equalBytes(encodeTx(tx), bytes)).toBe(true);
  });

  it('matches the txids, sizes and outputs of getblock verbosity 2 (bitcoin-etl)', () => {
    for (const h of [0, 1, 50000, 50001, 50002]) {
      type Vout = { value: number; n: number; scriptPubKey: { hex: string } };
      type Tx = { txid: string; hash: string; hex: string; size: number; vsize: number; weight?: number; vout: Vout[] };
      const block = readRpcFixture<{ tx: Tx[] }>(`etl_getblock_v2_mainnet_h${h}.json`);
      for (const t of block.tx) {
        const tx = decodeTx(hexToBytes(t.hex));
        expect(hashToHex(tx.txid)).toBe(t.txid);
        expect(hashToHex(tx.wtxid)).toBe(t.hash);
        expect(tx.size).toBe(t.size);
        expect(tx.vsize).toBe(t.vsize);
        expect(tx.outputs.map((o) => o.value)).toEqual(t.vout.map((v) => BigInt(Math.round(v.value * 1e8))));
        expect(tx.outputs.map((o) => bytesToHex(o.script))).toEqual(t.vout.map((v) => v.scriptPubKey.hex));
      }
    }
  });

  it('decodes every tx_valid case and round-trips it; tx_invalid never crashes', () => {
    for (const name of ['core_tx_valid.json', 'core_tx_invalid.json']) {
      const rows = JSON.parse(readFileSync(fixturePath('mainnet', 'vectors', name), 'utf8')) as unknown[][];
      let decoded = 0;
      for (const row of rows) {
        if (row.length < 3 || typeof row[1] !== 'string') continue; // comment rows
        const bytes = hexToBytes(row[1]);
        let tx: DecodedTx;
        try {
          tx = decodeTx(bytes);
        } catch (e) {
          // Only the invalid set may hold undecodable serializations, and only as ParseErrors.
          expect(name).toBe('core_tx_invalid.json');
          expect((e as Error).name).toBe('ParseError');
          continue;
        }
        decoded++;
        expect(equalBytes(encodeTx(tx), bytes)).toBe(true);
        expect(tx.txid.length).toBe(32);
      }
      expect(decoded).toBeGreaterThan(name === 'core_tx_valid.json' ? 100 : 80);
    }
  });
});

describeFixtures('other networks and regtest chains', () => {
  it('decodes the signet, testnet4 and recent mainnet blocks recorded from Core', () => {
    type Rpc = {
      hash: string;
      height: number;
      merkleroot: string;
      previousblockhash: string;
      tx: (string | { txid: string })[];
      block: string;
      size: number;
      weight?: number;
      strippedsize?: number;
    };
    for (const name of [
      'electrumx_block_signet_h31500.json',
      'electrumx_block_testnet4_h40000.json',
      'electrumx_getblock_v1_plus_raw_mainnet_h951658.json',
    ]) {
      const rpc = readRpcFixture<Rpc>(name);
      const block = decodeBlock(hexToBytes(rpc.block));
      expect(hashToHex(block.hash)).toBe(rpc.hash);
      expect(hashToHex(block.header.prevHash)).toBe(rpc.previousblockhash);
      expect(hashToHex(block.header.merkleRoot)).toBe(rpc.merkleroot);
      expect(block.height).toBe(rpc.height);
      expect(block.size).toBe(rpc.size);
      if (rpc.weight !== undefined) expect(block.weight).toBe(rpc.weight);
      if (rpc.strippedsize !== undefined) expect(block.strippedSize).toBe(rpc.strippedsize);
      expect(block.txs.map((t) => hashToHex(t.txid))).toEqual(rpc.tx.map((t) => (typeof t === 'string' ? t : t.txid)));
      expect(hashToHex(blockMerkleRoot(block.txs))).toBe(rpc.merkleroot);
      expect(checkWitnessCommitment(block)).not.toBe(false);
    }
  });

  it('decodes every block of regtest-chain-a (BIP34 heights, merkle roots, witness commitments)', async () => {
    const rows = await readFixtureJsonl<{ height: number; hash: string; hex: string }>('regtest-chain-a', 'blocks.jsonl');
    expect(rows.length).toBeGreaterThan(250);
    for (const row of rows) {
      const bytes = hexToBytes(row.hex);
      const block = decodeBlock(bytes);
      expect(hashToHex(block.hash)).toBe(row.hash);
      expect(block.height).toBe(row.height === 0 ? null : row.height);
      expect(equalBytes(block.header.merkleRoot, blockMerkleRoot(block.txs))).toBe(true);
      expect(checkWitnessCommitment(block)).not.toBe(false);
      expect(equalBytes(encodeBlock(block), bytes)).toBe(true);
    }
  });

  it('decodes the regtest chain of Core functional tests with its heights', () => {
    const stats = readRpcFixture<{ blocks: string[] }>('core_regtest_getblockstats.json');
    let prev: Uint8Array | undefined;
    stats.blocks.forEach((hex, height) => {
      const block = decodeBlock(hexToBytes(hex));
      if (prev) expect(block.header.prevHash).toEqual(prev);
      if (height > 0) expect(block.height).toBe(height);
      prev = block.hash;
    });
  });
});

describeFixtures('headers', () => {
  it('decodes the 10,237 mainnet headers, each linking to the one before and meeting its target', () => {
    const bytes = new Uint8Array(readFileSync(fixturePath('mainnet', 'chain', 'mainnet_headers_h000000-010236.bin')));
    expect(bytes.length % 80).toBe(0);
    let prev: Uint8Array = new Uint8Array(32);
    for (let off = 0; off < bytes.length; off += 80) {
      const h = decodeHeader(bytes, off);
      expect(equalBytes(h.prevHash, prev)).toBe(true);
      // Proof of work: hash (as a little-endian number) ≤ target from nBits.
      const exp = h.bits >>> 24;
      const target = BigInt(h.bits & 0x7fffff) << BigInt(8 * (exp - 3));
      expect(BigInt('0x' + hashToHex(h.hash)) <= target).toBe(true);
      prev = h.hash;
    }
    expect(hashToHex(prev).endsWith('19628161')).toBe(true);
  });
});

describe('witnessCommitment', () => {
  it('is null for a coinbase without the commitment output', () => {
    const tx = decodeTx(
      hexToBytes(
        '01000000010000000000000000000000000000000000000000000000000000000000000000ffffffff0100ffffffff0100f2052a010000000151' + '00000000',
      ),
    );
    expect(witnessCommitment(tx)).toBeNull();
  });
});
