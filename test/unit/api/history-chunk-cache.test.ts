/**
 * The API's held history chunks (api/cache/history-chunk-cache.ts): which pages a held chunk gives
 * (only those wholly below a cursor that still names its entry), least recently used chunks
 * leaving first at the byte limit, and entries expiring.
 */
import { describe, expect, it } from 'vitest';
import { HistoryChunkCache } from '../../../api/cache/history-chunk-cache.js';
import type { HistoryChunk } from '../../../api/queries/address.js';

const ADDR = '00000000-0000-4000-8000-0000000000aa';
/** A chunk of `count` entries first, first + 3, first + 6 … as the statement hands it over (txid k: 32 bytes of k % 256). */
const chunk = (first: bigint, count: number, version = '42'): HistoryChunk => {
  const entries = Buffer.alloc(count * 8);
  const txids = Buffer.alloc(count * 32);
  for (let k = 0; k < count; k++) {
    entries.writeBigInt64BE(first + BigInt(k) * 3n, k * 8);
    txids.fill(k % 256, k * 32, k * 32 + 32);
  }
  return { version, entries, txids };
};

describe('HistoryChunkCache', () => {
  it('gives the entries below the cursor newest first, with the version they were read at', () => {
    const c = new HistoryChunkCache({ maxBytes: 1 << 20 });
    c.put(ADDR, 100n, chunk(100n, 1024));
    // entry 500 is 100 + 1500; the page is entries 499 … 474, with their txids and places
    const page = c.page(ADDR, 100n, 500, 1600n, 26)!;
    expect(page.version).toBe('42');
    expect(page.chain.all()).toEqual(
      Array.from({ length: 26 }, (_, k) => ({
        n: 100n + BigInt(499 - k) * 3n,
        first: 100n,
        index: 499 - k,
        txid: Buffer.alloc(32, (499 - k) % 256),
      })),
    );
    expect(c.page(ADDR, 100n, 26, 178n, 26)!.chain.at(25)).toEqual({ n: 100n, first: 100n, index: 0, txid: null }); // txid 0: none (absent)
  });

  it('gives nothing when the page reaches below the chunk, the cursor does not name the entry, or the chunk is not held', () => {
    const c = new HistoryChunkCache({ maxBytes: 1 << 20 });
    c.put(ADDR, 100n, chunk(100n, 1024));
    expect(c.page(ADDR, 100n, 25, 175n, 26)).toBeUndefined(); // 25 entries below: the older chunk is needed
    expect(c.page(ADDR, 100n, 500, 1601n, 26)).toBeUndefined(); // stale or made-up cursor
    expect(c.page(ADDR, 100n, 1024, 3172n, 26)).toBeUndefined(); // index past the chunk's end
    expect(c.page(ADDR, 101n, 500, 1600n, 26)).toBeUndefined();
    expect(c.page('00000000-0000-4000-8000-0000000000bb', 100n, 500, 1600n, 26)).toBeUndefined();
  });

  it('a chunk put again replaces the one held', () => {
    const c = new HistoryChunkCache({ maxBytes: 1 << 20 });
    c.put(ADDR, 100n, chunk(100n, 1024));
    c.put(ADDR, 100n, chunk(100n, 1024, '43'));
    expect(c.page(ADDR, 100n, 500, 1600n, 26)!.version).toBe('43');
    expect(c.size.chunks).toBe(1);
  });

  it('drops the least recently used chunks beyond its byte limit, and never holds one larger than it', () => {
    const one = 1024 * 40 + 160;
    const c = new HistoryChunkCache({ maxBytes: 3 * one });
    for (const first of [0n, 10_000n, 20_000n]) c.put(ADDR, first, chunk(first, 1024));
    expect(c.page(ADDR, 0n, 100, 300n, 26)).toBeDefined(); // 0 is now the most recently used
    c.put(ADDR, 30_000n, chunk(30_000n, 1024));
    expect(c.size).toEqual({ chunks: 3, bytes: 3 * one });
    expect(c.page(ADDR, 10_000n, 100, 10_300n, 26)).toBeUndefined();
    expect(c.page(ADDR, 0n, 100, 300n, 26)).toBeDefined();
    expect(c.page(ADDR, 20_000n, 100, 20_300n, 26)).toBeDefined();
    const small = new HistoryChunkCache({ maxBytes: one - 1 });
    small.put(ADDR, 0n, chunk(0n, 1024));
    expect(small.size).toEqual({ chunks: 0, bytes: 0 });
    c.clear();
    expect(c.size).toEqual({ chunks: 0, bytes: 0 });
  });

  it('forgets a chunk after its time to live', () => {
    let now = 1_000_000;
    const c = new HistoryChunkCache({ maxBytes: 1 << 20, ttlMs: 20, now: () => now });
    c.put(ADDR, 100n, chunk(100n, 1024));
    now += 20;
    expect(c.page(ADDR, 100n, 500, 1600n, 26)).toBeDefined();
    now += 1;
    expect(c.page(ADDR, 100n, 500, 1600n, 26)).toBeUndefined();
    expect(c.size.chunks).toBe(0);
  });

  it('reads a wanted chunk in the background once, at most maxLoads at a time, and holds it (not when cleared meanwhile; a failed read is reported)', async () => {
    const reads: string[] = [];
    const gates: (() => void)[] = [];
    const c = new HistoryChunkCache({
      maxBytes: 1 << 20,
      maxLoads: 2,
      load: (addrKey, first) => {
        reads.push(`${addrKey}/${first}`);
        return new Promise((resolve) => gates.push(() => resolve(first === 999n ? undefined : chunk(first, 1024))));
      },
    });
    c.want(ADDR, 100n);
    c.want(ADDR, 100n); // being read already
    c.want(ADDR, 5000n);
    c.want(ADDR, 9000n); // a third at once: skipped
    expect(reads).toEqual([`${ADDR}/100`, `${ADDR}/5000`]);
    expect(c.page(ADDR, 100n, 500, 1600n, 26)).toBeUndefined();
    for (const open of gates) open();
    await c.settled();
    expect(c.page(ADDR, 100n, 500, 1600n, 26)).toBeDefined();
    expect(c.size.chunks).toBe(2);
    c.want(ADDR, 999n); // gone from the database meanwhile: nothing held
    gates.at(-1)!();
    await c.settled();
    expect(c.size.chunks).toBe(2);
    expect(c.holds(ADDR, 100n)).toBe(true);
    expect(c.holds(ADDR, 999n)).toBe(false);
    // A read begun before clear() (the database may have been replaced) is not held.
    c.want(ADDR, 7000n);
    c.clear();
    gates.at(-1)!();
    await c.settled();
    expect(c.size.chunks).toBe(0);
    const errors: unknown[] = [];
    const failing = new HistoryChunkCache({
      maxBytes: 1 << 20,
      load: () => Promise.reject(new Error('database down')),
      onLoadError: (e) => errors.push(e),
    });
    failing.want(ADDR, 100n);
    await failing.settled();
    expect(failing.size.chunks).toBe(0);
    expect(errors).toHaveLength(1);
  });
});
