// The order test files start in (test/support/sequencer.ts): a fresh clone has no vitest cache,
// so the record of the last full run decides it.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { longestFirst, recordedDurations } from '../../support/sequencer.js';

describe('test file order', () => {
  it('runs each group in turn: files the record does not know first, then the longest first', () => {
    const seconds = new Map([
      ['unit:a', 1],
      ['unit:b', 5],
      ['integration:long', 170],
      ['integration:short', 2],
      ['integration:mid', 40],
    ]);
    const specs = [
      { key: 'integration:short', group: 1 },
      { key: 'integration:mid', group: 1 },
      { key: 'unit:a', group: 0 },
      { key: 'integration:new', group: 1 },
      { key: 'integration:long', group: 1 },
      { key: 'unit:b', group: 0 },
    ];
    const order = longestFirst(
      specs,
      (s) => s.group,
      (s) => s.key,
      seconds,
    ).map((s) => s.key);
    expect(order).toEqual(['unit:b', 'unit:a', 'integration:new', 'integration:long', 'integration:mid', 'integration:short']);
  });

  it('keys its record by project and test file, as vitest keys its cache', () => {
    const seconds = recordedDurations();
    expect(seconds.size).toBeGreaterThan(100);
    for (const [key, s] of seconds) {
      expect(key).toMatch(/^(unit|integration|image):test\/(unit|integration|image)\/.+\.test\.ts$/);
      expect(s).toBeGreaterThanOrEqual(0);
    }
    // Its longest files exist (they matter most to the order: a renamed one must carry its figure along).
    const longest = [...seconds].sort((x, y) => y[1] - x[1]).slice(0, 5);
    for (const [key] of longest) expect(existsSync(key.slice(key.indexOf(':') + 1)), key).toBe(true);
  });
});
