/**
 * The one polling helper of the tests: wait for a condition instead of sleeping and asserting,
 * so that a test passes on a loaded machine as on an idle one.
 * @module
 */

/** What `waitFor` resolves to: the check's value, once it is neither undefined, null, false, 0 nor ''. */
export type Present<T> = Exclude<Awaited<T>, undefined | null | false | 0 | ''>;

/**
 * Calls `check` every `intervalMs` until it returns a truthy value, and resolves to that value.
 * A check that throws counts as not yet (the last error is kept). After `timeoutMs` it throws
 * "timed out after … waiting for `what`" with that last error.
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 60_000, intervalMs = 50): Promise<Present<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as Present<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last === undefined ? '' : `: ${last instanceof Error ? last.message : String(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
