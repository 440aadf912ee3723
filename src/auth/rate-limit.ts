/**
 * Per-key rate limits in Redis: a fixed window per key (`<prefix>:rl:<key id>:<window index>`),
 * counted by one Lua call (INCR + PEXPIRE), shared by every API process. When Redis does not
 * answer within `timeoutMs` the request is let through (fail open) and the outage is reported
 * through `onUnavailable`: rate limiting protects capacity, it is not an access control.
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

const SCRIPT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

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

/** A limiter over Redis; see the module comment for the window and failure rules. */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const { redis, prefix, windowMs } = opts;
  const timeoutMs = opts.timeoutMs ?? 250;
  const now = opts.now ?? Date.now;
  let sha: string | undefined;

  async function incr(key: string): Promise<number> {
    if (sha === undefined) sha = (await redis.script('LOAD', SCRIPT)) as string;
    try {
      return Number(await redis.evalsha(sha, 1, key, windowMs));
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        sha = undefined;
        return Number(await redis.eval(SCRIPT, 1, key, windowMs));
      }
      throw err;
    }
  }

  return {
    async take(keyId, limit) {
      const t = now();
      const window = Math.floor(t / windowMs);
      const resetMs = (window + 1) * windowMs - t;
      let timer: NodeJS.Timeout | undefined;
      try {
        const count = await Promise.race([
          incr(`${prefix}:rl:${keyId}:${window}`),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`redis did not answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
      } catch (err) {
        opts.onUnavailable?.(err);
        return { allowed: true, limit, remaining: limit, resetMs };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
