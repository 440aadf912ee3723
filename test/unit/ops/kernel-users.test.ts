import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importsOf, kernelProblems, roleUsers } from '../../../scripts/kernel-users.js';

// A small tree: src/shared.ts is used by api/ and streams/ (both through src/via.ts), src/lonely.ts
// by api/ alone, src/unused.ts by no role (a test imports it, which does not count).
const FIXTURE: Record<string, string> = {
  'src/shared.ts': 'export const shared = 1;\n',
  'src/via.ts': "import { shared } from './shared.js';\nexport const via = shared;\n",
  'src/lonely.ts': "import type { X } from './types.js';\nexport const lonely = 1 as X;\n",
  'src/types.ts': 'export type X = number;\n',
  'src/unused.ts': "const w = new URL('./worker.js', import.meta.url);\nexport const unused = w;\n",
  'src/worker.ts': 'export {};\n',
  'api/main.ts': "import { via } from '../src/via.js';\nimport { lonely } from '../src/lonely.js';\nexport default [via, lonely];\n",
  'streams/main.ts': "export const load = () => import('../src/via.js');\n",
  'test/unused.test.ts': "import { unused } from '../src/unused.js';\nexport default unused;\n",
};

const importMap = () => {
  const exists = (p: string) => p in FIXTURE;
  return new Map(Object.entries(FIXTURE).map(([f, source]) => [f, importsOf(f, source, exists)]));
};

describe('the kernel check', () => {
  it('reads static, type-only and dynamic imports and worker URLs, as repository paths', () => {
    const imports = importMap();
    expect(imports.get('api/main.ts')).toEqual(['src/via.ts', 'src/lonely.ts']);
    expect(imports.get('src/lonely.ts')).toEqual(['src/types.ts']);
    expect(imports.get('streams/main.ts')).toEqual(['src/via.ts']);
    expect(imports.get('src/unused.ts')).toEqual(['src/worker.ts']);
  });

  it('counts a role that reaches a kernel module through other kernel modules; tests are no role', () => {
    const users = roleUsers(importMap());
    expect([...users.get('src/shared.ts')!].sort()).toEqual(['api', 'streams']);
    expect([...users.get('src/types.ts')!]).toEqual(['api']);
    expect([...users.get('src/unused.ts')!]).toEqual([]);
    expect([...users.get('src/worker.ts')!]).toEqual([]);
  });

  it('names every module with fewer than two role users unless allowed, and stale allow-list entries', () => {
    const users = roleUsers(importMap());
    const allowed = new Map([
      ['src/types.ts', 'a reason'],
      ['src/shared.ts', 'no longer needed'],
      ['src/gone.ts', 'moved away'],
    ]);
    expect(kernelProblems(users, allowed)).toEqual([
      'src/lonely.ts: used by only api: move it into its role, or name it in ALLOWED with the reason it is kernel',
      'src/shared.ts: used by api, streams now: take it off ALLOWED',
      'src/unused.ts: used by no role: move it into its role, or name it in ALLOWED with the reason it is kernel',
      'src/worker.ts: used by no role: move it into its role, or name it in ALLOWED with the reason it is kernel',
      'src/gone.ts: on ALLOWED but no such kernel module',
    ]);
    expect(kernelProblems(new Map([['src/shared.ts', new Set(['api', 'cli'])]]), new Map())).toEqual([]);
  });
});

describe('scripts/kernel-users.ts on a tree', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-kernel-users-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = () =>
    spawnSync(process.execPath, ['--import', 'tsx', resolve('scripts/kernel-users.ts'), '--root', dir], { encoding: 'utf8' });
  const write = (files: Record<string, string>) => {
    for (const [f, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      writeFileSync(join(dir, f), source);
    }
  };

  it('fails on a kernel module one role uses, and passes once a second role uses it', () => {
    write(FIXTURE);
    const failed = run();
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('src/lonely.ts: used by only api');
    rmSync(join(dir, 'src/unused.ts'));
    rmSync(join(dir, 'src/worker.ts'));
    rmSync(join(dir, 'test'), { recursive: true });
    write({ 'cli/main.ts': "import { lonely } from '../src/lonely.js';\nexport default lonely;\n" });
    const passed = run();
    expect(passed.stderr).toBe('');
    expect(passed.status).toBe(0);
  });
});
