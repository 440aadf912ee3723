import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { messageProblems, SUBJECT_MAX } from '../../../scripts/commit-messages.js';

describe('commit message rules', () => {
  it('takes a short subject, with or without a body after a blank line', () => {
    expect(messageProblems('Fix the relay cursor\n')).toEqual([]);
    expect(messageProblems('Fix the relay cursor\n\nWhy: it skipped a seq.\nFigures: none.\n')).toEqual([]);
    expect(messageProblems(`${'x'.repeat(SUBJECT_MAX)}\n`)).toEqual([]);
  });
  it('refuses a long subject, an empty one, and a body glued to the subject', () => {
    expect(messageProblems(`${'x'.repeat(SUBJECT_MAX + 1)}\n`)).toEqual([
      `the subject has ${SUBJECT_MAX + 1} characters (at most ${SUBJECT_MAX}); put the detail in the body`,
    ]);
    expect(messageProblems('\n\n')).toEqual(['the subject line is empty']);
    expect(messageProblems('Subject\nbody right under it\n')).toEqual(['a blank line must separate the subject from the body']);
  });
  it("ignores git's comment lines and leading blank lines", () => {
    expect(messageProblems('\n# Please enter the commit message\nShort subject\n# a comment\n')).toEqual([]);
  });
});

describe('scripts/commit-messages.ts on a repository', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-commit-msg-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const script = resolve('scripts/commit-messages.ts');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.org', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
  // tsx by its path: the scratch repository has no node_modules to resolve it from.
  const tsx = pathToFileURL(resolve('node_modules/tsx/dist/loader.mjs')).href;
  const check = () => spawnSync(process.execPath, ['--import', tsx, script], { cwd: dir, encoding: 'utf8' });

  it('checks only the commits from the one that adds the script on, and fails on a long subject', () => {
    git('init', '-q', '-b', 'main');
    writeFileSync(join(dir, 'a.txt'), '1');
    git('add', '.');
    git('commit', '-q', '-m', `An old commit whose subject is far too long to pass today ${'x'.repeat(80)}`);
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(script, join(dir, 'scripts/commit-messages.ts'));
    git('add', '.');
    git('commit', '-q', '-m', 'Add the commit message check');
    let r = check();
    expect(r.status, r.stderr).toBe(0);
    writeFileSync(join(dir, 'a.txt'), '2');
    git('commit', '-q', '-am', `A new commit with a subject that runs on and on ${'y'.repeat(40)}`);
    r = check();
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('commit messages: 1 of 2 commits break the rules');
  });

  it('refuses a message file as the commit-msg hook does', () => {
    const file = join(dir, 'MSG');
    writeFileSync(file, `${'z'.repeat(100)}\n`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, '--file', file], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('the subject has 100 characters');
  });
});
