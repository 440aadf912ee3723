/**
 * Writes test/durations.json, the seconds each test file took, from vitest's cache of the last
 * run (node_modules/.vite/vitest/…/results.json): run it after a full `npx vitest run` on an
 * idle machine. The suite's sequencer (test/support/sequencer.ts) starts the longest files first
 * by it; a fresh clone has no cache of its own.
 * @module
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cacheRoot = join(root, 'node_modules/.vite/vitest');
const caches = existsSync(cacheRoot)
  ? readdirSync(cacheRoot)
      .map((d) => join(cacheRoot, d, 'results.json'))
      .filter((f) => existsSync(f))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  : [];
if (caches.length === 0) {
  process.stderr.write(`no vitest results under ${cacheRoot}: run the suite first\n`);
  process.exit(1);
}
const cache = JSON.parse(readFileSync(caches[0]!, 'utf8')) as { results: [string, { duration?: number; failed?: boolean }][] };
const files: Record<string, number> = {};
for (const [key, r] of cache.results.sort((a, b) => (b[1].duration ?? 0) - (a[1].duration ?? 0))) {
  const path = key.slice(key.indexOf(':') + 1);
  if (r.duration !== undefined && existsSync(join(root, path))) files[key] = Math.round(r.duration / 100) / 10;
}
const out = join(root, 'test/durations.json');
writeFileSync(
  out,
  `${JSON.stringify({ about: 'Seconds per test file of a full run (scripts/test-durations.ts); the order files start in (test/support/sequencer.ts).', files }, null, 2)}\n`,
);
process.stdout.write(`${out}: ${Object.keys(files).length} files from ${caches[0]}\n`);
