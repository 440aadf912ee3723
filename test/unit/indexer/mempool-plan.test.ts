/**
 * The mempool sync's planning (indexer/mempool-plan.ts), driven by the scenarios of
 * fixtures/mempool-plan.json: each step feeds one pure step (a hint, a reseed, the hints taken,
 * the node's answer, due removals, an idle check) and says what it must decide. Every step also
 * leaves the state it was given as it was (the steps are pure).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  afterResync,
  initialSyncState,
  judgeCheck,
  nextWork,
  planResync,
  planVerified,
  receiveHint,
  startCheck,
  takeDue,
  takeHints,
  type SyncPolicy,
  type SyncState,
  type SyncWork,
} from '../../../indexer/mempool-plan.js';
import type { MempoolSummary } from '../../../indexer/chain-source.js';
import type { SequenceHint } from '../../../indexer/notify.js';

type Summary = [number, string] | null;
type Step = { at: number } & (
  | { next: SyncWork }
  | { hint: [SequenceHint['label'], string, string | null] }
  | { resync: { ours: string[]; theirs: string[]; sequence: string; unresolved: number }; expect: { missing: string[]; gone: string[] } }
  | { take: { intent: Record<string, 'A' | 'R'>; seq: string } }
  | { verify: { present: string[] }; expect: { add: string[]; remove: string[]; ignored: number } }
  | { due: string[] }
  | { check: { compare: boolean; node?: Summary; ours?: Summary }; expect?: { drift: boolean } }
);
type Fixtures = { policy: SyncPolicy; scenarios: { description: string; steps: Step[] }[] };

const fixtures = JSON.parse(readFileSync(new URL('./fixtures/mempool-plan.json', import.meta.url), 'utf8')) as Fixtures;
const summary = (s: Summary | undefined): MempoolSummary | null => (s ? { size: s[0], fee: BigInt(s[1]) } : null);

/** Runs one step; returns the next state and the intent the step took (for a following verify). */
function run(
  state: SyncState,
  step: Step,
  intent: Map<string, 'A' | 'R'>,
  policy: SyncPolicy,
): { state: SyncState; intent: Map<string, 'A' | 'R'> } {
  const now = step.at;
  if ('next' in step) {
    expect(nextWork(state, now)).toBe(step.next);
    return { state, intent };
  }
  if ('hint' in step) {
    const [label, hash, seq] = step.hint;
    return { state: receiveHint(state, { label, hash, mempoolSeq: seq === null ? null : BigInt(seq) }, policy), intent };
  }
  if ('resync' in step) {
    const plan = planResync(new Set(step.resync.ours), step.resync.theirs);
    expect({ missing: plan.missing, gone: [...plan.gone] }).toEqual(step.expect);
    return { state: afterResync(state, BigInt(step.resync.sequence), step.resync.unresolved), intent };
  }
  if ('take' in step) {
    const taken = takeHints(state);
    expect(Object.fromEntries(taken.intent)).toEqual(step.take.intent);
    expect(taken.state.seq).toBe(BigInt(step.take.seq));
    return { state: taken.state, intent: taken.intent };
  }
  if ('verify' in step) {
    const plan = planVerified(state, intent, new Set(step.verify.present), now, policy);
    expect({ add: plan.add, remove: [...plan.remove], ignored: plan.ignored }).toEqual(step.expect);
    return { state: plan.state, intent };
  }
  if ('due' in step) {
    const due = takeDue(state, now);
    expect([...due.remove]).toEqual(step.due);
    return { state: due.state, intent };
  }
  const started = startCheck(state, now, policy);
  expect(started.compare).toBe(step.check.compare);
  if (!started.compare) return { state: started.state, intent };
  const judged = judgeCheck(started.state, summary(step.check.node), summary(step.check.ours));
  expect({ drift: judged.drift }).toEqual(step.expect);
  return { state: judged.state, intent };
}

describe('mempool sync planning (fixtures/mempool-plan.json)', () => {
  it('has scenarios', () => {
    expect(fixtures.scenarios.length).toBeGreaterThan(5);
  });
  for (const scenario of fixtures.scenarios) {
    it(scenario.description, () => {
      let state = initialSyncState(fixtures.policy, scenario.steps[0]!.at);
      let intent = new Map<string, 'A' | 'R'>();
      for (const [i, step] of scenario.steps.entries()) {
        const before = structuredClone(state);
        const r = run(state, step, intent, fixtures.policy);
        expect(state, `step ${i} changed the state it was given`).toEqual(before);
        state = r.state;
        intent = r.intent;
      }
    });
  }
});
