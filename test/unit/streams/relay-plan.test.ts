/**
 * The relay loop's planning (streams/relay-plan.ts), driven by the scenarios of
 * test/fixtures/relay-plan.json: each step feeds one pure step (a lead begun at a cursor, a batch
 * relayed, Redis's run id and the one recorded, the housekeeping clock, a lead that ended or
 * failed) and says what it must decide. Every step also leaves the state it was given as it was.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as plan from '../../../streams/relay-plan.js';

type Step =
  | { lead: string }
  | { batch: [number, string]; wait: boolean }
  /** Redis's run id (null: it did not say) and, when it calls for a look, the one recorded. */
  | { runId: string | null; check: false }
  | { runId: string; check: true; recorded: string | null; expect: { reconcile: boolean; changed: boolean } }
  | { housekeeping: number; due: boolean }
  | { ended: boolean; waitMs: number }
  | { failed: true; waitMs: number }
  | { state: { active: boolean; cursor: string | null; relayed: number; failures: number } };
type Fixtures = { about: string[]; policy: plan.RelayPolicy; scenarios: { description: string; steps: Step[] }[] };

const fixtures = JSON.parse(readFileSync(new URL('../../fixtures/relay-plan.json', import.meta.url), 'utf8')) as Fixtures;

/** Runs one step; returns the next state. */
function run(state: plan.RelayState, step: Step, policy: plan.RelayPolicy): plan.RelayState {
  if ('lead' in step) return plan.leading(state, BigInt(step.lead));
  if ('batch' in step) {
    const done = plan.relayedBatch(state, step.batch[0], BigInt(step.batch[1]), policy);
    expect(done.wait).toBe(step.wait);
    return done.state;
  }
  if ('runId' in step) {
    const runId = step.runId ?? undefined;
    expect(plan.runIdToCheck(state, runId)).toBe(step.check);
    if (!step.check) return state;
    const verdict = plan.runIdVerdict(state, step.runId, step.recorded);
    expect({ reconcile: verdict.reconcile, changed: verdict.changed }).toEqual(step.expect);
    return verdict.state;
  }
  if ('housekeeping' in step) {
    const due = plan.housekeepingDue(state, step.housekeeping, policy);
    expect(due.due).toBe(step.due);
    return due.state;
  }
  if ('ended' in step) {
    const ended = plan.leadEnded(state, step.ended, policy);
    expect(ended.waitMs).toBe(step.waitMs);
    return ended.state;
  }
  if ('failed' in step) {
    const failed = plan.leadFailed(state);
    expect(failed.waitMs).toBe(step.waitMs);
    return failed.state;
  }
  expect({ active: state.active, cursor: state.cursor?.toString() ?? null, relayed: state.relayed, failures: state.failures }).toEqual(
    step.state,
  );
  return state;
}

describe('relay loop planning (test/fixtures/relay-plan.json)', () => {
  it('has scenarios', () => {
    expect(fixtures.scenarios.length).toBeGreaterThan(4);
  });
  for (const scenario of fixtures.scenarios) {
    it(scenario.description, () => {
      let state = plan.initialRelayState;
      for (const [i, step] of scenario.steps.entries()) {
        const before = structuredClone(state);
        const next = run(state, step, fixtures.policy);
        expect(state, `step ${i} changed the state it was given`).toEqual(before);
        state = next;
      }
    });
  }
});
