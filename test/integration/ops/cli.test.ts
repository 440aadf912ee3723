/**
 * The command line as a newcomer tries it: `--version`; `--help` on every command and every
 * `keys` action prints its usage on stdout and exits 0 (without touching a database); `start
 * --help` names every role; `config --check` reaches what is configured; output piped
 * into a reader that stops early (`| head -1`) ends quietly, with no EPIPE stack trace.
 */
import { freePort } from '../../../cli/embedded/free-port.js';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { commands } from '../../../cli/main.js';
import { CONCRETE_ROLES } from '../../../cli/compose.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
const bin = join(projectRoot, 'bin', 'blockwire.js');
// A database nobody listens on: a command that tried to use it would fail, not print usage.
const env = { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'silent' };

async function blockwire(args: string[], withEnv: NodeJS.ProcessEnv = env): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [bin, ...args], { env: withEnv, timeout: 60_000 }).then(
    (r) => ({ code: 0, ...r }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

describe('blockwire command line', () => {
  it('--version prints the package version', async () => {
    const { version } = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await blockwire([flag]);
      expect(r).toMatchObject({ code: 0, stdout: `blockwire ${version}\n` });
    }
  });

  it('--help on every command and keys action exits 0 with its usage on stdout', async () => {
    const names = Object.keys(commands);
    expect(names).toContain('faucet');
    const cases = [
      ['--help'],
      ...names.map((n) => [n, '--help']),
      ['decode', '-h'],
      ['keys', 'create', '--help'],
      ['keys', 'list', '--help'],
      ['keys', 'revoke', '-h'],
      ['migrate', 'status', '--help'],
    ];
    for (const args of cases) {
      const r = await blockwire(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout, args.join(' ')).toMatch(/^usage:/);
      expect(r.stderr, args.join(' ')).toBe('');
    }
  }, 600_000);

  it('config --check reaches the configured database, Redis and node, with the messages of start', async () => {
    // (a free PORT: the default one may be another test's quick start, and a busy port exits 2 first)
    const unreachable = { ...env, BITCOIND_RPC_URL: 'http://u:p@127.0.0.1:1', LOG_LEVEL: 'silent', PORT: String(await freePort()) };
    const check = await blockwire(['config', '--check'], unreachable);
    expect(check.code, check.stderr).toBe(1);
    expect(check.stdout).toBe('');
    const said = check.stderr.split('\n');
    expect(said[0]).toBe('blockwire config: cannot use what is configured:');
    for (const setting of ['DATABASE_URL', 'REDIS_URL', 'BITCOIND_RPC_URL'])
      expect(
        said.filter((l) => l.startsWith(`  ${setting} `)),
        check.stderr,
      ).toHaveLength(1);
    // start says the same of the database and Redis (the node it would wait for).
    const start = await blockwire(['start'], unreachable);
    expect(start.code).toBe(1);
    const startSaid = start.stderr.split('\n').filter((l) => l.startsWith('  '));
    expect(startSaid.length).toBeGreaterThan(0);
    for (const line of startSaid) expect(said).toContain(line);
  });

  it('start --help names every role', async () => {
    const r = await blockwire(['start', '--help']);
    const roles = /--role all\|([\w,]+)\]/.exec(r.stdout)?.[1]?.split(',');
    expect(roles?.sort()).toEqual([...CONCRETE_ROLES].sort());
  });

  it('piped into a reader that stops early, output ends without an EPIPE stack trace', async () => {
    // `true` reads nothing and exits at once: every write of the command meets a closed pipe.
    for (const args of ['config --markdown', 'config', '--help', 'status --help']) {
      const r = await run('bash', ['-c', `set -o pipefail; "${process.execPath}" "${bin}" ${args} | true; echo "exit $?"`], {
        env,
        timeout: 60_000,
      });
      expect(r.stderr, args).toBe('');
      expect(r.stdout.trim(), args).toBe('exit 0');
    }
    const head = await run('bash', ['-c', `"${process.execPath}" "${bin}" config --markdown | head -1`], { env, timeout: 60_000 });
    expect(head).toEqual({ stdout: '# Configuration\n', stderr: '' });
  });
});
