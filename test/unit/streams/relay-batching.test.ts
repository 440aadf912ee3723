/**
 * The relay's batching, case by case from test/fixtures/relay-batching.json (as bitcoinjs-lib's
 * test/fixtures): each case's deliveries go through `assignBatchJobs`, then the delivery log's
 * answer (new pending rows with the job just given them, rows an earlier run left as that run
 * left them), then `relayJobs`; the jobs must be the case's, in its order.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assignBatchJobs, relayJobs, type LoggedDelivery } from '../../../streams/relay-jobs.js';
import type { Transport } from '../../../streams/queues.js';
import type { NewDelivery } from '../../../src/db/queries/tenancy-deliveries.js';

type FixtureDelivery = { id: string; hook: string; key: number; transport?: Transport; status?: 'pending' | 'failed'; failing?: boolean };
type Earlier = { status: 'delivered' } | { redeliveries: number; jobId: string | null };
type FixtureBatch = { job: string; nonce?: string; transport: Transport; deliveries: string[]; backlog?: true };
type Case = {
  description: string;
  size: number;
  to: number;
  deliveries: FixtureDelivery[];
  earlier?: Record<string, Earlier>;
  expected: { own: [string, number][]; batches: FixtureBatch[] };
};

const fixtures = JSON.parse(readFileSync(new URL('../../fixtures/relay-batching.json', import.meta.url), 'utf8')) as { cases: Case[] };

/** What upsertDeliveries answers: the rows still pending, each with its recorded batch job. */
function logAnswer(rows: readonly NewDelivery[], earlier: Record<string, Earlier>): LoggedDelivery[] {
  const out: LoggedDelivery[] = [];
  for (const r of rows) {
    const before = earlier[r.id];
    if (before) {
      if ('jobId' in before) out.push({ id: r.id, ...before });
    } else if (r.status === 'pending') out.push({ id: r.id, redeliveries: 0, jobId: r.jobId ?? null });
  }
  return out;
}

describe('relay batching (test/fixtures/relay-batching.json)', () => {
  it.each(fixtures.cases.map((c) => [c.description, c] as const))('%s', (_, c) => {
    const rows: NewDelivery[] = c.deliveries.map((d, i) => ({
      id: d.id,
      hookId: d.hook,
      keyId: BigInt(d.key),
      subscriptionId: `sub_${d.hook}`,
      eventId: BigInt(i + 1),
      eventType: 'tx.unconfirmed',
      payload: `{"id":${i + 1}}`,
      status: d.status ?? 'pending',
    }));
    assignBatchJobs(rows, c.size, BigInt(c.to));
    const transportOf = new Map(c.deliveries.map((d) => [d.id, d.transport ?? 'http']));
    const failing = new Set(c.deliveries.filter((d) => d.failing).map((d) => d.hook));
    const { own, batches } = relayJobs(rows, logAnswer(rows, c.earlier ?? {}), transportOf, failing);

    expect(own.map((j) => [j.delivery, j.redeliveries])).toEqual(c.expected.own);
    for (const j of own) {
      const d = c.deliveries.find((x) => x.id === j.delivery)!;
      expect(j).toEqual({
        transport: d.transport ?? 'http',
        delivery: d.id,
        hook: d.hook,
        payload: rows.find((r) => r.id === d.id)!.payload,
        type: 'tx.unconfirmed',
        redeliveries: j.redeliveries,
      });
    }
    // A batch job's id is batch-<hook>-<to>-<n>-<nonce>: the recorded one's nonce, else a new random one.
    const asFixture = batches.map((b) => {
      const m = /^(batch-.+-\d+-\d+)-([0-9a-f]{8})$/.exec(b.jobId);
      expect(m, b.jobId).not.toBeNull();
      return { b, job: m![1]!, nonce: m![2]! };
    });
    expect(
      asFixture.map(({ b, job }) => ({
        job,
        transport: b.transport,
        deliveries: b.deliveries.map((d) => d.delivery),
        ...(b.backlog ? { backlog: true } : {}),
      })),
    ).toEqual(c.expected.batches.map(({ nonce: _n, ...rest }) => rest));
    const recorded = new Set(Object.values(c.earlier ?? {}).flatMap((e) => ('jobId' in e && e.jobId ? [e.jobId] : [])));
    for (const [i, { b, nonce }] of asFixture.entries()) {
      const want = c.expected.batches[i]!.nonce;
      if (want) expect(nonce).toBe(want);
      else expect(recorded.has(b.jobId), `${b.jobId} is new`).toBe(false);
      expect(b.hook).toBe(c.deliveries.find((d) => d.id === b.deliveries[0]!.delivery)!.hook);
      // (by id: the worker reads each body with its log row)
      for (const d of b.deliveries) expect(d).toEqual({ delivery: d.delivery, type: 'tx.unconfirmed' });
    }
  });
});
