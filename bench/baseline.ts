/**
 * Earlier code of this repository, checked out for a benchmark to measure beside the current
 * code in the same run (same VM, same PostgreSQL, same corpus): `git worktree add --detach` of a
 * commit into a temporary directory, with the current checkout's node_modules linked in when the
 * commit's direct dependencies resolve to the same versions (else its own `npm ci`), removed
 * afterwards.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The code the second round of performance targets calls "today's": the commit whose
 * `npm run bench -- --blocks 2000` recorded the first round's import figure (52,623 tx/s on
 * 2026-11-26, bench/README.md), with bench/results/latest.json of that run.
 */
export const DEFAULT_BASELINE = 'f8b0377';

export interface Baseline {
  ref: string;
  commit: string;
  dir: string;
  /** How its dependencies were provided. */
  deps: 'linked' | 'npm ci';
  remove(): void;
}

type Lock = { packages?: Record<string, { version?: string; dependencies?: Record<string, string> }> };

/** Direct dependencies of the lockfile's root whose resolved version differs between two lockfiles. */
export function differingDeps(theirs: Lock, ours: Lock): string[] {
  const root = theirs.packages?.['']?.dependencies ?? {};
  return Object.keys(root).filter(
    (name) => theirs.packages?.[`node_modules/${name}`]?.version !== ours.packages?.[`node_modules/${name}`]?.version,
  );
}

/** Checks out `ref` into a temporary worktree ready to run `bin/blockwire.js`. */
export function checkoutBaseline(ref: string, log: (s: string) => void): Baseline {
  const repo = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  const commit = execFileSync('git', ['-C', repo, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).trim();
  const dir = join(mkdtempSync(join(tmpdir(), 'bw-baseline-')), 'repo');
  execFileSync('git', ['-C', repo, 'worktree', 'add', '--detach', dir, commit], { stdio: 'ignore' });
  const remove = () => {
    try {
      execFileSync('git', ['-C', repo, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' });
    } catch {
      /* removed below */
    }
    rmSync(resolve(dir, '..'), { recursive: true, force: true });
    execFileSync('git', ['-C', repo, 'worktree', 'prune'], { stdio: 'ignore' });
  };
  try {
    const theirs = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as Lock;
    const ours = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as Lock;
    const differ = differingDeps(theirs, ours);
    let deps: Baseline['deps'];
    if (differ.length === 0 && existsSync(join(repo, 'node_modules'))) {
      symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'), 'dir');
      deps = 'linked';
    } else {
      log(`baseline ${ref}: dependencies differ (${differ.join(', ')}): npm ci`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
      deps = 'npm ci';
    }
    log(`baseline ${ref} (${commit.slice(0, 12)}) checked out in ${dir}, node_modules ${deps}`);
    return { ref, commit, dir, deps, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
