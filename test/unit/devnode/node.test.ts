import { beforeEach, describe, expect, it } from 'vitest';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { txidOf } from '../../../devnode/chain.js';
import { rejectString } from '../../../devnode/mempool-accept.js';
import { createTestNode } from './harness.js';

describe('devnode node: mempool policy', () => {
  let t: ReturnType<typeof createTestNode>;
  beforeEach(() => {
    t = createTestNode();
    t.mine(110);
  });

  it('rejects missing inputs, dust, a fee below the minimum relay fee and resubmission, with Core reasons', () => {
    const { node, wallet } = t;
    const dust = wallet.createTx(wallet.address('p2wpkh'), 100n);
    const r1 = node.acceptTx(dust);
    expect(r1.ok).toBe(false);
    if (!r1.ok) expect(rejectString(r1)).toBe('dust, tx with dust output must be 0-fee');

    const cheap = wallet.createTx(wallet.address('p2tr'), 100_000n, { feeRate: 0.05 });
    const r2 = node.acceptTx(cheap);
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(rejectString(r2)).toMatch(/^min relay fee not met, \d+ < \d+$/);

    const good = wallet.createTx(wallet.address('p2pkh'), 100_000n);
    expect(node.acceptTx(good).ok).toBe(true);
    const again = node.acceptTx(good);
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.reason).toBe('txn-already-in-mempool');

    // Spend an output that does not exist: change the prevout txid of a valid transaction.
    const bytes = new Uint8Array(good.bytes);
    bytes[7]! ^= 0xff;
    const missing = node.acceptTx(decodeTx(bytes));
    expect(missing.ok).toBe(false);
    if (!missing.ok) {
      expect(missing.result).toBe('missing-inputs');
      expect(missing.reason).toBe('bad-txns-inputs-missingorspent');
    }
  });

  it('rejects a bad signature with the Core 30 reason', () => {
    const { node, wallet } = t;
    const tx = wallet.createTx(wallet.address('p2wpkh'), 200_000n);
    const bytes = new Uint8Array(tx.bytes);
    // Flip a byte inside the first witness signature (after outputs, before locktime).
    const sigPos = bytes.length - 4 - 34 - 40;
    bytes[sigPos]! ^= 0x01;
    const r = node.acceptTx(decodeTx(bytes));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/^mempool-script-verify-flag-failed \(/);
  });

  it('replaces by fee (full RBF): R for the old one then A for the new one, consecutive mempool sequences', () => {
    const { node, wallet, signals } = t;
    const a = wallet.send(wallet.address('p2tr'), 1_000_000n, { feeRate: 2 });
    signals.length = 0;
    const b = wallet.bumpFee(a, { feeRate: 5 });
    expect(node.mempool.has(a)).toBe(false);
    expect(node.mempool.has(b)).toBe(true);
    expect(signals.map((s) => s.kind)).toEqual(['R', 'A']);
    const [r, add] = signals as unknown as [{ seq: bigint; reason?: string }, { seq: bigint }];
    expect(r.reason).toBe('replaced');
    expect(add.seq).toBe(r.seq + 1n);
    expect(node.mempool.sequence).toBe(add.seq + 1n);

    // A lower-feerate conflict is refused (rule 6), naming both feerates.
    const input = node.mempool.get(b)!.tx.inputs[0]!;
    const from = [`${Buffer.from(input.prevTxid).reverse().toString('hex')}:${input.vout}`];
    const lower = wallet.createTx(wallet.address('p2pkh'), 400_000n, { feeRate: 1, from });
    const rej = node.acceptTx(lower);
    expect(rej.ok).toBe(false);
    if (!rej.ok)
      expect(rejectString(rej)).toMatch(
        /^insufficient fee, rejecting replacement [0-9a-f]{64}; new feerate 0\.\d{8} BTC\/kvB <= old feerate 0\.\d{8} BTC\/kvB$/,
      );
  });

  it('refuses a replacement paying less in total (rule 3) and, without full RBF, a conflict with a non-signalling transaction', () => {
    const { node, wallet } = t;
    const coins = wallet
      .coins(false)
      .slice(0, 2)
      .map((c) => `${c.txid}:${c.vout}`);
    wallet.send(wallet.address('p2tr'), 6_000_000_000n, { feeRate: 5, from: coins, rbf: false });
    const smaller = wallet.createTx(wallet.address('p2wpkh'), 1_000_000n, { feeRate: 6, from: [coins[0]!] });
    const r = node.acceptTx(smaller);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(rejectString(r)).toMatch(
        /^insufficient fee, rejecting replacement [0-9a-f]{64}, less fees than conflicting txs; 0\.\d+ < 0\.\d+$/,
      );
    node.fullRbf = false;
    const r2 = node.acceptTx(wallet.createTx(wallet.address('p2wpkh'), 1_000_000n, { feeRate: 50, from: [coins[0]!] }));
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(r2.reason).toBe('txn-mempool-conflict');
  });

  it('evicts a mempool transaction when a block confirms a conflicting one (R before C)', () => {
    const { node, wallet, signals, mine } = t;
    const coin = wallet.coins(false)[0]!;
    const from = [`${coin.txid}:${coin.vout}`];
    const a = wallet.send(wallet.address('p2tr'), 1_000_000n, { from });
    const b = wallet.createTx(wallet.address('p2pkh'), 2_000_000n, { from });
    signals.length = 0;
    mine(1, { txs: [b], useMempool: false });
    expect(node.mempool.has(a)).toBe(false);
    expect(signals.map((s) => s.kind)).toEqual(['R', 'C', 'tip']);
    expect((signals[0] as { reason?: string }).reason).toBe('conflict');
  });
});

