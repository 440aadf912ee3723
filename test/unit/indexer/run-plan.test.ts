/**
 * The run loop's planning (indexer/run-plan.ts), driven by the scenarios of
 * fixtures/run-plan.json: each step feeds one pure step (the tips a turn read, the action for a
 * sync step, a block applied, a ZMQ announcement, the missed-announcement sweep, the reorged
 * settling, a turn that succeeded or failed) and says what it must decide. Every step also
 * leaves the state it was given as it was (the steps are pure).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  announce,
  blockApplied,
  failed,
  initialRunState,
  nextAction,
  observed,
  settleReorged,
  statusOf,
  succeeded,
  sweepMissed,
  type IndexerStatus,
  type RunAction,
  type RunPolicy,
  type RunState,
} from '../../../indexer/run-plan.js';
import type { SyncStep } from '../../../indexer/follow.js';

type Step = { at: number } & (
  | { observe: { tip: [number, string | null]; node: [number, string] } }
  | { plan: { step: 'idle' | ['apply', number, string] | ['undo', number]; tip: number; node: number; bulk?: boolean }; expect: RunAction }
  | { applied: [number, string, number]; node: number; expect: { line: { blocksPerSec: number; txPerSec: number; etaSec: number } | null } }
  | { announce: string }
  | { sweep: number }
  | { settle: { pending: boolean }; expect: boolean }
  | { ok: true }
  | { fail: { transient: boolean; fatal: boolean }; expect: { kind: 'stop' } | { kind: 'retry'; delayMs: number } }
  | { status: IndexerStatus }
);
type Fixtures = { policy: RunPolicy; scenarios: { description: string; steps: Step[] }[] };

const fixtures = JSON.parse(readFileSync(new URL('./fixtures/run-plan.json', import.meta.url), 'utf8')) as Fixtures;

function syncStep(p: Extract<Step, { plan: unknown }>['plan']): SyncStep {
  const node = { height: p.node, bestHash: 'best', hashes: [] };
  if (p.step === 'idle') return { kind: 'idle', node };
  if (p.step[0] === 'apply') return { kind: 'apply', height: p.step[1], hash: p.step[2], node };
  return { kind: 'undo', forkHeight: p.step[1], node };
}

/** Runs one step; returns the next state. */
function run(state: RunState, step: Step, policy: RunPolicy): RunState {
  const now = step.at;
  if ('observe' in step) {
    const [height, hash] = step.observe.tip;
    return observed(state, { height, hash }, { height: step.observe.node[0], hash: step.observe.node[1] });
  }
  if ('plan' in step) {
    expect(nextAction(syncStep(step.plan), step.plan.tip, step.plan.bulk ?? false, policy)).toEqual(step.expect);
    return state;
  }
  if ('applied' in step) {
    const [height, hash, txs] = step.applied;
    const done = blockApplied(state, { height, hash, txs }, step.node, now, policy);
    expect({ line: done.line }).toEqual(step.expect);
    return done.state;
  }
  if ('announce' in step) return announce(state, step.announce);
  if ('sweep' in step) {
    const swept = sweepMissed(state, now);
    expect(swept.missed).toBe(step.sweep);
    return swept.state;
  }
  if ('settle' in step) {
    const due = settleReorged(state, step.settle.pending, now, policy);
    expect(due.settle).toBe(step.expect);
    return due.state;
  }
  if ('ok' in step) return succeeded(state);
  if ('fail' in step) {
    const f = failed(state, { message: `failure at ${now}`, ...step.fail });
    expect(f.verdict).toEqual(step.expect);
    return f.state;
  }
  expect(statusOf(state)).toEqual(step.status);
  return state;
}

describe('run loop planning (fixtures/run-plan.json)', () => {
  it('has scenarios', () => {
    expect(fixtures.scenarios.length).toBeGreaterThan(5);
  });
  for (const scenario of fixtures.scenarios) {
    it(scenario.description, () => {
      let state = initialRunState(scenario.steps[0]!.at);
      for (const [i, step] of scenario.steps.entries()) {
        const before = structuredClone(state);
        const next = run(state, step, fixtures.policy);
        expect(state, `step ${i} changed the state it was given`).toEqual(before);
        state = next;
      }
    });
  }
});
