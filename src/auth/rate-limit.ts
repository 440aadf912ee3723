/**
 * Per-key rate limits in Redis: a fixed window per key (`<prefix>:rl:<key id>:<window index>`),
 * shared by every API process. A process takes tokens from the window's counter in leases (one
 * Lua call: INCRBY + PEXPIRE on creation) and spends them locally, so a busy key costs a Redis
 * round trip per lease, not per request. Leases start at one token each window and double while
 * the key keeps using them, up to 1 % of the limit (at most 1,000): below 200 requests per window
 * every request is counted in Redis as it comes, and a process never holds more than 1 % of a
 * key's window unused. The limit is never exceeded across processes; tokens a process leased
 * and did not use by the end of the window are lost to the others (at most 1 % each). A window
 * whose counter has passed the limit is refused locally without asking Redis again. Concurrent
 * requests of a key wait for tokens already asked for only while those outnumber the requests
 * counting on them; the others ask at once (a small limit: one INCRBY each, in parallel). A
 * window's key expires a whole window after the window ends (a lagging clock cannot recreate it).
 * When Redis does not answer within `timeoutMs` of a request (slow, or gone), the request is
 * decided by a local allowance and the outage is reported through `onUnavailable`: the process
 * lets a key through while the requests it let through without Redis this window stay below
 * `fallbackShare` of what the window's counter had left when Redis last answered (the whole
 * limit when it never did); above it, 429 as usual. With one process (fallbackShare 1) a key
 * never gets more than its limit over a window, Redis or not; with N processes a share of 1/N
 * keeps them together within it while Redis does not answer (answers that come late mix the
 * two counts: then each process stays within its own bound, not the sum). An answer that comes
 * later is still credited: its tokens first pay for the requests already let through without
 * Redis, so nothing is counted twice nor granted twice.
 * @module
 */
import type { Redis } from 'ioredis';

export type RateDecision = {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
};

export type RateLimiter = {
  /** Counts one request of `keyId` against `limit` per window. */
  take(keyId: bigint, limit: number): Promise<RateDecision>;
};

const SCRIPT = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** The largest lease: a process holds at most this many of a key's tokens unused. */
const MAX_LEASE = 1000;

/** The lease cap for a limit: 1 % of it, at least 1 (exact counting below 200), at most MAX_LEASE. */
export function leaseCap(limit: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor(limit / 100)));
}

export type RateLimiterOptions = {
  redis: Redis;
  /** Redis key prefix (isolates deployments and tests). */
  prefix: string;
  windowMs: number;
  /** Give up on Redis after this long and decide by the local allowance. */
  timeoutMs?: number;
  /** Share (0-1] of a window's remaining tokens one process may grant without Redis; default 1. */
  fallbackShare?: number;
  onUnavailable?: (err: unknown) => void;
  now?: () => number;
};

/** One key's tokens in the current window, in this process. */
type Lease = {
  window: number;
  /** Leased tokens not spent yet. */
  left: number;
  /** The window's counter after this process's last lease (every process's tokens up to it). */
  count: number;
  /** Size of the next lease. */
  next: number;
  /** The counter had passed this limit: refused until the window ends (or the limit is raised). */
  spentAt: number | undefined;
  /** Requests let through without Redis (local allowance) not paid for by a late answer yet. */
  unmetered: number;
  /** Tokens asked for and not answered yet, and the takes counting on them. */
  inFlight: number;
  waiting: number;
  /** Wakes the waiting takes when a lease is answered (or fails). */
  wakers: (() => void)[];
};

