/**
 * The one polling helper of the tests: wait for a condition instead of sleeping and asserting,
 * so that a test passes on a loaded machine as on an idle one.
 * @module
 */

/** What `waitFor` resolves to: the check's value, once it is neither undefined, null, false, 0 nor ''. */
export type Present<T> = Exclude<Awaited<T>, undefined | null | false | 0 | ''>;

type Tried = { last?: unknown };

/** One call of a check: its value when truthy, else undefined (an error is kept in `tried`). */
async function attempt<T>(check: () => T | Promise<T>, tried: Tried): Promise<Present<T> | undefined> {
  try {
    const v = await check();
    return v ? (v as Present<T>) : undefined;
  } catch (err) {
    tried.last = err;
    return undefined;
  }
}

function why(tried: Tried): string {
  const last = tried.last;
  return last === undefined ? '' : `: ${last instanceof Error ? last.message : String(last)}`;
}

/**
 * Calls `check` every `intervalMs` until it returns a truthy value, and resolves to that value.
 * A check that throws counts as not yet (the last error is kept). After `timeoutMs` it throws
 * "timed out after … waiting for `what`" with that last error.
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 60_000, intervalMs = 50): Promise<Present<T>> {
  const deadline = Date.now() + timeoutMs;
  const tried: Tried = {};
  for (;;) {
    const v = await attempt(check, tried);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why(tried)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * `waitFor` for a wait whose pace is the machine's (an index catching up, a mempool filling): it
 * fails only when `progress` (the index height, a count) has not changed for `stallMs`, or after
 * `capMs` in all. On an idle machine it ends as soon as `waitFor` would; on a machine at load 30,
 * where catching up 100 blocks can take minutes, it keeps waiting as long as the work moves, and
 * a hang still fails after `stallMs` of no change.
 */
export async function waitForProgress<T>(
  what: string,
  check: () => T | Promise<T>,
  progress: () => unknown,
  stallMs = 60_000,
  capMs = Math.max(stallMs, 900_000),
  intervalMs = 50,
): Promise<Present<T>> {
  const start = Date.now();
  let stallDeadline = start + stallMs;
  let seen: string | undefined;
  const tried: Tried = {};
  for (;;) {
    const v = await attempt(check, tried);
    if (v) return v;
    try {
      const now = JSON.stringify(await progress());
      if (now !== seen) {
        seen = now;
        stallDeadline = Date.now() + stallMs;
      }
    } catch {
      // a progress probe that fails is no progress
    }
    const t = Date.now();
    if (t > stallDeadline || t - start > capMs) {
      const how = t > stallDeadline ? `no progress (${seen ?? 'none'}) for ${stallMs} ms` : `${capMs} ms in all`;
      throw new Error(`timed out after ${t - start} ms (${how}) waiting for ${what}${why(tried)}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
