/**
 * Checks that the kernel (src/) holds only what roles share (`npm run lint` runs it): every module
 * under src/ must have at least two role users, or be named in ALLOWED with the reason it is
 * kernel all the same. A module used by one role belongs in that role's folder.
 *
 * A role uses a kernel module when one of the role's files imports it, directly or through other
 * kernel modules (src/ and migrations/, which src/db/migrate.ts applies). Tests, benches, scripts
 * and the SDK are not role users. Every import counts: static, type-only, re-exports and
 * `import()`.
 *
 * `--report` prints every kernel module with its role users; `--root DIR` checks another tree (the
 * unit test's fixture). Exit code 1 on a violation, and on an
 * ALLOWED entry that is no longer needed (no such module, or two roles use it now).
 * @module
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The roles, as eslint.config.js names them: peers (indexer … electrum), the CLI and the devnode tool. */
export const ROLES = ['indexer', 'api', 'streams', 'stamp', 'electrum', 'cli', 'devnode'] as const;
/** Top-level folders whose modules are kernel: imports through them carry a role's use further. */
const KERNEL_ROOTS = ['src', 'migrations'];

/**
 * Kernel modules with fewer than two role users that are kernel all the same, with the reason.
 * An entry must leave this list when it is no longer needed.
 */
export const ALLOWED: ReadonlyMap<string, string> = new Map([
  [
    'src/bitcoin/encode.ts',
    "the consensus format's writer, the inverse of its readers tx.ts and block.ts: the format has one home, src/bitcoin; the devnode serializes blocks with it, tests and benches build their chains with it",
  ],
]);

/**
 * The repository-relative modules a module imports (relative specifiers only), `.js` read as `.ts`;
 * a worker thread's module, named by `new URL('./…', import.meta.url)`, counts as imported.
 */
export function importsOf(file: string, source: string, exists: (path: string) => boolean): string[] {
  const out: string[] = [];
  const workers = [...source.matchAll(/new URL\(\s*['"](\.[^'"]+)['"]/g)].map((m) => m[1]!);
  for (const fileName of [...ts.preProcessFile(source, true, true).importedFiles.map((i) => i.fileName), ...workers]) {
    if (!fileName.startsWith('.')) continue;
    const target = posix.normalize(posix.join(posix.dirname(file), fileName));
    const ts_ = target.replace(/\.js$/, '.ts');
    out.push(exists(ts_) ? ts_ : target);
  }
  return out;
}

const topOf = (file: string) => file.split('/')[0] ?? '';
const isKernel = (file: string) => KERNEL_ROOTS.includes(topOf(file));

/**
 * The role users of every kernel module (src/…), given each module's imports. A role reaches a
 * kernel module through a chain of kernel modules that starts at one of the role's files.
 */
export function roleUsers(imports: ReadonlyMap<string, readonly string[]>): Map<string, Set<string>> {
  const users = new Map<string, Set<string>>();
  for (const file of imports.keys()) if (topOf(file) === 'src') users.set(file, new Set());
  for (const [file, targets] of imports) {
    const role = topOf(file);
    if (!(ROLES as readonly string[]).includes(role)) continue;
    const seen = new Set<string>();
    const stack = targets.filter(isKernel);
    while (stack.length > 0) {
      const m = stack.pop()!;
      if (seen.has(m)) continue;
      seen.add(m);
      users.get(m)?.add(role);
      for (const t of imports.get(m) ?? []) if (isKernel(t)) stack.push(t);
    }
  }
  return users;
}

/** The problems: kernel modules with fewer than two role users and no reason, and stale ALLOWED entries. */
export function kernelProblems(users: ReadonlyMap<string, ReadonlySet<string>>, allowed: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const [m, roles] of [...users].sort(([a], [b]) => a.localeCompare(b))) {
    const named = roles.size === 0 ? 'no role' : `only ${[...roles].join(', ')}`;
    if (roles.size < 2 && !allowed.has(m))
      problems.push(`${m}: used by ${named}: move it into its role, or name it in ALLOWED with the reason it is kernel`);
    if (roles.size >= 2 && allowed.has(m)) problems.push(`${m}: used by ${[...roles].join(', ')} now: take it off ALLOWED`);
  }
  for (const m of allowed.keys()) if (!users.has(m)) problems.push(`${m}: on ALLOWED but no such kernel module`);
  return problems;
}

function listTs(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...listTs(root, rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

function main(argv: string[]): number {
  const at = argv.indexOf('--root');
  const root = at >= 0 ? resolve(argv[at + 1] ?? '.') : resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const exists = (p: string) => existsSync(join(root, p));
  const imports = new Map<string, string[]>();
  for (const top of [...KERNEL_ROOTS, ...ROLES]) {
    if (!exists(top)) continue;
    for (const f of listTs(root, top)) imports.set(f, importsOf(f, readFileSync(join(root, f), 'utf8'), exists));
  }
  const users = roleUsers(imports);
  if (argv.includes('--report')) {
    for (const [m, roles] of [...users].sort(([a], [b]) => a.localeCompare(b)))
      process.stdout.write(`${roles.size} ${m}: ${[...roles].join(' ')}\n`);
    return 0;
  }
  const problems = kernelProblems(users, at >= 0 ? new Map() : ALLOWED);
  if (problems.length > 0) {
    process.stderr.write(`the kernel (src/) holds only what two roles use:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
    return 1;
  }
  process.stdout.write(`kernel modules: ${users.size}, each used by two roles or more (${ALLOWED.size} allowed by reason)\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main(process.argv.slice(2)));
