/**
 * Reports exported values that nothing imports (`npm run lint` runs it): every exported function,
 * class, constant or enum of the product (src, indexer, api, streams, stamp, devnode, cli, client,
 * migrations) must be imported by another file of the repository, tests and benches included, or
 * be part of an entry point (the SDK's client/index.ts, the CLI's cli/main.ts that bin/ loads).
 * A value used only inside its own file should not be exported; one used by nothing should go.
 * Exported types are left alone: they name the parameters and results of exported functions.
 * Exit code 1 when there is any.
 *
 * How: the TypeScript program of tsconfig.json; every import, re-export and `import()` of a
 * repository module marks the declarations it reaches (a namespace import, `export *` or
 * dynamic import marks every export of its target).
 * @module
 */
import ts from 'typescript';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PRODUCT = /^(src|indexer|api|streams|stamp|devnode|cli|client|migrations)\//;
/** Modules whose exports are a public interface, used from outside the repository. */
const PUBLIC = new Set(['client/index.ts', 'cli/main.ts']);
/**
 * Exports landed ahead of the code that will import them (work under way), as `file:name`. Each
 * is named here until its first importer lands; then it must leave this list (an entry that is
 * imported, or no longer exported, fails too).
 */
const PENDING = new Set(['api/schemas.ts:blockSchema', 'api/transaction-view.ts:loadTransactionJson']);

const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json')!;
const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, ts.sys.readFile).config, ts.sys, root);
const program = ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, noEmit: true } });
const checker = program.getTypeChecker();
const ours = program
  .getSourceFiles()
  .filter((f) => !f.isDeclarationFile && !f.fileName.includes('/node_modules/') && !relative(root, f.fileName).startsWith('..'));

const resolveAlias = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
const used = new Set<ts.Symbol>();
const markAll = (spec: ts.Expression | undefined) => {
  if (!spec) return;
  const mod = checker.getSymbolAtLocation(spec);
  if (mod) for (const e of checker.getExportsOfModule(mod)) used.add(resolveAlias(e));
};

for (const f of ours) {
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && n.importClause) {
      const c = n.importClause;
      if (c.name) {
        const s = checker.getSymbolAtLocation(c.name);
        if (s) used.add(resolveAlias(s));
      }
      const b = c.namedBindings;
      if (b && ts.isNamespaceImport(b)) markAll(n.moduleSpecifier);
      else if (b)
        for (const el of b.elements) {
          const s = checker.getSymbolAtLocation(el.name);
          if (s) used.add(resolveAlias(s));
        }
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier) {
      if (!n.exportClause || ts.isNamespaceExport(n.exportClause)) markAll(n.moduleSpecifier);
      else
        for (const el of n.exportClause.elements) {
          const s = checker.getSymbolAtLocation(el.name);
          if (s) used.add(resolveAlias(s));
        }
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      markAll(n.arguments[0]);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) {
      markAll(n.argument.literal as ts.Expression);
    }
    ts.forEachChild(n, visit);
  };
  visit(f);
}

const unused: string[] = [];
for (const f of ours) {
  const rel = relative(root, f.fileName);
  if (!PRODUCT.test(rel) || PUBLIC.has(rel)) continue;
  const mod = checker.getSymbolAtLocation(f);
  if (!mod) continue;
  for (const e of checker.getExportsOfModule(mod)) {
    const target = resolveAlias(e);
    const pending = PENDING.delete(`${rel}:${e.getName()}`);
    if (used.has(target)) {
      if (pending) unused.push(`${rel}: ${e.getName()} is imported now: take it off PENDING`);
      continue;
    }
    if (!(target.flags & ts.SymbolFlags.Value) || pending) continue;
    const decl = e.declarations?.[0];
    const line = decl ? f.getLineAndCharacterOfPosition(decl.getStart()).line + 1 : 0;
    unused.push(`${rel}:${line}: ${e.getName()}`);
  }
}

for (const p of PENDING) unused.push(`${p.replace(':', ': ')} is on PENDING but not exported`);
if (unused.length > 0) {
  process.stderr.write(
    `exports nothing imports (remove them, or stop exporting what only their own module uses):\n${unused
      .sort()
      .map((u) => `  ${u}`)
      .join('\n')}\n`,
  );
  process.exit(1);
}
process.stdout.write(`unused exports: none (${ours.length} files)\n`);
