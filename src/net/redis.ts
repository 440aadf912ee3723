/**
 * The one way Blockwire opens a Redis connection, to a plain server (REDIS_URL) or to the
 * primary that Redis Sentinels name (REDIS_SENTINELS + REDIS_SENTINEL_NAME). Roles pass the
 * target around as one string: a `redis://` URL, or `redis+sentinel://host:port,host:port/name`
 * built by `redisTarget` from the configuration. With Sentinels, ioredis asks them for the
 * primary on every (re)connect, checks that the server it reaches is a primary, and drops its
 * connection as soon as a Sentinel announces a failover (`+switch-master`), so queues, the stream
 * feed and rate limits move to the new primary by themselves; commands sent meanwhile follow
 * each connection's own retry settings.
 *
 * ioredis (6.0) can end such a connection for good in a failover: a `+switch-master` notice
 * that arrives while a reconnect is asking the Sentinels makes its failover detector disconnect
 * the connector, the pending connect fails with "Connection is closed." and the connection ends
 * (status `end`) instead of retrying: a relay, worker or stream feed on it would wait forever
 * (about one failover in four, redis-failover.test.ts). A connection to Sentinels therefore
 * connects again when a connect ends it that way, unless it was disconnected on purpose; its
 * duplicates (BullMQ's blocking connections) do the same.
 * @module
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';

const SENTINEL_SCHEME = 'redis+sentinel:';

/** The Redis target of a configuration: the Sentinels when REDIS_SENTINELS is set, else REDIS_URL. */
export function redisTarget(config: Pick<Config, 'redisUrl' | 'redisSentinels' | 'redisSentinelName'>): string | undefined {
  if (config.redisSentinels.length === 0) return config.redisUrl;
  return `${SENTINEL_SCHEME}//${config.redisSentinels.join(',')}/${encodeURIComponent(config.redisSentinelName)}`;
}

/** The Sentinels and primary name of a `redis+sentinel:` target, or null for a plain URL. */
function sentinelsOf(target: string): { sentinels: { host: string; port: number }[]; name: string } | null {
  if (!target.startsWith(SENTINEL_SCHEME)) return null;
  const rest = target.slice(SENTINEL_SCHEME.length + 2);
  const slash = rest.indexOf('/');
  const sentinels = rest
    .slice(0, slash)
    .split(',')
    .map((hp) => {
      const colon = hp.lastIndexOf(':');
      return { host: hp.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(hp.slice(colon + 1)) };
    });
  return { sentinels, name: decodeURIComponent(rest.slice(slash + 1)) };
}

/** ioredis's message for a connection closed under a command or a connect. */
const CONNECTION_CLOSED = 'Connection is closed.';

/** A connection to the primary the Sentinels name that a failover cannot end (module comment). */
class SentinelRedis extends Redis {
  #closed = false;
  #connectCut = false;

  constructor(options: RedisOptions) {
    super(options as RedisOptions & { replyMapping?: 'legacy' });
    this.on('error', (err: unknown) => {
      if (this.status === 'connecting' && err instanceof Error && err.message === CONNECTION_CLOSED) this.#connectCut = true;
    });
    this.on('end', () => {
      if (!this.#connectCut || this.#closed) return;
      this.#connectCut = false;
      setTimeout(() => {
        if (!this.#closed && this.status === 'end') this.connect().catch(() => undefined);
      }, 100).unref();
    });
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.#closed = true;
    super.disconnect(reconnect);
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new SentinelRedis({ ...this.options, ...override });
  }
}

/** A connection to `target` (see the module comment) with `opts`. */
export function createRedis(target: string, opts: RedisOptions = {}): Redis {
  const s = sentinelsOf(target);
  if (!s) return new Redis(target, opts);
  return new SentinelRedis({
    // Reconnect at once when a Sentinel announces the new primary, rather than on the next error.
    failoverDetector: true,
    // Keep asking the Sentinels while none answers (the default gives up after the first round).
    sentinelRetryStrategy: (times: number) => Math.min(100 * times, 2000),
    ...opts,
    sentinels: s.sentinels,
    name: s.name,
  });
}
