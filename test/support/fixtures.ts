/**
 * The shared fixtures (../shared/fixtures beside the project root), read in place and never
 * copied. When they are missing, a test fails with a clear message if CI is set and is skipped
 * with a notice otherwise: use `describeFixtures` / `fixtureDir`.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe } from 'vitest';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** BLOCKWIRE_FIXTURES overrides the location (e.g. when the checkout is not beside ../shared). */
export const fixturesRoot = process.env.BLOCKWIRE_FIXTURES ?? resolve(projectRoot, '..', 'shared', 'fixtures');

export const fixturesPresent = existsSync(fixturesRoot);

/** Absolute path of a fixture file; throws a clear error if the fixtures are absent. */
export function fixturePath(...parts: string[]): string {
  const p = join(fixturesRoot, ...parts);
  if (!existsSync(p)) {
    throw new Error(
      `fixture missing: ${p} (the shared fixtures must sit at ../shared/fixtures beside the project, or set BLOCKWIRE_FIXTURES)`,
    );
  }
  return p;
}

export async function readFixture(...parts: string[]): Promise<Buffer> {
  return readFile(fixturePath(...parts));
}

export async function readFixtureJson<T = unknown>(...parts: string[]): Promise<T> {
  return JSON.parse((await readFile(fixturePath(...parts))).toString('utf8')) as T;
}

/** Parses a .jsonl fixture into objects. */
export async function readFixtureJsonl<T = unknown>(...parts: string[]): Promise<T[]> {
  const text = (await readFile(fixturePath(...parts))).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/**
 * `describe` for suites that need the fixtures: runs them when present; when absent, fails
 * under CI and skips with a notice otherwise.
 */
export function describeFixtures(name: string, fn: () => void): void {
  if (fixturesPresent) {
    describe(name, fn);
  } else if (process.env.CI) {
    describe(name, () => {
      throw new Error(`shared fixtures not found at ${fixturesRoot}; CI requires them`);
    });
  } else {
    process.stderr.write(`notice: skipping '${name}': shared fixtures not found at ${fixturesRoot}\n`);
    describe.skip(name, fn);
  }
}
