/**
 * `blockwire devnode` as the README runs it on its own: LOG_FORMAT=pretty gives human lines (not
 * JSON), and `--replay DIR --pace N` says each block it connects or disconnects as it goes.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { describeFixtures, fixturePath, projectRoot } from '../../support/fixtures.js';
import { waitFor } from '../../support/wait.js';

let child: ReturnType<typeof spawn> | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
});

describeFixtures('blockwire devnode on its own', () => {
  it('logs pretty lines with LOG_FORMAT=pretty and each replayed block', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_FORMAT: 'pretty' };
    child = spawn(
      process.execPath,
      [
        join(projectRoot, 'bin', 'blockwire.js'),
        'devnode',
        '--replay',
        fixturePath('regtest-chain-a'),
        '--pace',
        '20',
        '--rpc-port',
        '0',
        '--zmq-port',
        '0',
      ],
      { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += String(d)));
    child.stderr!.on('data', (d: Buffer) => (out += String(d)));
    const replayed = () => out.split('\n').filter((l) => /devnode: replay connected block \d+/.test(l));
    await waitFor('three replayed blocks logged', () => replayed().length >= 3 || child!.exitCode !== null, 120_000);
    expect(replayed().length, out.slice(-2000)).toBeGreaterThanOrEqual(3);
    // Pretty: a time and a level word first, no JSON object.
    for (const line of replayed()) expect(line).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO.*devnode: replay connected block \d+/);
    expect(out.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    const heights = replayed().map((l) => Number(/connected block (\d+)/.exec(l)![1]));
    expect(heights.every((h) => h > 0)).toBe(true);
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }, 180_000);
});
