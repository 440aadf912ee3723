/**
 * The stop's steps: hooks run last-registered first, once, a failing hook does not stop the
 * others; a stop asked for while starting waits for the start-up; a step that does not finish
 * says every few seconds which step it is (past the time it means to take).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createShutdown, watchedStep } from '../../../cli/lifecycle.js';
import { recordingLogger } from '../../support/log-lines.js';

const messages = (lines: string[]) => lines.map((l) => JSON.parse(l) as { msg: string; step?: string; hook?: string; ms?: number });

describe('the stop', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs the hooks in reverse order, once, past a failing one', async () => {
    const { log, lines } = recordingLogger('info');
    const shutdown = createShutdown(log);
    const ran: string[] = [];
    const seen: (string | undefined)[] = [];
    shutdown.add('first', () => void ran.push('first'));
    shutdown.add('broken', () => {
      ran.push('broken');
      throw new Error('cannot close');
    });
    shutdown.add('last', async () => {
      ran.push('last');
      seen.push(shutdown.pending);
    });
    expect(shutdown.stopping).toBe(false);
    const [a, b] = [shutdown.run('SIGTERM'), shutdown.run('SIGINT')];
    await Promise.all([a, b]);
    expect(ran).toEqual(['last', 'broken', 'first']);
    expect(seen).toEqual(['last']);
    expect(shutdown.pending).toBeUndefined();
    expect(shutdown.stopping).toBe(true);
    expect(shutdown.signal.reason).toBe('SIGTERM');
    const m = messages(lines);
    expect(m.find((l) => l.msg === 'shutdown hook failed')?.hook).toBe('broken');
    expect(m.at(-1)?.msg).toBe('stopped');
  });

  it('a stop asked for while starting aborts the signal at once, then runs every hook once the start-up settles', async () => {
    const { log } = recordingLogger('info');
    const shutdown = createShutdown(log);
    const ran: string[] = [];
    let finishStart!: () => void;
    const starting = new Promise<void>((r) => (finishStart = r));
    shutdown.startingUntil(starting);
    shutdown.add('database', () => void ran.push('database'));
    const stopped = shutdown.run('SIGTERM');
    expect(shutdown.signal.aborted).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).toEqual([]);
    expect(shutdown.pending).toBe('start-up');
    // The start-up goes on to its next step and registers what it started.
    shutdown.add('streams', () => void ran.push('streams'));
    finishStart();
    await stopped;
    expect(ran).toEqual(['streams', 'database']);
  });

  it('a start-up that fails still lets the hooks run', async () => {
    const { log } = recordingLogger('info');
    const shutdown = createShutdown(log);
    const ran: string[] = [];
    const starting = Promise.reject(new Error('interrupted'));
    shutdown.startingUntil(starting);
    shutdown.add('database', () => void ran.push('database'));
    await shutdown.run('SIGTERM');
    expect(ran).toEqual(['database']);
  });

  it('a step that takes long is named every few seconds while it runs; a quick one says nothing', async () => {
    vi.useFakeTimers();
    const { log, lines } = recordingLogger('warn');
    await watchedStep(log, 'quick', async () => 1);
    let finish!: (v: string) => void;
    const slow = watchedStep(log, 'indexer', () => new Promise<string>((r) => (finish = r)));
    await vi.advanceTimersByTimeAsync(4_999);
    expect(lines).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(10_001);
    const m = messages(lines);
    expect(m.map((l) => [l.msg, l.step, l.ms])).toEqual([
      ['still stopping', 'indexer', 5_000],
      ['still stopping', 'indexer', 10_000],
      ['still stopping', 'indexer', 15_000],
    ]);
    finish('done');
    expect(await slow).toBe('done');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(lines).toHaveLength(3);
  });

  it('a step that means to take time (the drain) is called slow only past that time', async () => {
    vi.useFakeTimers();
    const { log, lines } = recordingLogger('warn');
    let finish!: () => void;
    const drain = watchedStep(log, 'drain', () => new Promise<void>((r) => (finish = r)), { quietMs: 20_000 });
    await vi.advanceTimersByTimeAsync(24_999);
    expect(lines).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(messages(lines).map((l) => [l.step, l.ms])).toEqual([['drain', 25_000]]);
    finish();
    await drain;
  });

  it('a step that throws rethrows and stops warning', async () => {
    vi.useFakeTimers();
    const { log, lines } = recordingLogger('warn');
    await expect(watchedStep(log, 'redis', () => Promise.reject(new Error('gone')))).rejects.toThrow('gone');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(lines).toHaveLength(0);
  });
});
