/**
 * ZMQ subscriber (bitcoind `sequence`, `hashblock`, `rawtx`): a wake-up hint, never a source
 * of truth. Every well-formed message wakes the loop; the 4-byte little-endian per-topic
 * counter of the third frame reveals lost messages (a jump: `gap`) and bitcoind restarts (a
 * return to 0: `reset`), both of which force a full reconcile. `sequence` messages are parsed
 * into hints (C/D/A/R with the mempool sequence) that the mempool sync verifies against RPC
 * before any change. Malformed frames are counted and dropped.
 * @module
 */
import { Subscriber } from 'zeromq';
import type { Logger } from '../src/log.js';

const ZMQ_TOPICS = ['sequence', 'hashblock', 'rawtx'] as const;
export type NotifyTopic = (typeof ZMQ_TOPICS)[number];

/** A parsed `sequence` message: hash in display hex (as sent), mempool sequence for A and R. */
export interface SequenceHint {
  label: 'C' | 'D' | 'A' | 'R';
  hash: string;
  mempoolSeq: bigint | null;
}

export interface NotifyHandlers {
  /** Something happened at the node (or a message claims so): reconcile. */
  wake(): void;
  /** Messages of `topic` were lost (counter jumped or went out of order). */
  gap(topic: NotifyTopic, expected: number, got: number): void;
  /** The counter of `topic` went back to 0: bitcoind restarted. */
  reset(topic: NotifyTopic): void;
  /** A `sequence` message, for the mempool sync to verify. */
  sequence(hint: SequenceHint): void;
  /** hashblock / sequence C announced this block hash (for the missed-blocks metric). */
  announced?(hash: string): void;
}

export interface NotifyStats {
  messages: number;
  invalid: number;
  gaps: number;
  resets: number;
  lastMessageAt: Date | null;
}

export interface Notifier {
  readonly stats: NotifyStats;
  stop(): Promise<void>;
}

/** Result of checking one counter value against the last one seen for its topic. */
export type CounterCheck = 'first' | 'next' | 'gap' | 'reset';

/** Classifies counter `got` after `last` (undefined before the first message). */
export function checkCounter(last: number | undefined, got: number): CounterCheck {
  if (last === undefined) return 'first';
  if (got === (last + 1) >>> 0) return 'next';
  if (got === 0) return 'reset';
  return 'gap';
}

/** Parses a sequence body (32-byte hash, label, 8-byte LE mempool sequence for A/R), or null. */
export function parseSequenceBody(body: Uint8Array): SequenceHint | null {
  if (body.length !== 33 && body.length !== 41) return null;
  const label = String.fromCharCode(body[32]!);
  // Core writes the hash reversed, in display order (zmqpublishnotifier.cpp).
  const hash = Buffer.from(body.buffer, body.byteOffset, 32).toString('hex');
  if ((label === 'C' || label === 'D') && body.length === 33) return { label, hash, mempoolSeq: null };
  if ((label === 'A' || label === 'R') && body.length === 41) {
    return { label, hash, mempoolSeq: Buffer.from(body.buffer, body.byteOffset + 33, 8).readBigUInt64LE(0) };
  }
  return null;
}

/**
 * Classifies one ZMQ message and updates `counters`; calls the handlers. Exposed for tests;
 * `startNotifier` feeds it from the socket.
 */
