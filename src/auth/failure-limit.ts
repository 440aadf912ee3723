/**
 * Requests with a wrong key, limited per client address: each one costs a lookup of the key's
 * digest, and nothing else bounds them (the per-key rate limit needs a key). In memory, per
 * process, in fixed windows: an address that presented `limit` invalid keys in the current
 * window is refused (429) without a lookup until the window ends. Only invalid keys count — a
 * missing key costs nothing, a valid one is never counted — and a caller whose key this process
 * already verified is not held back by its address's failures (the API checks `blocked` only
 * for keys it does not know). Past `maxAddresses` distinct addresses in a window, the others
 * share one count, so a flood from many addresses is bounded too and memory stays bounded.
 * @module
 */

export type FailureLimiter = {
  /** Milliseconds until `address` may try again, or undefined when it may now. */
  blocked(address: string): number | undefined;
  /** Counts one invalid key presented from `address`. */
  note(address: string): void;
};

export function createFailureLimiter(opts: { limit: number; windowMs: number; maxAddresses?: number; now?: () => number }): FailureLimiter {
  const now = opts.now ?? Date.now;
  const maxAddresses = opts.maxAddresses ?? 100_000;
  let window = -1;
  const counts = new Map<string, number>();
  const current = () => {
    const w = Math.floor(now() / opts.windowMs);
    if (w !== window) {
      window = w;
      counts.clear();
    }
    return w;
  };
  const slot = (address: string) => (counts.has(address) || counts.size < maxAddresses ? address : '*');
  return {
    blocked(address) {
      const w = current();
      return (counts.get(slot(address)) ?? 0) >= opts.limit ? (w + 1) * opts.windowMs - now() : undefined;
    },
    note(address) {
      current();
      const k = slot(address);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    },
  };
}
