// The progress-aware wait of the tests: it must keep waiting while the work moves, fail on a
// stall, and fail after its cap even when the work keeps moving.
import { describe, expect, it } from 'vitest';
import { waitForProgress } from '../../support/wait.js';

describe('waitForProgress', () => {
  it('outlasts its stall limit while the progress value keeps changing, and returns the check value', async () => {
    const start = Date.now();
    let n = 0;
    const v = await waitForProgress(
      'n to reach 30',
      () => (n >= 30 ? n : false),
      () => ++n,
      200,
      60_000,
      20,
    );
    expect(v).toBe(30);
    expect(Date.now() - start).toBeGreaterThan(200); // 30 polls of 20 ms: past the 200 ms stall limit
  });

  it('fails when the progress value has not changed for the stall limit, with the last error', async () => {
    await expect(
      waitForProgress(
        'a stuck index',
        () => {
          throw new Error('index at 27, node at 101');
        },
        () => 27,
        150,
        60_000,
        10,
      ),
    ).rejects.toThrow(/no progress \(27\) for 150 ms\) waiting for a stuck index: index at 27, node at 101/);
  });

  it('fails after the cap even while progress changes', async () => {
    let n = 0;
    await expect(
      waitForProgress(
        'never',
        () => false,
        () => ++n,
        1_000,
        120,
        10,
      ),
    ).rejects.toThrow(/\(120 ms in all\) waiting for never/);
  });

  it('a progress probe that throws counts as no progress', async () => {
    await expect(
      waitForProgress(
        'no probe',
        () => false,
        () => {
          throw new Error('probe down');
        },
        100,
        60_000,
        10,
      ),
    ).rejects.toThrow(/no progress \(none\) for 100 ms/);
  });
});
