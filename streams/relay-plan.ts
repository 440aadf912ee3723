/**
 * The relay's decisions (streams/relay.ts), apart from its I/O: an explicit state and pure steps
 * over it, each returning the next state (as indexer/follow.ts `nextStep` plans and leaves the
 * doing to its caller). What a lead does at its start (the cursor read, housekeeping due at once,
 * the Redis run id to check again); where a batch leaves the cursor and whether to wait for a
 * wake-up before the next; whether Redis must be asked about its run id, and what its answer
 * means (reconcile: another server than the one recorded, or none recorded yet); when the
 * periodic housekeeping is due; what a lead that ended or failed means (stand by, or back off).
 * Which jobs a batch's deliveries go out in is relay-jobs.ts's.
 * @module
 */

export type RelayPolicy = {
  /** Outbox rows per batch. */
  batchSize: number;
  /** How often a standby tries to become the active relay. */
  standbyMs: number;
  /** How often housekeeping (lost-job scan, pruning) runs. */
  housekeepingMs: number;
};

export type RelayState = {
  /** True while this relay holds the lock. */
  readonly active: boolean;
  /** The last outbox seq relayed (while active). */
  readonly cursor: bigint | null;
  /** Events relayed so far by this process. */
  readonly relayed: number;
  /** When the periodic housekeeping last ran (0: due at once). */
  readonly lastHousekeeping: number;
  /** The Redis run id this relay last found the same as the one recorded (checked again on a reconnect). */
  readonly knownRunId: string | undefined;
  /** Leads in a row that failed. */
  readonly failures: number;
};

export const initialRelayState: RelayState = {
  active: false,
  cursor: null,
  relayed: 0,
  lastHousekeeping: 0,
  knownRunId: undefined,
  failures: 0,
};

/** The lock was got and the cursor read: housekeeping is due at once, and the Redis run id is checked again. */
export function leading(s: RelayState, cursor: bigint): RelayState {
  return { ...s, active: true, cursor, lastHousekeeping: 0, knownRunId: undefined };
}

/** A batch covered `rows` outbox rows up to `to`: the cursor moves there; fewer than a full batch waits for a wake-up. */
export function relayedBatch(s: RelayState, rows: number, to: bigint, policy: RelayPolicy): { state: RelayState; wait: boolean } {
  return { state: { ...s, cursor: to, relayed: s.relayed + rows }, wait: rows < policy.batchSize };
}

/** Whether Redis's run id (undefined: it did not say) calls for a look at the one recorded. */
export const runIdToCheck = (s: RelayState, runId: string | undefined): runId is string => runId !== undefined && runId !== s.knownRunId;

/**
 * Redis says `runId`, `recorded` is the run id the jobs were last enqueued on: another one (a
 * failover or a restart may have lost jobs) or none yet calls for a reconcile; `changed`: the
 * server is another than before (a warning), not the first one recorded.
 */
export function runIdVerdict(
  s: RelayState,
  runId: string,
  recorded: string | null,
): { state: RelayState; reconcile: boolean; changed: boolean } {
  return { state: { ...s, knownRunId: runId }, reconcile: recorded !== runId, changed: recorded !== null && recorded !== runId };
}

/** Whether the periodic housekeeping is due at `now` (redelivery requests are picked up every turn regardless). */
export function housekeepingDue(s: RelayState, now: number, policy: RelayPolicy): { state: RelayState; due: boolean } {
  if (now - s.lastHousekeeping < policy.housekeepingMs) return { state: s, due: false };
  return { state: { ...s, lastHousekeeping: now }, due: true };
}

/** A lead ended (stopped) or was refused the lock (`led` false: another relay is active): wait `waitMs` before trying again. */
export function leadEnded(s: RelayState, led: boolean, policy: RelayPolicy): { state: RelayState; waitMs: number } {
  return { state: { ...s, active: false, failures: 0 }, waitMs: led ? 0 : policy.standbyMs };
}

/** A lead failed (the cursor stays where the last batch left it): back off, doubling from 200 ms to 5 s. */
export function leadFailed(s: RelayState): { state: RelayState; waitMs: number } {
  const failures = s.failures + 1;
  return { state: { ...s, active: false, failures }, waitMs: Math.min(5000, 100 * 2 ** Math.min(failures, 6)) };
}