/** A limiter over Redis; see the module comment for the window, lease and failure rules. */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const { redis, prefix, windowMs } = opts;
  const timeoutMs = opts.timeoutMs ?? 250;
  const fallbackShare = opts.fallbackShare ?? 1;
  const now = opts.now ?? Date.now;
  const leases = new Map<bigint, Lease>();
  let prunedWindow = -1;
  let sha: string | undefined;

  async function incrBy(key: string, n: number, ttlMs: number): Promise<number> {
    if (sha === undefined) sha = (await redis.script('LOAD', SCRIPT)) as string;
    try {
      return Number(await redis.evalsha(sha, 1, key, ttlMs, n));
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        sha = undefined;
        return Number(await redis.eval(SCRIPT, 1, key, ttlMs, n));
      }
      throw err;
    }
  }

  /** The key's lease for `window`, a fresh one when the window moved on (old ones pruned once per window). */
  function leaseOf(keyId: bigint, window: number): Lease {
    if (window > prunedWindow) {
      prunedWindow = window;
      for (const [k, v] of leases) if (v.window < window) leases.delete(k);
    }
    let l = leases.get(keyId);
    if (l === undefined || l.window !== window) {
      l = { window, left: 0, count: 0, next: 1, spentAt: undefined, unmetered: 0, inFlight: 0, waiting: 0, wakers: [] };
      leases.set(keyId, l);
    }
    return l;
  }

  /**
   * Asks Redis for `size` more tokens of `l`'s window. The answer is credited whenever it comes,
   * even after the takes waiting for it gave up (the counter counted them either way).
   */
  function refill(l: Lease, keyId: bigint, limit: number, size: number, resetMs: number): Promise<void> {
    l.inFlight += size;
    // The key outlives its window by a whole window: a process whose clock lags cannot recreate it.
    return incrBy(`${prefix}:rl:${keyId}:${l.window}`, size, resetMs + windowMs)
      .then(
        (count) => {
          const granted = Math.max(0, Math.min(size, limit - (count - size)));
          l.count = Math.max(l.count, count);
          // Tokens of a late answer first pay for requests let through without Redis.
          const paid = Math.min(l.unmetered, granted);
          l.unmetered -= paid;
          l.left += granted - paid;
          l.next = Math.min(size * 2, leaseCap(limit));
          if (granted < size) l.spentAt = limit;
        },
        (err: unknown) => {
          l.next = 1;
          throw err;
        },
      )
      .finally(() => {
        l.inFlight -= size;
        for (const wake of l.wakers.splice(0)) wake();
      });
  }

  /** Resolves at the next answer for `l`, or rejects at `deadline`. */
  function answered(l: Lease, p: Promise<void> | undefined, deadline: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const next = p ?? new Promise<void>((resolve) => l.wakers.push(resolve));
    return Promise.race([
      next,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis did not answer within ${timeoutMs} ms`)), Math.max(0, deadline - now()));
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** Without Redis: the local allowance (module comment), counted in `l.unmetered`. */
  function allowLocally(l: Lease, limit: number, resetMs: number): RateDecision {
    const allowance = Math.floor(Math.max(0, limit - l.count) * fallbackShare);
    if (l.unmetered >= allowance) return { allowed: false, limit, remaining: 0, resetMs };
    l.unmetered++;
    return { allowed: true, limit, remaining: allowance - l.unmetered, resetMs };
  }

  return {
    async take(keyId, limit) {
      const t = now();
      const window = Math.floor(t / windowMs);
      const resetMs = (window + 1) * windowMs - t;
      const deadline = t + timeoutMs;
      const l = leaseOf(keyId, window);
      for (;;) {
        if (l.left > 0) {
          l.left--;
          return { allowed: true, limit, remaining: Math.max(0, limit - l.count) + l.left, resetMs };
        }
        if (l.spentAt !== undefined && limit <= l.spentAt) return { allowed: false, limit, remaining: 0, resetMs };
        // Wait for tokens already asked for when there are more than takes counting on them;
        // otherwise ask for a lease (concurrent takes of a small limit ask at once, one each).
        const mine = l.inFlight > l.waiting ? undefined : refill(l, keyId, limit, Math.min(l.next, leaseCap(limit)), resetMs);
        l.waiting++;
        try {
          await answered(l, mine, deadline);
        } catch (err) {
          opts.onUnavailable?.(err);
          return allowLocally(l, limit, resetMs);
        } finally {
          l.waiting--;
        }
      }
    },
  };
}
