/**
 * The order test files start in: each group (vitest.config.ts puts every project in one)
 * longest first, by the seconds recorded in test/durations.json. Two workers share the files; a
 * long file that starts last leaves the other worker idle for its whole length, so the long ones
 * go first and the short ones fill in behind them. Vitest's own order needs its local cache of the last run;
 * a fresh clone (CI) has none and falls back to file size, which put a 3-minute file near the
 * end. Files the record does not know (new ones) start first, as vitest runs unknown files
 * first; refresh the record with `node --import tsx scripts/test-durations.ts` after a full run.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each file took in a full run, keyed `project:path` (as vitest's cache keys them). */
export function recordedDurations(file = new URL('../durations.json', import.meta.url)): Map<string, number> {
  const json = JSON.parse(readFileSync(file, 'utf8')) as { files: Record<string, number> };
  return new Map(Object.entries(json.files));
}

/** `specs` in start order: by group, then unknown files, then the longest recorded first. */
export function longestFirst<T>(specs: T[], group: (s: T) => number, key: (s: T) => string, seconds: Map<string, number>): T[] {
  const known = (s: T) => seconds.get(key(s)) ?? Infinity;
  return [...specs].sort((a, b) => group(a) - group(b) || known(b) - known(a) || key(a).localeCompare(key(b)));
}

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    return longestFirst(
      files,
      (f) => f.project.config.sequence.groupOrder,
      (f) => `${f.project.name}:${relative(root, f.moduleId)}`,
      recordedDurations(),
    );
  }
}