export function handleMessage(
  frames: readonly Uint8Array[],
  counters: Map<string, number>,
  stats: NotifyStats,
  h: NotifyHandlers,
  log: Logger,
): void {
  stats.messages++;
  stats.lastMessageAt = new Date();
  if (frames.length !== 3 || frames[2]!.length !== 4) {
    stats.invalid++;
    log.debug({ frames: frames.length }, 'zmq message without a 4-byte counter frame ignored');
    return;
  }
  const topic = Buffer.from(frames[0]!).toString('latin1');
  if (!(ZMQ_TOPICS as readonly string[]).includes(topic)) {
    stats.invalid++;
    log.debug({ topic }, 'zmq message of an unexpected topic ignored');
    return;
  }
  const t = topic as NotifyTopic;
  const seq = Buffer.from(frames[2]!).readUInt32LE(0);
  const last = counters.get(t);
  const c = checkCounter(last, seq);
  counters.set(t, seq);
  if (c === 'gap') {
    stats.gaps++;
    const expected = ((last ?? 0) + 1) >>> 0;
    log.warn({ topic: t, got: seq }, 'zmq messages lost (counter gap): full reconcile');
    h.gap(t, expected, seq);
  } else if (c === 'reset') {
    stats.resets++;
    log.warn({ topic: t }, 'zmq counter reset (bitcoind restarted?): full reconcile');
    h.reset(t);
  }
  const body = frames[1]!;
  if (t === 'sequence') {
    const hint = parseSequenceBody(body);
    if (hint === null) {
      stats.invalid++;
      log.debug({ length: body.length }, 'malformed zmq sequence body ignored');
      return;
    }
    if (hint.label === 'C') h.announced?.(hint.hash);
    h.sequence(hint);
  } else if (t === 'hashblock') {
    if (body.length !== 32) {
      stats.invalid++;
      log.debug({ length: body.length }, 'malformed zmq hashblock body ignored');
      return;
    }
    h.announced?.(Buffer.from(body).toString('hex')); // display order, as Core sends it
  }
  h.wake();
}

/**
 * Subscribes to `url` and feeds messages to `handlers` until `stop()`. `rawtx` is dropped from the
 * subscription once a `sequence` message shows that the node publishes both there: `sequence`
 * then announces every mempool transaction (A) and block (C) that `rawtx` would, and Core
 * publishes a `rawtx` for every transaction of a connected block just before announcing it, so a
 * 4,000-transaction block queued 4,000 messages (tens of ms of the indexer's thread) ahead of
 * its own announcement and beside its write. A restarted node (a counter back to 0) or a lost
 * connection (the node at the other end may be another, or reconfigured) may publish otherwise:
 * `rawtx` is taken again until the next `sequence` message.
 */
export async function startNotifier(opts: { url: string; log: Logger; handlers: NotifyHandlers }): Promise<Notifier> {
  const { log } = opts;
  // A high receive watermark: the node's IBD floods rawtx; losses show as counter gaps anyway.
  const sock = new Subscriber({ receiveHighWaterMark: 100_000, linger: 0 });
  for (const topic of ZMQ_TOPICS) sock.subscribe(topic);
  sock.connect(opts.url);
  const stats: NotifyStats = { messages: 0, invalid: 0, gaps: 0, resets: 0, lastMessageAt: null };
  const counters = new Map<string, number>();
  let rawtx = true;
  const handlers: NotifyHandlers = {
    ...opts.handlers,
    sequence(hint) {
      if (rawtx) {
        rawtx = false;
        sock.unsubscribe('rawtx');
        log.info('zmq: the node publishes sequence here; rawtx unsubscribed (sequence announces the same)');
      }
      opts.handlers.sequence(hint);
    },
    reset(topic) {
      takeRawtx();
      opts.handlers.reset(topic);
    },
  };
  /** Subscribes to `rawtx` again (until the next `sequence` message): the node may publish otherwise now. */
  const takeRawtx = () => {
    if (rawtx) return;
    rawtx = true;
    // (its next counter is a first one, not a gap)
    counters.delete('rawtx');
    sock.subscribe('rawtx');
  };
  let stopped = false;
  // A lost connection: the node at the other end may come back configured otherwise (rawtx and
  // no sequence), and it may publish no other topic whose counter would show the restart.
  sock.events.on('disconnect', () => {
    if (stopped) return;
    if (!rawtx) log.info('zmq: disconnected from the node; rawtx subscribed again until a sequence message');
    takeRawtx();
  });
  const loop = (async () => {
    try {
      for await (const frames of sock) {
        if (stopped) break;
        try {
          handleMessage(frames, counters, stats, handlers, log);
        } catch (err) {
          stats.invalid++;
          log.warn({ err }, 'zmq message handling failed');
        }
      }
    } catch (err) {
      if (!stopped) log.error({ err }, 'zmq subscriber stopped');
    }
  })();
  log.info({ url: opts.url, topics: ZMQ_TOPICS }, 'zmq subscribed (wake-up hints only)');
  return {
    stats,
    async stop() {
      stopped = true;
      sock.close();
      await loop;
    },
  };
}
