// Architecture rules (DESIGN.md, STYLE.md §1): src/ never imports indexer/ or streams/; those two
// never import each other; src/bitcoin/ is pure (only @scure, @noble, micro-packed and itself);
// client/ is browser-safe (no node:, no server modules).
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.blockwire/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // src/cli/ is the composition root: `blockwire start` wires the roles together, so it alone
    // may import the role entrypoints indexer/main.ts and streams/main.ts.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: restrict([
      { group: ['**/indexer/**', '**/streams/**'], message: 'src/ is the shared kernel: it never imports indexer/ or streams/.' },
    ]),
  },
  {
    files: ['indexer/**/*.ts'],
    rules: restrict([{ group: ['**/streams/**'], message: 'indexer/ and streams/ meet only in Postgres tables.' }]),
  },
  {
    files: ['streams/**/*.ts'],
    rules: restrict([{ group: ['**/indexer/**'], message: 'indexer/ and streams/ meet only in Postgres tables.' }]),
  },
  {
    files: ['src/bitcoin/**/*.ts'],
    ignores: ['src/bitcoin/decode-command.ts', 'src/bitcoin/blk-file.ts'],
    rules: restrict([
      { regex: '^(?!@scure/|@noble/|micro-packed|node:crypto$|\\.{1,2}/).*', message: 'src/bitcoin is pure: only @scure, @noble, micro-packed, node:crypto (hashing) and its own modules.' },
    ]),
  },
  {
    files: ['client/**/*.ts'],
    rules: restrict([
      { regex: '^node:', message: 'client/ runs in browsers too: no node: modules.' },
      { group: ['**/src/db/**', '**/src/api/**', '**/indexer/**', '**/streams/**', 'pg', 'kysely', 'fastify', 'ioredis', 'bullmq', 'zeromq'], message: 'client/ must not pull server code.' },
    ]),
  },
);
