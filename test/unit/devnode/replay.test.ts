import { beforeAll, expect, it } from 'vitest';
import { scriptToAddress } from '../../../devnode/address.js';
import { applyReplayEvent, loadReplay, type ReplayPlan } from '../../../devnode/replay.js';
import { describeFixtures, fixturePath, readFixtureJson } from '../../support/fixtures.js';
import { createTestNode } from './harness.js';

type Expected = {
  best_height: number;
  best_block_hash: string;
  addresses: Record<string, { balance: number; unspent: { transaction_hash: string; index: number }[] }>;
};

describeFixtures('devnode replay of regtest-chain-a (7 reorgs, 13 stale blocks)', () => {
  let plan: ReplayPlan;
  let expected: Expected;
  beforeAll(async () => {
    plan = loadReplay(fixturePath('regtest-chain-a'));
    expected = await readFixtureJson<Expected>('regtest-chain-a', 'expected.json');
  });

  it('reaches exactly the recorded chain and UTXO set, the mempool empty, with the reorgs replayed in order', () => {
    const t = createTestNode();
    const { node, signals } = t;
    node.verifyScripts = false;
    for (const ev of plan.events) applyReplayEvent(node, plan, ev, () => undefined);
    expect(node.chain.height()).toBe(expected.best_height);
    expect(node.chain.tip().hash).toBe(expected.best_block_hash);
    expect(node.mempool.entries.size).toBe(0);

    // C/D signals follow the recorded sequence exactly.
    const blockSignals = signals.filter((s) => s.kind === 'C' || s.kind === 'D').map((s) => `${s.kind}${(s as { hash: string }).hash}`);
    expect(blockSignals).toEqual(plan.events.map((e) => `${e.label}${e.hash}`));
    expect(plan.events.filter((e) => e.label === 'D').length).toBe(17);

    // Balances from the UTXO set equal Core's scantxoutset for every address.
    const balances = new Map<string, bigint>();
    for (const coin of node.chain.utxo.values()) {
      const a = scriptToAddress(coin.script);
      if (a) balances.set(a, (balances.get(a) ?? 0n) + coin.value);
    }
    let checked = 0;
    for (const [address, want] of Object.entries(expected.addresses)) {
      expect(balances.get(address) ?? 0n, address).toBe(BigInt(want.balance));
      checked++;
    }
    expect(checked).toBe(5301);
    const stale = node.chainTips().filter((x) => x.status !== 'active');
    expect(stale.length).toBeGreaterThan(0);
    expect(stale.every((x) => x.status === 'valid-fork')).toBe(true);
  });
});
