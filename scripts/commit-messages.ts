/**
 * Checks commit messages: a subject line of at most 72 characters that says what changed, and,
 * when there is a body, a blank line between the subject and the body (the why and the figures
 * go in the body). Two uses:
 * - `node --import tsx scripts/commit-messages.ts --file F`: checks one message file; the git
 *   `commit-msg` hook that scripts/setup.sh installs runs this, so a long subject is refused
 *   before the commit exists;
 * - without arguments (`npm run lint` runs it): checks every commit of HEAD's history newer than
 *   the commit that added this file (older subjects are history; nothing rewrites them).
 * Exit code 1 when a message breaks a rule; a tree without git history (an unpacked tarball)
 * has nothing to check.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const SUBJECT_MAX = 72;

/** The problems of one commit message (empty when it is fine). Comment lines (#) are ignored. */
export function messageProblems(message: string): string[] {
  const lines = message
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\s+$/, ''));
  while (lines.length > 0 && lines[0] === '') lines.shift();
  const subject = lines[0] ?? '';
  const problems: string[] = [];
  if (subject === '') problems.push('the subject line is empty');
  if (subject.length > SUBJECT_MAX)
    problems.push(`the subject has ${subject.length} characters (at most ${SUBJECT_MAX}); put the detail in the body`);
  if (lines.length > 1 && lines[1] !== '') problems.push('a blank line must separate the subject from the body');
  return problems;
}

function git(args: string[]): string {
  return execFileSync('git', args, { encoding: 'utf8', maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The commits to check: those of HEAD's history not reachable from the commit before this file's first. */
function commitsToCheck(): string[] | null {
  try {
    git(['rev-parse', '--git-dir']);
  } catch {
    return null;
  }
  const added = git(['log', '--diff-filter=A', '--format=%H', '--', 'scripts/commit-messages.ts']).trim().split('\n').filter(Boolean).pop();
  if (added === undefined) return []; // not committed yet: the rule starts with its commit
  const parents = git(['rev-list', '--parents', '-n', '1', added]).trim().split(' ').slice(1);
  const range = parents.length > 0 ? [`HEAD`, ...parents.map((p) => `^${p}`)] : ['HEAD'];
  return git(['rev-list', ...range])
    .trim()
    .split('\n')
    .filter(Boolean);
}

function main(argv: string[]): number {
  const at = argv.indexOf('--file');
  if (at >= 0) {
    const file = argv[at + 1];
    if (file === undefined) throw new Error('--file needs a path');
    const problems = messageProblems(readFileSync(file, 'utf8'));
    for (const p of problems) process.stderr.write(`commit message: ${p}\n`);
    return problems.length > 0 ? 1 : 0;
  }
  const commits = commitsToCheck();
  if (commits === null) {
    process.stdout.write('commit messages: not a git checkout, nothing to check\n');
    return 0;
  }
  let bad = 0;
  for (const c of commits) {
    const problems = messageProblems(git(['log', '-1', '--format=%B', c]));
    if (problems.length === 0) continue;
    bad += 1;
    const subject = git(['log', '-1', '--format=%s', c]).trim();
    process.stderr.write(`${c.slice(0, 10)} ${subject.slice(0, 80)}${subject.length > 80 ? '…' : ''}\n  ${problems.join('\n  ')}\n`);
  }
  if (bad > 0) process.stderr.write(`commit messages: ${bad} of ${commits.length} commits break the rules\n`);
  return bad > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