describe('devnode node: reorgs', () => {
  it('invalidateblock returns transactions to the mempool; reconsiderblock goes back', () => {
    const t = createTestNode();
    const { node, wallet, signals, mine } = t;
    mine(105);
    const txid = wallet.send(wallet.address('p2pkh'), 3_300_000n);
    const [b] = mine(1);
    expect(node.mempool.has(txid)).toBe(false);
    signals.length = 0;
    node.invalidateBlock(b!);
    expect(signals.map((s) => s.kind)).toEqual(['D', 'A']);
    expect(node.mempool.has(txid)).toBe(true);
    expect(node.chainTips().find((x) => x.hash === b!.hash)?.status).toBe('invalid');
    node.reconsiderBlock(b!);
    expect(node.chain.tip()).toBe(b);
    expect(node.mempool.has(txid)).toBe(false);
  });

  it('switches to a longer competing branch: D, re-added A, C per block, one new tip', () => {
    const t = createTestNode();
    const { node, wallet, signals, mine } = t;
    mine(105);
    const fork = node.chain.tip();
    const txid = wallet.send(wallet.address('p2sh-p2wpkh'), 1_234_567n);
    const [old] = mine(1);
    signals.length = 0;
    const side = mine(1, { parent: fork });
    expect(node.chain.tip()).toBe(old);
    expect(signals).toEqual([]);
    expect(node.chainTips().map((x) => x.status)).toEqual(['active', 'valid-headers']);
    mine(1, { parent: side[0]! });
    expect(signals.map((s) => s.kind)).toEqual(['D', 'A', 'C', 'C', 'tip']);
    expect(node.mempool.has(txid)).toBe(true);
    expect(node.chainTips().map((x) => x.status)).toEqual(['active', 'valid-fork']);
  });

  it('drops transactions that are no longer final after a disconnect (wallet locktime = height)', () => {
    const t = createTestNode();
    const { node, wallet, signals, mine } = t;
    mine(105);
    const first = wallet.send(wallet.address('p2sh-p2wpkh'), 1_100_000n);
    const blocks = mine(3);
    const late = wallet.send(wallet.address('p2sh-p2wpkh'), 1_200_000n);
    expect(decodeTx(node.mempool.get(late)!.tx.bytes).locktime).toBe(node.chain.height());
    signals.length = 0;
    node.invalidateBlock(blocks[0]!);
    expect(signals.map((s) => `${s.kind}${'txid' in s ? (s.txid === late ? ':late' : s.txid === first ? ':first' : '') : ''}`)).toEqual([
      'D',
      'R:late',
      'D',
      'D',
      'A:first',
    ]);
    expect(node.chain.height()).toBe(105);
    expect(node.mempool.has(first)).toBe(true);
    expect(node.mempool.has(late)).toBe(false);
  });

  it('numbers mempool events consecutively, counting removals by blocks', () => {
    const t = createTestNode();
    const { node, wallet, signals, mine } = t;
    mine(102);
    const start = node.mempool.sequence;
    const ids = [wallet.send(wallet.address('p2pkh'), 500_000n), wallet.send(wallet.address('p2wpkh'), 600_000n)];
    mine(1);
    const next = wallet.send(wallet.address('p2tr'), 700_000n);
    const adds = signals.filter((s) => s.kind === 'A') as { txid: string; seq: bigint }[];
    expect(adds.map((a) => a.txid)).toEqual([...ids, next]);
    expect(adds.map((a) => a.seq)).toEqual([start, start + 1n, start + 4n]);
    expect(txidOf(node.mempool.get(next)!.tx)).toBe(next);
  });
});
