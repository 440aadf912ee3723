/**
 * ZMQ PUB with bitcoind's framing: three frames (topic, body, 4-byte little-endian per-topic
 * counter), all topics on one endpoint, counters from 0 advancing on every message. Fault
 * injection for reliability tests: drop the next N messages of a topic (the counter still
 * advances, so subscribers see a gap), silence the socket, reorder, reset the counters as a
 * restart does, or publish arbitrary frames.
 * @module
 */
import { Publisher } from 'zeromq';
import type { Logger } from '../src/log.js';

export const ZMQ_TOPICS = ['hashblock', 'hashtx', 'rawblock', 'rawtx', 'sequence'] as const;
export type ZmqTopic = (typeof ZMQ_TOPICS)[number];

/** A message as it went on the wire. */
export type SentMessage = { topic: string; body: Uint8Array; seq: number | null; frames: number };

type Pending = { frames: Uint8Array[]; record: SentMessage };

/** How many sent messages `sent()` remembers. */
const SENT_LOG_LIMIT = 50_000;

/** A ZMQ message's third frame: its 4-byte little-endian per-topic counter. */
export function le32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, true);
  return b;
}

/** Fault controls of the publisher. */
export type ZmqFaults = {
  /** The next `n` messages of `topic` ('*' = any) are counted but not sent. */
  drop(topic: ZmqTopic | '*', n: number): void;
  /** While on, nothing is sent (counters advance as for lost messages). */
  silence(on?: boolean): void;
  /** Hold the next `n` messages and send them in reverse (or shuffled) order. */
  reorderNext(n: number, order?: 'reverse' | 'shuffle'): void;
  /** Every per-topic counter back to 0 (a bitcoind restart). */
  resetCounters(): void;
  /** Sends arbitrary frames as one multipart message (no counter involved). */
  publishRaw(frames: (string | Uint8Array)[]): Promise<void>;
  /** Sends the last `n` messages again, same frames and counters (a duplicate announcement). */
  repeatLast(n?: number): Promise<void>;
  /** Messages sent so far (the last 50,000). */
  sent(): SentMessage[];
  /** Resolves when every queued message has been handed to the socket. */
  flush(): Promise<void>;
  /** The counter the next message of `topic` will carry. */
  counter(topic: ZmqTopic): number;
};

export class ZmqPublisher implements ZmqFaults {
  private sock: Publisher | null = null;
  private readonly counters = new Map<string, number>();
  private queue: Promise<void> = Promise.resolve();
  private readonly drops = new Map<string, number>();
  private silenced = false;
  private holdCount = 0;
  private holdOrder: 'reverse' | 'shuffle' = 'reverse';
  private held: Pending[] = [];
  private readonly log: SentMessage[] = [];
  endpoint = '';

  constructor(private readonly logger: Logger) {}

  /** Binds tcp://host:port (port 0 = a free port) and returns the endpoint. */
  async start(host: string, port: number): Promise<string> {
    const sock = new Publisher({ sendHighWaterMark: 1000, linger: 0 });
    try {
      await sock.bind(`tcp://${host}:${port === 0 ? '*' : port}`);
    } catch (err) {
      sock.close();
      throw err;
    }
    this.sock = sock;
    this.endpoint = sock.lastEndpoint ?? `tcp://${host}:${port}`;
    return this.endpoint;
  }

  /** Publishes one notification with the topic's next counter value, subject to the faults. */
  publish(topic: ZmqTopic, body: Uint8Array): void {
    const seq = this.counters.get(topic) ?? 0;
    this.counters.set(topic, (seq + 1) >>> 0);
    const dropTopic = this.drops.get(topic) ?? 0;
    const dropAny = this.drops.get('*') ?? 0;
    if (dropTopic > 0) {
      this.drops.set(topic, dropTopic - 1);
      return;
    }
    if (dropAny > 0) {
      this.drops.set('*', dropAny - 1);
      return;
    }
    if (this.silenced) return;
    const pending: Pending = {
      frames: [new TextEncoder().encode(topic), body, le32(seq)],
      record: { topic, body, seq, frames: 3 },
    };
    if (this.holdCount > 0) {
      this.held.push(pending);
      if (--this.holdCount === 0) this.releaseHeld();
      return;
    }
    this.enqueue(pending);
  }

  private releaseHeld(): void {
    const held = this.held;
    this.held = [];
    if (this.holdOrder === 'reverse') held.reverse();
    else {
      for (let i = held.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [held[i], held[j]] = [held[j]!, held[i]!];
      }
    }
    for (const p of held) this.enqueue(p);
  }

  private enqueue(p: Pending): void {
    const sock = this.sock;
    if (!sock) return;
    this.queue = this.queue
      .then(() => sock.send(p.frames))
      .then(() => {
        this.log.push(p.record);
        // Keep the most recent messages only: a long-running quick start must not grow without bound.
        if (this.log.length > SENT_LOG_LIMIT) this.log.splice(0, this.log.length - SENT_LOG_LIMIT);
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'devnode: zmq send failed'));
  }

  drop(topic: ZmqTopic | '*', n: number): void {
    this.drops.set(topic, (this.drops.get(topic) ?? 0) + n);
  }

  silence(on = true): void {
    this.silenced = on;
  }

  reorderNext(n: number, order: 'reverse' | 'shuffle' = 'reverse'): void {
    this.holdCount = n;
    this.holdOrder = order;
  }

  resetCounters(): void {
    this.counters.clear();
  }

  async publishRaw(frames: (string | Uint8Array)[]): Promise<void> {
    const enc = frames.map((f) => (typeof f === 'string' ? new TextEncoder().encode(f) : f));
    const topic = new TextDecoder().decode(enc[0] ?? new Uint8Array());
    this.enqueue({ frames: enc, record: { topic, body: enc[1] ?? new Uint8Array(), seq: null, frames: enc.length } });
    await this.queue;
  }

  async repeatLast(n = 1): Promise<void> {
    await this.queue;
    for (const r of this.log.slice(-n)) {
      const frames = [new TextEncoder().encode(r.topic), r.body, ...(r.seq === null ? [] : [le32(r.seq)])];
      this.enqueue({ frames, record: { ...r } });
    }
    await this.queue;
  }

  sent(): SentMessage[] {
    return [...this.log];
  }

  async flush(): Promise<void> {
    await this.queue;
  }

  /** The counter the next message of `topic` will carry. */
  counter(topic: ZmqTopic): number {
    return this.counters.get(topic) ?? 0;
  }

  async stop(): Promise<void> {
    await this.queue;
    this.sock?.close();
    this.sock = null;
  }
}
