/**
 * Every shell command of README.md and docs/*.md, run as far as it can run here, so that the
 * docs cannot drift from what the commands do:
 * - `blockwire …` (also inside `docker compose exec` and `docker run … blockwire:local`): the
 *   command exists, `--help` of it exits 0, and each option the docs give is in its usage; the
 *   ones that finish on their own without a node or a deployment (`config --check`) are run;
 * - `docker compose …`: the same flags, env files and profiles, with `config -q` instead of
 *   `up -d` (Debian's docker-compose, no engine needed);
 * - scripts: exist and are executable (the quick-start and CI tests run them);
 * - `curl` lines to http://127.0.0.1:3000 run, as written, against a quick start started here
 *   (`blockwire start`, nothing configured; its API key as `KEY`, and the `id` or `stampid` an
 *   example answers as `WALLET` or `STAMP` for the lines after it), each answering 2xx; so do
 *   the headless Electrum lines (Debian's electrum, which scripts/setup-test.sh installs);
 * - what needs something that is not here (Electrum's GUI, Docker's engine for
 *   build/run) is listed by name below, and any other command fails the test until it is
 *   classified.
 * client/README.md is read too; its SDK examples are run by test/integration/client/readme.test.ts.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawnBlockwire, type BlockwireProcess } from './processes.js';
import { banner } from './quickstart-banner.js';
import { commands } from '../../../cli/main.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
const bin = join(projectRoot, 'bin', 'blockwire.js');
const quietEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'silent' };

type Line = { file: string; text: string };

/** The command lines of the ```sh blocks of a Markdown text (comments and blank lines dropped). */
function commandLines(file: string, markdown: string): Line[] {
  const out: Line[] = [];
  let inBlock = false;
  for (const raw of markdown.split('\n')) {
    if (/^```(sh|bash|shell)\s*$/.test(raw.trim())) inBlock = true;
    else if (raw.trim().startsWith('```')) inBlock = false;
    else if (inBlock) {
      const text = raw.replace(/\s+#\s.*$/, '').trim();
      const last = out[out.length - 1];
      // A line continued with a backslash is one command with the next.
      if (last?.file === file && last.text.endsWith('\\')) last.text = `${last.text.slice(0, -1).trimEnd()} ${text}`;
      else if (text && !text.startsWith('#')) out.push({ file, text });
    }
  }
  return out;
}

/** Commands that need what this machine does not have, with the reason. */
const NOT_HERE: [RegExp, string][] = [
  [/^electrum (?!--regtest -D )/, "Electrum's Qt GUI, which needs a display (the headless lines are run against the quick start below)"],
  [/^docker build /, "Docker's engine (test/integration/ops/deploy.test.ts lints the Dockerfile, ops/dist.test.ts runs what it builds)"],
  [/^cp deploy\/\S+\.env /, 'a copy for the user to edit (the env file itself is validated with docker compose below)'],
  [
    /^(CONTAINERS_CONF=\S+ )?podman /,
    'a container engine and the images: test/image/compose-stack.test.ts runs these steps (the vitest project `image`)',
  ],
  [
    /^docker-compose -f compose\.yaml -f deploy\/local-images\//,
    'the local images and podman: test/image/compose-stack.test.ts brings this stack up (the vitest project `image`)',
  ],
];

let lines: Line[] = [];
let usage: Map<string, string>;

/** `blockwire` arguments of a line, or undefined when it runs no blockwire command. */
function blockwireArgs(text: string): string[] | undefined {
  const m = /(?:^\.\/bin\/blockwire\.js|^blockwire|\bexec \w+ blockwire|^docker run .*blockwire:local)\s+(.*)$/.exec(text);
  return m ? m[1]!.split(/\s+/).filter(Boolean) : undefined;
}

beforeAll(async () => {
  const docs = (await readdir(join(projectRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => join('docs', f));
  for (const f of ['README.md', ...docs, join('client', 'README.md')])
    lines.push(...commandLines(f, await readFile(join(projectRoot, f), 'utf8')));
  lines = lines.filter((l) => !l.text.startsWith('export '));
  // The usage of every command the docs run (`--help`), read once.
  usage = new Map();
  const names = new Set(
    lines.map((l) => blockwireArgs(l.text)?.find((a) => !a.startsWith('-'))).filter((n): n is string => n !== undefined),
  );
  for (const name of names) {
    if (!(name in commands)) continue;
    const r = await run(process.execPath, [bin, name, '--help'], { env: quietEnv, timeout: 120_000 });
    usage.set(name, r.stdout);
  }
}, 600_000);

describe('the commands of README.md and docs/*.md', () => {
  it('finds the documented commands', () => {
    expect(lines.length).toBeGreaterThan(15);
    expect(lines.some((l) => l.file === 'README.md' && l.text === './scripts/start.sh')).toBe(true);
  });

  it('the README links every page of docs/', async () => {
    const readme = await readFile(join(projectRoot, 'README.md'), 'utf8');
    const docs = (await readdir(join(projectRoot, 'docs'))).filter((f) => f.endsWith('.md'));
    expect(docs.filter((f) => !readme.includes(`(docs/${f})`))).toEqual([]);
  });

  it('blockwire commands exist and accept every option the docs give them', () => {
    const seen = lines.filter((l) => blockwireArgs(l.text));
    expect(seen.length).toBeGreaterThan(5);
    for (const l of seen) {
      const args = blockwireArgs(l.text)!;
      const name = args.find((a) => !a.startsWith('-'))!;
      if (name === undefined || args[0] === '--help') continue;
      expect(Object.keys(commands), `${l.file}: ${l.text}`).toContain(name);
      for (const flag of args.filter((a) => a.startsWith('--'))) expect(usage.get(name), `${l.file}: ${l.text}: ${flag}`).toContain(flag);
    }
  });

  it('the blockwire commands that finish here are run and succeed', async () => {
    const runnable = lines.filter((l) => /^\.\/bin\/blockwire\.js config --check$/.test(l.text));
    expect(runnable.length).toBeGreaterThan(0);
    for (const l of runnable) {
      const r = await run(process.execPath, [bin, ...blockwireArgs(l.text)!], { env: quietEnv, cwd: projectRoot, timeout: 120_000 });
      expect(r.stdout, l.text).toBe('configuration OK\n');
    }
    const help = await run(process.execPath, [bin, '--help'], { env: quietEnv });
    expect(help.stdout).toMatch(/^usage: blockwire/);
  }, 300_000);

  it('docker compose lines are valid with their env files and profiles (config -q for up -d)', async () => {
    const compose = lines.filter((l) => /^docker compose /.test(l.text) && !/ exec /.test(l.text));
    expect(compose.length).toBeGreaterThan(3);
    for (const l of compose) {
      const args = l.text
        .replace(/^docker compose /, '')
        .replace(/\s+(up -d|config)$/, '')
        .split(/\s+/)
        .filter(Boolean);
      const envAt = args.indexOf('--env-file');
      // The user's copy of an env file (`cp deploy/signet.env .env.signet`) is the file it copies.
      if (envAt >= 0 && !existsSync(join(projectRoot, args[envAt + 1]!)))
        args[envAt + 1] = args[envAt + 1]!.replace(/^\.env\.(\w+)$/, 'deploy/$1.env');
      const r = await run('docker-compose', [...args, '-f', 'compose.yaml', 'config', '-q'], { cwd: projectRoot, timeout: 120_000 }).then(
        () => 0,
        (err: { code: number; stderr: string }) => `${err.code}: ${err.stderr}`,
      );
      expect(r, `${l.file}: ${l.text}`).toBe(0);
    }
  }, 300_000);

  it('every other command is a script of the checkout or is listed with what it needs', () => {
    for (const l of lines) {
      if (blockwireArgs(l.text) || /^docker compose /.test(l.text) || QUICK_START_CURL.test(l.text) || QUICK_START_ELECTRUM.test(l.text))
        continue;
      if (/^\.\/scripts\/[\w-]+\.sh$/.test(l.text)) {
        const script = join(projectRoot, l.text);
        expect(existsSync(script), l.text).toBe(true);
        expect(() => accessSync(script, constants.X_OK), l.text).not.toThrow();
        continue;
      }
      const why = NOT_HERE.find(([re]) => re.test(l.text));
      expect(why, `${l.file}: '${l.text}' is neither run here nor listed in NOT_HERE`).toBeDefined();
    }
  });
});

/** A curl line the quick start serves: its API's address as the docs write it. */
const QUICK_START_CURL = /^curl .*http:\/\/127\.0\.0\.1:3000\//;
const QUICK_START_API = 'http://127.0.0.1:3000';
/** A headless Electrum line for the quick start's regtest server (docs/electrum.md). */
const QUICK_START_ELECTRUM = /^electrum --regtest -D /;

describe('the curl and Electrum examples of README.md, docs/*.md and client/README.md, against a quick start', () => {
  let proc: BlockwireProcess | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await proc?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it('each runs as written and answers 2xx', async () => {
    const curls = lines.filter((l) => QUICK_START_CURL.test(l.text));
    expect(curls.map((l) => l.file)).toEqual(expect.arrayContaining(['docs/wallets.md', 'docs/stamps.md', 'docs/operations.md']));
    dataDir = await mkdtemp(join(tmpdir(), 'blockwire-docs-'));
    // The stand-in (no bitcoind on the PATH), blocks only when a line asks for them.
    const path = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d && !existsSync(join(d, 'bitcoind')));
    proc = spawnBlockwire('docs-quickstart', ['start'], {
      BLOCKWIRE_DATA_DIR: dataDir,
      BLOCKWIRE_DEVNODE_MINE_EVERY: '0',
      PATH: path.join(':'),
    });
    const started = await banner(proc, 480_000);
    // The docs' address is the quick start's when 3000 is free; on a busy machine it took another port.
    const vars: Record<string, string> = { KEY: started.key };
    for (const l of curls) {
      const text = l.text.replaceAll(QUICK_START_API, started.apiBase);
      const r = await run('sh', ['-c', `${text} --silent --show-error --fail-with-body`], {
        env: { PATH: process.env.PATH ?? '', ...vars },
        timeout: 60_000,
      }).then(
        (ok) => ({ code: 0, out: ok.stdout, err: ok.stderr }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, out: err.stdout, err: err.stderr }),
      );
      expect(r, `${l.file}: ${l.text}`).toMatchObject({ code: 0, err: '' });
      const body = JSON.parse(r.out) as Record<string, unknown>;
      if (typeof body.id === 'string' && body.id.startsWith('wal_')) vars.WALLET = body.id;
      if (typeof body.stampid === 'string') vars.STAMP = body.stampid;
    }
    expect(Object.keys(vars).sort()).toEqual(['KEY', 'STAMP', 'WALLET']);

    // Debian's Electrum, headless, as docs/electrum.md writes it (HOME a directory of its own; the
    // server address the quick start's when 50001 was busy).
    const electrumLines = lines.filter((l) => QUICK_START_ELECTRUM.test(l.text));
    expect(electrumLines.map((l) => l.text.split(' ')[4])).toEqual(['--offline', 'daemon', 'load_wallet', 'getbalance', 'stop']);
    const port = /electrum {3}tcp \S+:(\d+)/.exec(proc.output())![1]!;
    const home = await mkdtemp(join(tmpdir(), 'blockwire-electrum-'));
    try {
      const answers: string[] = [];
      for (const l of electrumLines) {
        const text = l.text.replace('127.0.0.1:50001:t', `127.0.0.1:${port}:t`);
        const r = await run('sh', ['-c', text], { env: { PATH: process.env.PATH ?? '', HOME: home }, timeout: 120_000 });
        answers.push(r.stdout);
      }
      expect(JSON.parse(answers[0]!)).toMatchObject({ seed: expect.any(String) });
      expect(JSON.parse(answers[3]!)).toMatchObject({ confirmed: '0' });
    } finally {
      await run('sh', ['-c', 'electrum --regtest -D ~/.electrum-blockwire stop'], {
        env: { PATH: process.env.PATH ?? '', HOME: home },
      }).catch(() => undefined);
      await rm(home, { recursive: true, force: true });
    }
  }, 900_000);
});
