/**
 * The Nodes Blockwire supports are the ones its dependencies accept: `npm ci` on any of them
 * prints no EBADENGINE warning a user would have to look up. Each line package.json's
 * `engines.node` admits (`^22.13.0 || >=24`: Node 22 from 22.13, Node 24) is checked at its
 * oldest release against the `engines.node` of every package in package-lock.json — the same
 * check npm makes. (Node 20, past its end of life, is left out because fastify's cookie@2 requires
 * 22; the tests still run on it.) The range is read with `semver`, npm's own.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../support/fixtures.js';

/** npm's range reader (in the tree through the dev tools' dependencies; untyped, so the three calls used are typed here). */
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  minVersion(range: string): { version: string } | null;
  major(version: string): number;
};

type Lock = { packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }> };

describe('engines.node', () => {
  it('names Node 22 and 24, and every dependency accepts the oldest release of each', async () => {
    const pkg = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { engines: { node: string } };
    const lock = JSON.parse(await readFile(join(projectRoot, 'package-lock.json'), 'utf8')) as Lock;
    const oldest = pkg.engines.node.split('||').map((part) => semver.minVersion(part)!.version);
    expect(oldest.map((v) => semver.major(v)).sort()).toEqual([22, 24]);
    const refused: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (!path || !range) continue;
      for (const v of oldest)
        if (!semver.satisfies(v, range)) refused.push(`${path.replace(/^.*node_modules\//, '')} needs node ${range}: refuses ${v}`);
    }
    expect(refused).toEqual([]);
  });
});
