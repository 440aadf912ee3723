// Every bench script a person runs answers --help with what it measures and its options, and
// measures nothing (exit 0 at once, no service started).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { headerComment } from '../../../bench/args.js';
import { BENCHES } from '../../../bench/run.js';

// Every script `npm run bench` runs, and the three a person runs beside them.
const SCRIPTS = [...BENCHES.map((b) => b.name), 'live', 'profile', 'run'];

// One after another: spawnSync holds the thread, so concurrent tests would run one by one anyway
// while every one's time limit ran from the start (14 scripts on a loaded machine passed it).
describe('bench scripts answer --help', () => {
  it.each(SCRIPTS)('bench/%s.ts --help', (name) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`, '--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/bench|benchmark|profile/i);
    expect(r.stdout).toContain('Options:');
    expect(r.stdout).toContain('--help, -h');
    expect(r.stdout).not.toMatch(/^\s*\/?\*/m);
  });

  it('reads a block comment and a line-comment header', () => {
    expect(headerComment('/**\n * One.\n * Two.\n * @module\n */\nconst x = 1;')).toBe('One.\nTwo.');
    expect(headerComment('// First line.\n// Second line.\nimport x from "y";')).toBe('First line.\nSecond line.');
  });
});
