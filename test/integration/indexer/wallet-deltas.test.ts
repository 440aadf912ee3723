/**
 * A block's balance deltas go to the wallets holding its addresses (indexer/wallet-balances.ts
 * `addWalletDeltas`). An index without wallet addresses must not pay for that: the statement's
 * one-time filter skips the per-key lookups in `wallet_addresses_key` (a live 4,000-transaction
 * block has ~5,000 address keys). Counted by EXPLAIN ANALYZE (how many times each plan node ran).
 * That deltas still reach a wallet that holds an address is covered by the wallet suites
 * (test/integration/wallets/).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { preferIndexLookups } from '../../../indexer/planner-hints.js';
import { walletDeltaStatement } from '../../../indexer/wallet-balances.js';
import { int8Array, uuidArray } from '../../../src/db/pg-array.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';

let t: TestDatabase;

beforeAll(async () => {
  t = await createMigratedDatabase('wdeltas');
}, 60_000);

afterAll(async () => {
  await t?.drop();
});

const uuidOf = (i: number) => {
  const h = createHash('md5').update(String(i)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

interface PlanNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

it('reads wallet_addresses once, not once per address key, when no wallet holds any address', async () => {
  const deltas = Array.from({ length: 2_000 }, (_, i) => ({ key: uuidOf(i), sats: BigInt(i + 1) }));
  const plan = await t.db.transaction().execute(async (trx) => {
    // As in a block's transaction (indexer/writer/apply.ts).
    await preferIndexLookups(trx);
    const r = await sql<{
      'QUERY PLAN': [{ Plan: PlanNode }];
    }>`EXPLAIN (ANALYZE, FORMAT JSON) ${walletDeltaStatement(
      'confirmed',
      uuidArray(deltas.map((d) => d.key)),
      int8Array(deltas.map((d) => d.sats)),
    )}`.execute(trx);
    return r.rows[0]!['QUERY PLAN'][0].Plan;
  });
  const reads = nodes(plan).filter((n) => n['Relation Name'] === 'wallet_addresses' || n['Index Name'] === 'wallet_addresses_key');
  expect(reads.length).toBeGreaterThan(0);
  // The filter's own EXISTS runs once; the per-key lookups never do.
  expect(reads.reduce((s, n) => s + n['Actual Loops'], 0)).toBe(1);
});
