import { describe, expect, it } from 'vitest';
import { batchPerTick } from '../../../api/cache/tick-batch.js';

describe('batchPerTick', () => {
  it('answers lookups of the same turn with one load, each caller its own value', async () => {
    const loads: number[][] = [];
    const get = batchPerTick(async (keys: number[]) => {
      loads.push(keys);
      return keys.map((k) => k * 10);
    });
    const answers = await Promise.all([get(1), get(2), get(3)]);
    expect(answers).toEqual([10, 20, 30]);
    expect(loads).toEqual([[1, 2, 3]]);
    expect(await get(4)).toBe(40); // a later turn: a load of its own
    expect(loads).toEqual([[1, 2, 3], [4]]);
  });

  it('splits a large turn into loads of at most `max` keys', async () => {
    const loads: number[][] = [];
    const get = batchPerTick(async (keys: number[]) => {
      loads.push(keys);
      return keys.map((k) => -k);
    }, 2);
    expect(await Promise.all([1, 2, 3, 4, 5].map(get))).toEqual([-1, -2, -3, -4, -5]);
    expect(loads).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('rejects every caller of a failed load, and of a load that answers the wrong number of values', async () => {
    const failing = batchPerTick(async (): Promise<number[]> => {
      throw new Error('database gone');
    });
    const r = await Promise.allSettled([failing(1), failing(2)]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect((r[0] as PromiseRejectedResult).reason).toHaveProperty('message', 'database gone');

    const throwsAtOnce = batchPerTick((): Promise<number[]> => {
      throw new Error('bad keys');
    });
    await expect(throwsAtOnce(1)).rejects.toThrow('bad keys');

    const short = batchPerTick(async (keys: number[]) => keys.slice(1));
    await expect(Promise.all([short(1), short(2)])).rejects.toThrow('batch load answered 1 values for 2 keys');
  });
});
