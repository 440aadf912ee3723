/**
 * The mempool sync's decisions (indexer/mempool.ts), apart from its I/O: an explicit state and
 * pure steps over it, each returning the next state (as indexer/follow.ts `nextStep` plans a
 * block and leaves the applying to its caller). What to do next (reseed, apply hints, drop
 * removals whose grace is over, compare with the node while idle); which hints still count
 * (those from the last reseed's sequence on); what a reseed adds and removes; what the node's
 * answer to a batch of hints means (add what it holds, defer what it does not for the grace
 * period, a removal it contradicts counted as ignored); when two idle comparisons that agree on
 * a difference mean messages were lost. Txids are display hex; times are ms (Date.now()).
 * @module
 */
import type { MempoolSummary } from './chain-source.js';
import type { SequenceHint } from './notify.js';

export type SyncPolicy = {
  /** Hints queued at most; beyond, they are dropped and a reseed is scheduled. */
  maxHints: number;
  /** How long a transaction the node removed stays indexed while its replacement may still be announced. */
  graceMs: number;
  /** While idle, how often to compare the node's mempool with the index's; null: never. */
  checkMs: number | null;
};

export type SyncState = {
  readonly needResync: boolean;
  /** The sequence the next hint must reach to be newer than what the index holds (null before a reseed). */
  readonly seq: bigint | null;
  readonly hints: readonly SequenceHint[];
  /** Verified removals waiting for their grace period: txid → when they are due. */
  readonly deferred: ReadonlyMap<string, number>;
  /** Hints received since the last idle check (a moving mempool: no comparison then). */
  readonly hintsSinceCheck: number;
  readonly nextCheckAt: number;
  /** The difference the last idle check saw (both sides), to be confirmed by the next. */
  readonly suspect: { node: MempoolSummary; ours: MempoolSummary } | null;
};

/** What the next step does, in this order of precedence. */
export type SyncWork = 'resync' | 'hints' | 'remove' | 'check' | 'idle';

/** The state of a sync that has just started: a reseed first. */
export function initialSyncState(policy: SyncPolicy, now: number): SyncState {
  return {
    needResync: true,
    seq: null,
    hints: [],
    deferred: new Map(),
    hintsSinceCheck: 0,
    nextCheckAt: policy.checkMs === null ? Infinity : now + policy.checkMs,
    suspect: null,
  };
}

/** Removals whose grace period is over at `now`. */
function dueRemovals(s: SyncState, now: number): Set<string> {
  const out = new Set<string>();
  for (const [txid, at] of s.deferred) if (at <= now) out.add(txid);
  return out;
}

export function nextWork(s: SyncState, now: number): SyncWork {
  if (s.needResync) return 'resync';
  if (s.hints.length > 0) return 'hints';
  if (dueRemovals(s, now).size > 0) return 'remove';
  return now >= s.nextCheckAt ? 'check' : 'idle';
}

/** A `sequence` message: only A and R count; too many queued drop them all for a reseed. */
export function receiveHint(s: SyncState, h: SequenceHint, policy: SyncPolicy): SyncState {
  if (h.label !== 'A' && h.label !== 'R') return s;
  const hintsSinceCheck = s.hintsSinceCheck + 1;
  if (s.hints.length >= policy.maxHints) return { ...s, hintsSinceCheck, hints: [], needResync: true };
  return { ...s, hintsSinceCheck, hints: [...s.hints, h] };
}

export function requestResync(s: SyncState): SyncState {
  return s.needResync ? s : { ...s, needResync: true };
}

/** What a reseed changes: the node's transactions the index lacks, and the index's the node no longer has. */
export function planResync(ours: ReadonlySet<string>, theirs: readonly string[]): { missing: string[]; gone: Set<string> } {
  const node = new Set(theirs);
  return { missing: theirs.filter((t) => !ours.has(t)), gone: new Set([...ours].filter((t) => !node.has(t))) };
}

/**
 * After a reseed committed at the snapshot's `sequence` (the next one the node will assign):
 * older hints are spent, every deferred removal settled by the snapshot, and transactions whose
 * inputs were unknown (the node a block ahead of the index) call for another reseed.
 */
