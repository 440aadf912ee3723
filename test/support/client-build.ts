/**
 * Builds client/dist (`npm run build:client`, the @blockwire/client package's own build) for the
 * tests that import the package as users do. Test files run in parallel workers: a directory lock
 * keeps two builds apart, and a build whose sources have not changed since the last one is
 * skipped, so a test reading client/dist never sees another test rewrite it.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from './fixtures.js';

const run = promisify(execFile);

/** The SDK package's folder (its package.json, sources and, once built, dist/). */
export const clientDir = join(projectRoot, 'client');

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
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > timeoutMs) await rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`another client build held ${lock} for ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    const stampFile = join(projectRoot, '.blockwire', 'client-build.stamp');
    const stamp = await sourcesStamp();
    const built = existsSync(join(clientDir, 'dist', 'index.js')) && (await readFile(stampFile, 'utf8').catch(() => '')) === stamp;
    if (!built) {
      await rm(stampFile, { force: true });
      await run('npm', ['run', '--silent', 'build:client'], { cwd: projectRoot, timeout: timeoutMs });
      await writeFile(stampFile, stamp);
    }
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Names, sizes and modification times of what the client build reads. */
async function sourcesStamp(): Promise<string> {
  const h = createHash('sha256');
  const files = (await readdir(clientDir, { recursive: true }))
    .filter((f) => !f.startsWith('dist') && (f.endsWith('.ts') || f.endsWith('.json')))
    .sort();
  for (const f of files.map((x) => join('client', x))) {
    const st = await stat(join(projectRoot, f));
    h.update(`${f} ${st.size} ${st.mtimeMs}\n`);
  }
  return h.digest('hex');
}
