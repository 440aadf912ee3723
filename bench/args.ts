/**
 * The command line of a bench script: node's parseArgs plus `--help` (`-h`), which prints the
 * script's header comment (what it measures and how to run it) and the options it takes, then
 * exits 0 without measuring anything.
 * @module
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The first comment block of a source file, without its comment markers. */
export function headerComment(source: string): string {
  const block = /^\s*\/\*\*?([\s\S]*?)\*\//.exec(source);
  const text = block
    ? block[1]!.split('\n').map((l) => l.replace(/^\s*\* ?/, ''))
    : source
        .split('\n')
        .filter((l, i, all) => all.slice(0, i + 1).every((x) => x.trimStart().startsWith('//')))
        .map((l) => l.replace(/^\s*\/\/ ?/, ''));
  return text
    .filter((l) => !l.startsWith('@module'))
    .join('\n')
    .trim();
}

function usage(moduleUrl: string, options: Options): string {
  const path = fileURLToPath(moduleUrl);
  const names = Object.entries(options).map(
    ([name, o]) => `  --${name}${o.type === 'string' ? ' VALUE' : ''}${o.default !== undefined ? ` (default ${String(o.default)})` : ''}`,
  );
  return `${headerComment(readFileSync(path, 'utf8'))}\n\nOptions:\n${names.join('\n')}\n  --help, -h  this text\n`;
}

/** parseArgs with `--help`: prints the usage of the script at `moduleUrl` and exits when asked. */
export function benchArgs<T extends ParseArgsConfig>(moduleUrl: string, config: T): ReturnType<typeof parseArgs<T>> {
  const options: Options = { ...(config.options ?? {}), help: { type: 'boolean', short: 'h' } };
  const parsed = parseArgs({ ...config, options } as T);
  if ((parsed.values as Record<string, unknown>).help === true) {
    process.stdout.write(usage(moduleUrl, config.options ?? {}));
    process.exit(0);
  }
  return parsed;
}
