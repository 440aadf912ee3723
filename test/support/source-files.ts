/**
 * The repository's TypeScript sources under some folders, for the tests that scan them for a
 * rule of the layering (one writer of the chain tables, one reader of the transactions).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The repository's root. */
export const ROOT = join(import.meta.dirname, '../..');

/** The `.ts` files under each of `dirs` (paths relative to the root). */
export function sourceFiles(dirs: readonly string[]): string[] {
  return dirs.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => relative(ROOT, join(e.parentPath, e.name))),
  );
}

/** A source's text (a path relative to the root). */
export const sourceText = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
