import { describe, expect, it } from 'vitest';
import { assessHealth, formatStatus, type Thresholds } from '../../../cli/status.js';
import type { DeploymentState } from '../../../src/ops/state.js';

const T: Thresholds = { maxLag: 6, maxRelayDelaySeconds: 60, maxHeartbeatAgeSeconds: 60, failOnDead: false };
const HASH = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';

function state(
  over: { heartbeat?: Partial<NonNullable<DeploymentState['heartbeat']>> | null } & Partial<Omit<DeploymentState, 'heartbeat'>> = {},
): DeploymentState {
  const { heartbeat, ...rest } = over;
  return {
    index: { height: 120, hash: HASH, updatedAt: new Date('2026-01-02T03:04:00Z') },
    heartbeat:
      heartbeat === null
        ? null
        : {
            pid: 42,
            host: 'idx',
            mode: 'following',
            indexHeight: 120,
            nodeHeight: 120,
            nodeHash: HASH,
            lag: 0,
            lastError: null,
            startedAt: '2026-01-02T00:00:00Z',
            ageSeconds: 2,
            ...heartbeat,
          },
    outbox: { cursor: 900n, newest: 900n, pending: 0, oldestPendingSeconds: 0 },
    deliveries: { pending: 0, failed24h: 0, dead24h: 0 },
    stamps: { queued: 0, unconfirmedTxs: 0, stuck: null },
    ...rest,
  };
}

describe('blockwire status verdict', () => {
  it('is healthy when the indexer follows the node and the relay keeps up', () => {
    const v = assessHealth(state(), T);
    expect(v).toEqual({ healthy: true, problems: [], warnings: [] });
    const text = formatStatus(state(), v, new Date('2026-01-02T03:04:05Z'));
    expect(text).toContain(`index tip     120  ${HASH}  (updated 5 s ago)`);
    expect(text).toContain('node tip      120');
    expect(text).toContain('lag           0 blocks');
    expect(text).toContain('outbox        0 events pending  (relay cursor 900, newest event 900)');
    expect(text).toContain('status        HEALTHY');
  });

  it('never shows the node below the index when the heartbeat is older than the index tip', () => {
    const s = state({ heartbeat: { nodeHeight: 119 } });
    const text = formatStatus(s, assessHealth(s, T), new Date('2026-01-02T03:04:05Z'));
    expect(text).toContain("node tip      120 or more  (the heartbeat's 119 is older than the index tip; indexer following");
    expect(text).toContain('lag           0 blocks');
  });

  it('names each reason it is unhealthy', () => {
    const lagging = assessHealth(state({ heartbeat: { nodeHeight: 130 } }), T);
    expect(lagging.problems).toEqual(['the index is 10 blocks behind the node (more than 6)']);
    expect(assessHealth(state({ heartbeat: null }), T).problems[0]).toMatch(/^no indexer has ever reported/);
    expect(assessHealth(state({ heartbeat: { ageSeconds: 300 } }), T).problems[0]).toBe(
      "the indexer's last heartbeat is 300 s old (pid 42 on idx): is it running?",
    );
    expect(assessHealth(state({ heartbeat: { mode: 'stopped', ageSeconds: 10 } }), T).problems[0]).toBe(
      'the indexer stopped (pid 42 on idx, 10 s ago)',
    );
    expect(assessHealth(state({ heartbeat: { nodeHeight: null, nodeHash: null, lastError: 'connect ECONNREFUSED' } }), T).problems).toEqual(
      ['the indexer cannot reach the node: connect ECONNREFUSED'],
    );
    const stuck = assessHealth(state({ outbox: { cursor: 900n, newest: 950n, pending: 50, oldestPendingSeconds: 600 } }), T);
    expect(stuck.problems).toEqual(['50 events wait in the outbox, the oldest for 600 s: is a streams process (the relay) running?']);
    expect(
      assessHealth(state({ index: { height: -1, hash: null, updatedAt: new Date() }, heartbeat: { nodeHeight: 0 } }), T).problems,
    ).toContain('nothing is indexed yet');
    const refused = state({
      stamps: { queued: 2, unconfirmedTxs: 1, stuck: { txid: HASH, refusals: 5, seconds: 42.4, error: 'insufficient fee' } },
    });
    expect(assessHealth(refused, T).problems).toEqual([
      `the stamper cannot make progress: the node refused stamp transaction ${HASH} 5 times in a row over 42 s (insufficient fee)`,
    ]);
    expect(formatStatus(refused, assessHealth(refused, T))).toContain(
      `stamps        2 queued, 1 transactions unconfirmed, 1 stuck (${HASH})`,
    );
  });

  it('reports dead deliveries as a warning, or as a problem with --fail-on-dead', () => {
    const s = state({ deliveries: { pending: 3, failed24h: 1, dead24h: 2 } });
    const v = assessHealth(s, T);
    expect(v.healthy).toBe(true);
    expect(v.warnings).toHaveLength(2);
    expect(assessHealth(s, { ...T, failOnDead: true }).healthy).toBe(false);
    expect(formatStatus(s, v)).toContain('deliveries    3 pending, 1 failed and 2 dead in the last 24 h');
  });
});
