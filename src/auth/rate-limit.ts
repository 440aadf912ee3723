/**
 * Per-key rate limits in Redis: a fixed window per key (`<prefix>:rl:<key id>:<window index>`),
 * shared by every API process. A process takes tokens from the window's counter in leases (one
 * Lua call: INCRBY + PEXPIRE on creation) and spends them locally, so a busy key costs a Redis
 * round trip per lease, not per request. Leases start at one token each window and double while
 * the key keeps using them, up to 1 % of the limit (at most 1,000): below 200 requests per window
 * every request is counted in Redis as it comes, and a process never holds more than 1 % of a
 * key's window unused. The limit is never exceeded across processes; tokens a process leased
 * and did not use by the end of the window are lost to the others (at most 1 % each). A window
 * whose counter has passed the limit is refused locally without asking Redis again.
 * When Redis does not answer within `timeoutMs` the request is let through (fail open) and the
 * outage is reported through `onUnavailable`: rate limiting protects capacity, it is not an
 * access control.
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
  /** Give up on Redis after this long and allow the request. */
  timeoutMs?: number;
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
  /** The counter has passed the limit: refused until the window ends. */
  spent: boolean;
  /** The lease request in flight; concurrent requests of the key wait for it. */
  pending: Promise<unknown> | undefined;
};

/** A limiter over Redis; see the module comment for the window, lease and failure rules. */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const { redis, prefix, windowMs } = opts;
  const timeoutMs = opts.timeoutMs ?? 250;
  const now = opts.now ?? Date.now;
  const leases = new Map<bigint, Lease>();
  let sha: string | undefined;

  async function incrBy(key: string, n: number): Promise<number> {
    if (sha === undefined) sha = (await redis.script('LOAD', SCRIPT)) as string;
    try {
      return Number(await redis.evalsha(sha, 1, key, windowMs, n));
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        sha = undefined;
        return Number(await redis.eval(SCRIPT, 1, key, windowMs, n));
      }
      throw err;
    }
  }

  async function withTimeout<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        p,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`redis did not answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The key's lease for `window`, a fresh one when the window moved on (old windows dropped). */
  function leaseOf(keyId: bigint, window: number): Lease {
    let l = leases.get(keyId);
    if (l === undefined || l.window !== window) {
      if (leases.size >= 10_000) for (const [k, v] of leases) if (v.window !== window && v.pending === undefined) leases.delete(k);
      l = { window, left: 0, count: 0, next: 1, spent: false, pending: undefined };
      leases.set(keyId, l);
    }
    return l;
  }

  /** Takes the next lease of `l` from Redis: the tokens of it still under `limit` become ours. */
  async function refill(l: Lease, keyId: bigint, limit: number): Promise<void> {
    const size = Math.min(l.next, leaseCap(limit));
    const count = await withTimeout(incrBy(`${prefix}:rl:${keyId}:${l.window}`, size));
    const granted = Math.max(0, Math.min(size, limit - (count - size)));
    l.count = Math.max(l.count, count);
    l.left += granted;
    l.next = Math.min(size * 2, leaseCap(limit));
    if (granted < size) l.spent = true;
  }

  return {
    async take(keyId, limit) {
      const t = now();
      const window = Math.floor(t / windowMs);
      const resetMs = (window + 1) * windowMs - t;
      const l = leaseOf(keyId, window);
      for (;;) {
        if (l.left > 0) {
          l.left--;
          return { allowed: true, limit, remaining: Math.max(0, limit - l.count) + l.left, resetMs };
        }
        if (l.spent) return { allowed: false, limit, remaining: 0, resetMs };
        if (l.pending === undefined) {
          l.pending = refill(l, keyId, limit).finally(() => {
            l.pending = undefined;
          });
        }
        try {
          await l.pending;
        } catch (err) {
          opts.onUnavailable?.(err);
          return { allowed: true, limit, remaining: limit, resetMs };
        }
      }
    },
  };
}
