/**
 * The console views' lane (api/console/page/view.ts): an action started while a refresh is
 * reading runs after it, never in its middle (a wallet deleted between the list and its
 * balance read made the browser log a failed load); a failed call does not stop the next.
 */
import { expect, it } from 'vitest';
import { lane } from '../../../api/console/page/view.js';

const tick = () => new Promise<void>((r) => setTimeout(r, 1));

it('runs each call after the previous one has ended, in call order', async () => {
  const run = lane();
  const log: string[] = [];
  const step = (name: string, waits: number) => async () => {
    log.push(`${name} start`);
    for (let i = 0; i < waits; i++) await tick();
    log.push(`${name} end`);
    return name;
  };
  const results = await Promise.all([run(step('refresh', 3)), run(step('delete', 1)), run(step('refresh again', 0))]);
  expect(results).toEqual(['refresh', 'delete', 'refresh again']);
  expect(log).toEqual(['refresh start', 'refresh end', 'delete start', 'delete end', 'refresh again start', 'refresh again end']);
});

it('goes on after a call that fails, and hands its failure to its caller only', async () => {
  const run = lane();
  const failed = run(async () => {
    await tick();
    throw new Error('404 wallet not found');
  });
  const next = run(() => Promise.resolve('listed'));
  await expect(failed).rejects.toThrow('404 wallet not found');
  await expect(next).resolves.toBe('listed');
});
