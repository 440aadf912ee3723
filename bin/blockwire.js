#!/usr/bin/env node
// The `blockwire` command. In a source checkout it runs the TypeScript sources through tsx;
// in a built image (no cli/main.ts beside dist/) it runs the compiled JavaScript.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'cli', 'main.ts');
let entry;
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  entry = source;
} else {
  entry = join(root, 'dist', 'cli', 'main.js');
}
const { main } = await import(pathToFileURL(entry).href);
process.exitCode = await main(process.argv.slice(2));
