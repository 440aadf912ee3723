/**
 * How the relay groups deliveries into batch jobs (streams/relay-jobs.ts `assignBatchJobs`) and the
 * shape of batch job ids (streams/queues.ts): per hook, in event order, `size` to a job, a lone
 * delivery in a job of its own, a delivery to a disabled hook in none.
 */
import { describe, expect, it } from 'vitest';
import { assignBatchJobs } from '../../../streams/relay-jobs.js';
import { batchJobId } from '../../../streams/queues.js';
import { seriesOf } from '../../../streams/delivery-worker.js';
import type { NewDelivery } from '../../../src/db/queries/tenancy-deliveries.js';

function row(hookId: string, seq: number, status: 'pending' | 'failed' = 'pending'): NewDelivery {
  return {
    id: `sub_${hookId}-${seq}`,
    hookId,
    keyId: 1n,
    subscriptionId: `sub_${hookId}`,
    eventId: BigInt(seq),
    eventType: 'tx.unconfirmed',
    payload: '{}',
    status,
  };
}

describe('batch jobs', () => {
  it("groups each hook's pending deliveries in order, size to a job; a lone one keeps its own job", () => {
    const rows = [
      ...Array.from({ length: 7 }, (_, i) => row('hook_a', 10 + i)),
      row('hook_b', 11),
      row('hook_c', 12, 'failed'),
      row('hook_c', 13, 'failed'),
    ];
    // (interleave the hooks as a relay batch does)
    rows.splice(3, 0, row('hook_d', 5), row('hook_d', 6));
    assignBatchJobs(rows, 3, 99n);
    const jobOf = (h: string) => rows.filter((r) => r.hookId === h).map((r) => r.jobId);
    const a = jobOf('hook_a');
    expect(a[0]).toBe(a[1]);
    expect(a[1]).toBe(a[2]);
    expect(a[3]).toBe(a[5]);
    expect(a[3]).not.toBe(a[0]);
    // 7 = 3 + 3 + 1: the last one alone, in a job of its own.
    expect(a[6]).toBeUndefined();
    expect(a[0]).toMatch(/^batch-hook_a-99-0-[0-9a-f]{8}$/);
    expect(a[3]).toMatch(/^batch-hook_a-99-1-[0-9a-f]{8}$/);
    expect(jobOf('hook_b')).toEqual([undefined]);
    expect(jobOf('hook_c')).toEqual([undefined, undefined]);
    const d = jobOf('hook_d');
    expect(d[0]).toMatch(/^batch-hook_d-99-0-/);
    expect(d[1]).toBe(d[0]);
  });

  it('with size 1, every delivery keeps a job of its own', () => {
    const rows = Array.from({ length: 4 }, (_, i) => row('hook_a', i));
    assignBatchJobs(rows, 1, 5n);
    expect(rows.every((r) => r.jobId === undefined)).toBe(true);
  });

  it('batch job ids are new for each run over the same rows and never read as a redelivery series', () => {
    const a = batchJobId('hook_x', 7n, 0);
    const b = batchJobId('hook_x', 7n, 0);
    expect(a).not.toBe(b);
    expect(seriesOf(a)).toBe(0);
    expect(seriesOf(batchJobId('hook_x', 7n, 3, 'ab12cd34'))).toBe(0);
    expect(() => batchJobId('hook:x', 7n, 0)).toThrow(TypeError);
  });
});
