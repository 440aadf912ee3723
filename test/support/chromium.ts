/**
 * Debian's Chromium for the browser tests (scripts/setup-test.sh installs it), driven by
 * playwright-core with no browser download: its path, the flags it runs with here, and
 * `describeBrowser`, which runs a suite when it is installed (and fails under CI without it).
 */
import { existsSync } from 'node:fs';
import { describe, it } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';
// Without the background-networking flags Chromium's own connections are refused on machines
// without outside network (this project's CI included).
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Runs when Chromium is installed; without it, fails under CI and skips with a notice otherwise. */
export function describeBrowser(name: string, fn: () => void): void {
  if (existsSync(CHROMIUM)) describe(name, fn);
  else if (process.env.CI) {
    describe(name, () => {
      it('needs Chromium', () => {
        throw new Error(`${CHROMIUM} not found; CI requires it (./scripts/setup-test.sh installs Debian's chromium)`);
      });
    });
  } else {
    process.stderr.write(`notice: skipping '${name}': ${CHROMIUM} not found (./scripts/setup-test.sh installs it)\n`);
    describe.skip(name, fn);
  }
}
