/**
 * The ZMQ notifier's message handling on the stream a real Bitcoin Core 30 sent
 * (../shared/fixtures/bitcoind/zmq.jsonl): counters classified (the first rawtx and sequence
 * messages never reached that subscriber, which only the counter shows), sequence bodies parsed
 * with hashes in display order, and malformed frames counted without a wake.
 */
import { describe, expect, it } from 'vitest';
import {
  checkCounter,
  handleMessage,
  parseSequenceBody,
  type NotifyHandlers,
  type NotifyStats,
  type SequenceHint,
} from '../../../indexer/notify.js';
import { silentLogger } from '../../../src/log.js';
import { describeFixtures, readFixtureJsonl } from '../../support/fixtures.js';
import { le32 } from '../../../devnode/zmq.js';

function recorder() {
  const seen = { wakes: 0, gaps: [] as string[], resets: [] as string[], hints: [] as SequenceHint[], announced: [] as string[] };
  const h: NotifyHandlers = {
    wake: () => void seen.wakes++,
    gap: (t, e, g) => void seen.gaps.push(`${t}:${e}->${g}`),
    reset: (t) => void seen.resets.push(t),
    sequence: (hint) => void seen.hints.push(hint),
    announced: (hash) => void seen.announced.push(hash),
  };
  const stats: NotifyStats = { messages: 0, invalid: 0, gaps: 0, resets: 0, lastMessageAt: null };
  return { seen, h, stats, counters: new Map<string, number>() };
}

describe('checkCounter', () => {
  it('tells next, gap, reset and first apart', () => {
    expect(checkCounter(undefined, 5)).toBe('first');
    expect(checkCounter(5, 6)).toBe('next');
    expect(checkCounter(5, 8)).toBe('gap');
    expect(checkCounter(5, 4)).toBe('gap');
    expect(checkCounter(5, 0)).toBe('reset');
    expect(checkCounter(0xffffffff, 0)).toBe('next');
  });
});

describeFixtures('handleMessage on a recorded Core 30 stream', () => {
  it('wakes on every message, sees no false gap, and parses every sequence body', async () => {
    const rows = await readFixtureJsonl<{ topic: string; body_hex: string; seq: number }>('bitcoind', 'zmq.jsonl');
    const r = recorder();
    for (const m of rows.filter((x) => ['sequence', 'hashblock', 'rawtx'].includes(x.topic))) {
      handleMessage([Buffer.from(m.topic), Buffer.from(m.body_hex, 'hex'), le32(m.seq)], r.counters, r.stats, r.h, silentLogger());
    }
    const subscribed = rows.filter((x) => ['sequence', 'hashblock', 'rawtx'].includes(x.topic));
    expect(r.seen.wakes).toBe(subscribed.length);
    expect(r.stats.invalid).toBe(0);
    expect(r.seen.resets).toEqual([]);
    expect(r.seen.gaps).toEqual([]);
    const seqs = subscribed.filter((x) => x.topic === 'sequence');
    expect(r.seen.hints).toHaveLength(seqs.length);
    expect(new Set(r.seen.hints.map((h) => h.label))).toEqual(new Set(['A', 'R', 'C', 'D']));
    // hashblock bodies are display order as sent: every one is also a C of the sequence topic.
    const connected = new Set(r.seen.hints.filter((h) => h.label === 'C').map((h) => h.hash));
    const hashblocks = subscribed.filter((x) => x.topic === 'hashblock').map((x) => x.body_hex);
    expect(hashblocks.filter((h) => connected.has(h)).length).toBeGreaterThan(hashblocks.length - 3);
  });

  it('reports a lost message and a restart', () => {
    const r = recorder();
    const msg = (seq: number) => [Buffer.from('hashblock'), Buffer.alloc(32, 1), le32(seq)];
    for (const s of [10, 11, 13, 0, 1]) handleMessage(msg(s), r.counters, r.stats, r.h, silentLogger());
    expect(r.seen.gaps).toEqual(['hashblock:12->13']);
    expect(r.seen.resets).toEqual(['hashblock']);
    expect(r.seen.wakes).toBe(5);
  });

  it('drops malformed messages without waking', () => {
    const r = recorder();
    const bad: Uint8Array[][] = [
      [Buffer.from('hashblock'), Buffer.alloc(31), le32(1)],
      [Buffer.from('hashblock'), Buffer.alloc(34), le32(2)],
      [Buffer.from('sequence'), Buffer.concat([Buffer.alloc(32), Buffer.from('X')]), le32(1)],
      [Buffer.from('sequence'), Buffer.concat([Buffer.alloc(32), Buffer.from('A')]), le32(2)],
      [Buffer.from('hashfoo'), Buffer.alloc(32), le32(1)],
      [Buffer.from('hashblock'), Buffer.alloc(32)],
      [Buffer.from('rawtx'), Buffer.alloc(60), Buffer.from([1])],
    ];
    for (const f of bad) handleMessage(f, r.counters, r.stats, r.h, silentLogger());
    expect(r.stats.invalid).toBe(bad.length);
    expect(r.seen.wakes).toBe(0);
    expect(r.seen.hints).toEqual([]);
  });

  it('parses A and R with their mempool sequence', () => {
    const body = Buffer.concat([Buffer.from('ab'.repeat(32), 'hex'), Buffer.from('A'), Buffer.from([5, 0, 0, 0, 0, 0, 0, 0])]);
    expect(parseSequenceBody(body)).toEqual({ label: 'A', hash: 'ab'.repeat(32), mempoolSeq: 5n });
    expect(parseSequenceBody(Buffer.concat([Buffer.alloc(32), Buffer.from('C')]))).toMatchObject({ label: 'C', mempoolSeq: null });
  });
});
