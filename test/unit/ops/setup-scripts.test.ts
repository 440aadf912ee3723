/**
 * The quick start installs what starting needs and nothing only the tests use: scripts/setup.sh
 * (run by scripts/start.sh) installs redis-server, bitcoind's runtime libraries and the npm
 * dependencies; scripts/setup-test.sh (run by scripts/test.sh, not by start.sh) installs
 * docker-compose, Chromium, promtool, Electrum and redis-sentinel.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../support/fixtures.js';

const read = (f: string) => readFile(join(projectRoot, 'scripts', f), 'utf8');

/** The Debian packages a setup script installs (apt_install COMMAND PACKAGE, apt_install_libs WHY PKG…). */
function packages(script: string): string[] {
  const out: string[] = [];
  for (const line of script.split('\n')) {
    const one = /^apt_install\s+\S+\s+(\S+)/.exec(line);
    if (one) out.push(one[1]!);
    const libs = /^apt_install_libs\s+'[^']*'\s+(.*)$/.exec(line);
    if (libs) out.push(...libs[1]!.trim().split(/\s+/));
  }
  return out.sort();
}

describe('setup scripts', () => {
  it('setup.sh (the quick start) installs only what starting needs', async () => {
    const setup = await read('setup.sh');
    expect(packages(setup)).toEqual([
      'libevent-core-2.1-7',
      'libevent-extra-2.1-7',
      'libevent-pthreads-2.1-7',
      'libsqlite3-0',
      'libzmq5',
      'redis-server',
    ]);
    expect(setup).toMatch(/npm ci/);
    const commands = setup
      .split('\n')
      .filter((l) => !l.trimStart().startsWith('#'))
      .join('\n');
    expect(commands).not.toMatch(/chromium|docker-compose|prometheus|setup-test/);
  });

  it('setup-test.sh installs what only the tests use; test.sh runs both, start.sh only setup.sh', async () => {
    const testOnly = await read('setup-test.sh');
    expect(packages(testOnly)).toEqual([
      'buildah',
      'catatonit',
      'chromium',
      'docker-compose',
      'electrum',
      'golang-github-containernetworking-plugin-dnsname',
      'podman',
      'prometheus',
      'redis-sentinel',
      'runc',
    ]);
    // pg_isready for the PostgreSQL image's healthcheck, only when no PostgreSQL client is there
    expect(testOnly).toMatch(/pg_isready[^\n]*postgresql-client/);
    const test = await read('test.sh');
    expect(test.indexOf('./scripts/setup.sh')).toBeGreaterThan(0);
    expect(test.indexOf('./scripts/setup-test.sh')).toBeGreaterThan(test.indexOf('./scripts/setup.sh'));
    const start = await read('start.sh');
    expect(start).toMatch(/\.\/scripts\/setup\.sh/);
    expect(start).not.toMatch(/setup-test/);
  });
});