export function afterResync(s: SyncState, sequence: bigint, unresolved: number): SyncState {
  return {
    ...s,
    seq: sequence,
    hints: s.hints.filter((h) => h.mempoolSeq !== null && h.mempoolSeq >= sequence),
    deferred: new Map(),
    needResync: unresolved > 0,
  };
}

/** Takes the queued hints: the last intent per txid among those not older than the sequence, and the sequence after them. */
export function takeHints(s: SyncState): { state: SyncState; intent: Map<string, 'A' | 'R'> } {
  let seq = s.seq;
  const intent = new Map<string, 'A' | 'R'>();
  for (const h of s.hints) {
    if (seq !== null && h.mempoolSeq !== null && h.mempoolSeq < seq) continue;
    intent.set(h.hash, h.label as 'A' | 'R');
    if (h.mempoolSeq !== null) seq = h.mempoolSeq + 1n;
  }
  return { state: { ...s, hints: [], seq }, intent };
}

/** Takes the removals whose grace period is over. */
export function takeDue(s: SyncState, now: number): { state: SyncState; remove: Set<string> } {
  const remove = dueRemovals(s, now);
  if (remove.size === 0) return { state: s, remove };
  const deferred = new Map(s.deferred);
  for (const txid of remove) deferred.delete(txid);
  return { state: { ...s, deferred }, remove };
}

/**
 * The node's answer to the hints' txids (`present`: those in its mempool now): a present one is
 * added (an R for it was a lie: `ignored`), an absent one leaves after the grace period unless an
 * addition replaces it first; `remove` is every deferred removal now due.
 */
export function planVerified(
  s: SyncState,
  intent: ReadonlyMap<string, 'A' | 'R'>,
  present: ReadonlySet<string>,
  now: number,
  policy: SyncPolicy,
): { state: SyncState; add: string[]; remove: Set<string>; ignored: number } {
  const deferred = new Map(s.deferred);
  const add: string[] = [];
  let ignored = 0;
  for (const [txid, label] of intent) {
    if (present.has(txid)) {
      if (label === 'R') ignored++;
      add.push(txid);
      deferred.delete(txid);
    } else if (!deferred.has(txid)) {
      deferred.set(txid, now + policy.graceMs);
    }
  }
  const { state, remove } = takeDue({ ...s, deferred }, now);
  return { state, add, remove, ignored };
}

/** After hints were applied: transactions whose inputs are unknown call for a reseed. */
export function afterHints(s: SyncState, unresolved: number): SyncState {
  return unresolved > 0 ? { ...s, needResync: true } : s;
}

/**
 * Starts the idle check: the next one is due `checkMs` on; `compare` is false while the mempool
 * is moving (hints since the last check, removals in their grace period: a known difference).
 */
export function startCheck(s: SyncState, now: number, policy: SyncPolicy): { state: SyncState; compare: boolean } {
  const moving = s.hintsSinceCheck > 0 || s.deferred.size > 0;
  const state = { ...s, nextCheckAt: now + (policy.checkMs ?? Infinity), hintsSinceCheck: 0 };
  return moving ? { state: { ...state, suspect: null }, compare: false } : { state, compare: true };
}

const sameSummary = (a: MempoolSummary, b: MempoolSummary) => a.size === b.size && a.fee === b.fee;

/**
 * The comparison's verdict: the same difference twice in a row, neither side having moved, is
 * `drift` (hints were lost: reseed); a first difference is remembered; no difference, a side
 * without a fingerprint, or hints that came meanwhile (they explain it) forget it.
 */
export function judgeCheck(s: SyncState, node: MempoolSummary | null, ours: MempoolSummary | null): { state: SyncState; drift: boolean } {
  if (node === null || ours === null || sameSummary(node, ours) || s.hints.length > 0 || s.needResync)
    return { state: { ...s, suspect: null }, drift: false };
  if (s.suspect && sameSummary(s.suspect.node, node) && sameSummary(s.suspect.ours, ours))
    return { state: { ...s, suspect: null, needResync: true }, drift: true };
  return { state: { ...s, suspect: { node, ours } }, drift: false };
}
