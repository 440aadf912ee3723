/**
 * Builds dist/client (`npm run build:client`) for the tests that import the published package.
 * Test files run in parallel workers: a directory lock keeps two builds from writing the same
 * files while another test reads them.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from './fixtures.js';

const run = promisify(execFile);

/** Runs `npm run build:client` under a lock shared by every test worker. */
export async function buildClient(timeoutMs = 180_000): Promise<void> {
  const lock = join(projectRoot, '.blockwire', 'client-build.lock');
  await mkdir(join(projectRoot, '.blockwire'), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock left by a killed run: a build never takes this long.
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > timeoutMs) await rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`another client build held ${lock} for ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    await run('npm', ['run', '--silent', 'build:client'], { cwd: projectRoot, timeout: timeoutMs });
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
