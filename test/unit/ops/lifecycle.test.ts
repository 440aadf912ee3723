/**
 * The stop's steps: hooks run last-registered first, once, a failing hook does not stop the
 * others, and a step that does not finish says every few seconds which step it is.
 */
import { describe, expect, it } from 'vitest';
import { createShutdown, watchedStep } from '../../../cli/lifecycle.js';
import { recordingLogger } from '../../support/log-lines.js';

const messages = (lines: string[]) => lines.map((l) => JSON.parse(l) as { msg: string; step?: string; hook?: string; ms?: number });

describe('the stop', () => {
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

  it('a step that takes long is named while it runs; a quick one says nothing', async () => {
    const { log, lines } = recordingLogger('warn');
    await watchedStep(log, 'quick', async () => 1, 50);
    expect(lines).toHaveLength(0);
    const v = await watchedStep(log, 'indexer', () => new Promise((r) => setTimeout(() => r('done'), 180)), 50);
    expect(v).toBe('done');
    const slow = messages(lines);
    expect(slow.length).toBeGreaterThanOrEqual(2);
    expect(slow.every((l) => l.msg === 'still stopping' && l.step === 'indexer')).toBe(true);
    expect(slow[1]!.ms).toBeGreaterThan(slow[0]!.ms!);
    // Finished: no more warnings.
    const count = lines.length;
    await new Promise((r) => setTimeout(r, 120));
    expect(lines).toHaveLength(count);
  });

  it('a step that throws rethrows and stops warning', async () => {
    const { log, lines } = recordingLogger('warn');
    await expect(watchedStep(log, 'redis', () => Promise.reject(new Error('gone')), 30)).rejects.toThrow('gone');
    await new Promise((r) => setTimeout(r, 100));
    expect(lines).toHaveLength(0);
  });
});
