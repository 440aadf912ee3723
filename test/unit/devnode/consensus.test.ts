import { beforeAll, expect, it } from 'vitest';
import { decodeBlock } from '../../../src/bitcoin/block.js';
import { bytesToHex, hashToHex, hexToBytes } from '../../../src/bitcoin/hash.js';
import { witnessMerkleRoot } from '../../../src/bitcoin/merkle.js';
import {
  blockSubsidy,
  blockWork,
  buildCoinbase,
  chainworkHex,
  difficulty,
  GENESIS_HASH,
  GENESIS_HEX,
  grindHeader,
  medianTime,
  scriptNumPush,
  targetHex,
} from '../../../devnode/consensus.js';
import { formatDouble } from '../../../devnode/core-json.js';
import { describeFixtures } from '../../support/fixtures.js';
import { loadRecording } from './recording.js';

describeFixtures('devnode consensus against the recorded Core 30 regtest node', () => {
  let rec: Awaited<ReturnType<typeof loadRecording>>;
  beforeAll(async () => {
    rec = await loadRecording();
  });

  it('has the regtest genesis block byte for byte', () => {
    expect(rec.call(7).response.result).toBe(GENESIS_HEX);
    const block = decodeBlock(hexToBytes(GENESIS_HEX));
    expect(hashToHex(block.hash)).toBe(GENESIS_HASH);
    expect(rec.call(6).response.result).toBe(GENESIS_HASH);
  });

  it('formats target, difficulty and chain work as getblockheader does', () => {
    const h = rec.call(11).response.result as Record<string, unknown>;
    expect(targetHex(0x207fffff)).toBe(h.target);
    // Core prints the double with 16 significant digits; the text is what clients parse.
    expect(formatDouble(difficulty(0x207fffff))).toBe(String(h.difficulty));
    expect(chainworkHex(blockWork(0x207fffff))).toBe(h.chainwork);
    const b101 = rec.call(30).response.result as Record<string, unknown>;
    expect(chainworkHex(blockWork(0x207fffff) * 102n)).toBe(b101.chainwork);
  });

  it('builds the coinbase Core built for block 1 (BIP34 height, locktime, sequence, witness commitment)', () => {
    const tx = (rec.call(29).response.result as { tx: { hex: string; vout: { scriptPubKey: { hex: string } }[] }[] }).tx[0]!;
    const payout = hexToBytes(tx.vout[0]!.scriptPubKey.hex);
    const cb = buildCoinbase(1, payout, 50n * 100_000_000n, new Uint8Array(32));
    expect(bytesToHex(cb)).toBe(tx.hex);
  });

  it('rebuilds the coinbase and finds the same nonce as Core for block 102 (fees, witness root)', () => {
    const raw = rec.restCall('1d5d111ad5001e7a2f0ed162bec7d18d83f625ffeec4f17492957dd636851c41.bin', '/block/').body.hex!;
    const block = decodeBlock(hexToBytes(raw));
    const cbOld = block.txs[0]!;
    const cb = buildCoinbase(102, cbOld.outputs[0]!.script, cbOld.outputs[0]!.value, witnessMerkleRoot(block.txs));
    expect(bytesToHex(cb)).toBe(bytesToHex(cbOld.bytes));
    expect(cbOld.outputs[0]!.value - blockSubsidy(102)).toBe(26_800n);
    const h = block.header;
    const ground = grindHeader({
      version: h.version,
      prevHash: h.prevHash,
      merkleRoot: h.merkleRoot,
      time: h.time,
      bits: h.bits,
      nonce: 0,
    });
    expect(ground.nonce).toBe(h.nonce);
    expect(hashToHex(ground.hash)).toBe('1d5d111ad5001e7a2f0ed162bec7d18d83f625ffeec4f17492957dd636851c41');
  });

  it('pushes heights as CScript() << n does', () => {
    expect(bytesToHex(scriptNumPush(0))).toBe('00');
    expect(bytesToHex(scriptNumPush(1))).toBe('51');
    expect(bytesToHex(scriptNumPush(16))).toBe('60');
    expect(bytesToHex(scriptNumPush(17))).toBe('0111');
    expect(bytesToHex(scriptNumPush(102))).toBe('0166');
    expect(bytesToHex(scriptNumPush(127))).toBe('017f');
    expect(bytesToHex(scriptNumPush(128))).toBe('028000');
    expect(bytesToHex(scriptNumPush(255))).toBe('02ff00');
    expect(bytesToHex(scriptNumPush(256))).toBe('020001');
    expect(bytesToHex(scriptNumPush(32768))).toBe('03008000');
  });

  it('halves the subsidy every 150 blocks and takes medians of block times', () => {
    expect(blockSubsidy(149)).toBe(5_000_000_000n);
    expect(blockSubsidy(150)).toBe(2_500_000_000n);
    expect(blockSubsidy(150 * 64)).toBe(0n);
    expect(medianTime([5, 1, 4, 2, 3])).toBe(3);
    expect(medianTime([7])).toBe(7);
  });
});
