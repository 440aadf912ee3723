import { sha256 } from '@noble/hashes/sha2.js';
import { Transaction } from '@scure/btc-signer';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DecodedBlock } from '../../../src/bitcoin/block.js';
import { bytesToHex, hashToHex } from '../../../src/bitcoin/hash.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { outpointKey, prevTxidOf, txidOf } from '../../../devnode/chain.js';
import { verifyTxScriptsDetailed } from '../../../devnode/script-verify.js';
import { ADDRESS_TYPES } from '../../../devnode/wallet.js';
import { createTestNode } from './harness.js';

const dsha = (b: Uint8Array) => sha256(sha256(b));

/** Merkle root computed here from scratch (noble), not with src/bitcoin. */
function merkle(hashes: Uint8Array[]): Uint8Array {
  let level = hashes;
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const a = level[i]!;
      const b = level[i + 1] ?? a;
      const both = new Uint8Array(64);
      both.set(a, 0);
      both.set(b, 32);
      next.push(dsha(both));
    }
    level = next;
  }
  return level[0]!;
}

function reversed(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex').reverse());
}

/** Independent checks of a mined block: PoW, Merkle root, witness commitment, BIP34, scure decoding. */
function checkMinedBlock(block: DecodedBlock, height: number): void {
  const header = block.bytes.subarray(0, 80);
  const hash = dsha(header);
  const value = BigInt(`0x${Buffer.from(hash).reverse().toString('hex')}`);
  expect(value <= 0x7fffffn << 232n).toBe(true);
  expect(bytesToHex(hash)).toBe(bytesToHex(block.hash));
  const txids: Uint8Array[] = [];
  const wtxids: Uint8Array[] = [];
  block.txs.forEach((tx, i) => {
    const scure = Transaction.fromRaw(tx.bytes, { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true });
    expect(scure.id).toBe(txidOf(tx));
    expect(bytesToHex(scure.toBytes(true, true))).toBe(bytesToHex(tx.bytes));
    txids.push(reversed(scure.id));
    wtxids.push(i === 0 ? new Uint8Array(32) : dsha(tx.bytes));
  });
  expect(bytesToHex(merkle(txids))).toBe(bytesToHex(block.header.merkleRoot));
  const cb = block.txs[0]!;
  const commitmentOut = cb.outputs.find((o) => bytesToHex(o.script).startsWith('6a24aa21a9ed'))!;
  const both = new Uint8Array(64);
  both.set(merkle(wtxids), 0);
  both.set(cb.inputs[0]!.witness[0]!, 32);
  expect(bytesToHex(commitmentOut.script.subarray(6))).toBe(bytesToHex(dsha(both)));
  expect(block.height).toBe(height);
}

describe('devnode miner and wallet', () => {
  let t: ReturnType<typeof createTestNode>;
  const received: string[] = [];
  beforeAll(() => {
    t = createTestNode(3);
    t.mine(101);
    for (const type of ADDRESS_TYPES)
      received.push(
        t.wallet.send({ script: t.wallet.destination(type).script }, 2_000_000n, { data: type === 'p2tr' ? ['beef'] : undefined }),
      );
    t.mine(1);
  });

  it('mines valid regtest blocks (PoW at 207fffff, Merkle root, witness commitment, BIP34), decodable by scure', () => {
    for (const e of t.node.chain.active.slice(1)) checkMinedBlock(e.block, e.height);
    const tip = t.node.chain.tip();
    expect(tip.block.txs.length).toBe(1 + ADDRESS_TYPES.length);
    expect(tip.block.header.time).toBeGreaterThan(tip.prev!.mtp);
  });

  it('spends outputs of every address type in one transaction, with every signature checked', () => {
    const { node, wallet } = t;
    const from = received.map((txid) => {
      const tx = node.chain.get(node.chain.txIndex.get(txid)!)!.block.txs.find((x) => txidOf(x) === txid)!;
      const vout = tx.outputs.findIndex((o) => o.value === 2_000_000n);
      return `${txid}:${vout}`;
    });
    const tx = wallet.createTx(wallet.address('p2wpkh'), 15_000_000n, { from });
    expect(tx.inputs.length).toBe(ADDRESS_TYPES.length);
    const prevouts = tx.inputs.map((_, i) => {
      const c = node.chain.utxo.get(outpointKey(prevTxidOf(tx, i), tx.inputs[i]!.vout))!;
      return { value: c.value, script: c.script };
    });
    expect(verifyTxScriptsDetailed(tx, prevouts)).toEqual({ failure: null, unchecked: [] });
    const r = node.acceptTx(tx);
    expect(r.ok).toBe(true);
    const [b] = t.mine(1);
    expect(b!.block.txs.map(txidOf)).toContain(txidOf(tx));
    checkMinedBlock(b!.block, b!.height);

    // Every input, tampered in its own way, fails with Core's script error.
    for (let i = 0; i < tx.inputs.length; i++) {
      const bytes = new Uint8Array(tx.bytes);
      const input = tx.inputs[i]!;
      // Flip a byte inside the longest witness item, or inside the scriptSig's first push.
      const target = input.witness.length ? [...input.witness].sort((a, b) => b.length - a.length)[0]! : input.scriptSig;
      const off = target.byteOffset - tx.bytes.byteOffset + (input.witness.length ? Math.floor(target.length / 2) : 10);
      bytes[off]! ^= 0x01;
      const bad = decodeTx(bytes);
      const verdict = verifyTxScriptsDetailed(bad, prevouts);
      expect(verdict.failure?.index, `input ${i}`).toBe(i);
    }
  });

  it('bumps a fee by replacement and refuses to bump what is not its own', () => {
    const { node, wallet } = t;
    const txid = wallet.send(wallet.address('p2pkh'), 1_000_000n);
    const bumped = wallet.bumpFee(txid);
    expect(node.mempool.has(bumped)).toBe(true);
    expect(node.mempool.get(bumped)!.fee).toBeGreaterThan(0n);
    expect(() => wallet.bumpFee(hashToHex(new Uint8Array(32)))).toThrow(/not in the mempool/);
  });
});
