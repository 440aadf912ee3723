// Architecture rules. The top level reads as the system:
// - roles, peers that never import one another: indexer/, api/, streams/, stamp/, electrum/ (they meet in
//   Postgres tables, and `blockwire start` wires them together);
// - the kernel src/ (bitcoin, db, rpc, config, auth, net, log, errors…) that every role may
//   use and that uses no role; it holds only what two roles share (scripts/kernel-users.ts);
// - cli/, the one composition root: it owns every command and alone imports the roles;
// - devnode/, a tool (the Bitcoin Core stand-in): only the CLI's `devnode` command and the quick
//   start (cli/) import it from the product; tests and benches use it freely;
// - src/bitcoin/ is pure (only @scure, @noble, micro-packed, node:crypto, itself and the one
//   network table, the SDK's client/network.ts);
// - the kernel shares two data-only SDK modules: client/network.ts and client/event-types.ts;
// - client/ is browser-safe (no node:, no server modules).
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const ROLES = ['indexer', 'api', 'streams', 'stamp', 'electrum'];
const roleGlob = (r) => [`**/${r}/**`, `../${r}/*`, `../../${r}/*`];
const notRole = (r, why) => ({ group: roleGlob(r), message: why });
const NO_TOOLS = [
  { group: ['**/cli/**'], message: 'only cli/ composes roles and owns commands; nothing imports it.' },
  { group: ['**/devnode/**'], message: 'the devnode is a tool: only the CLI (devnode command, quick start), tests and benches use it.' },
];

export default tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**', 'coverage/**', '.blockwire/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/**/*.ts', 'migrations/**/*.ts'],
    ignores: ['src/bitcoin/**'],
    rules: restrict([
      ...ROLES.map((r) => notRole(r, 'src/ is the kernel: it never imports a role (indexer, api, streams, stamp).')),
      ...NO_TOOLS,
    ]),
  },
  ...ROLES.map((role) => ({
    files: [`${role}/**/*.ts`],
    rules: restrict([
      ...ROLES.filter((r) => r !== role).map((r) =>
        notRole(r, `roles are peers: ${role}/ never imports ${r}/ (they meet in Postgres tables; cli/ wires them).`),
      ),
      ...NO_TOOLS,
    ]),
  })),
  {
    files: ['devnode/**/*.ts'],
    rules: restrict([...ROLES.map((r) => notRole(r, 'the devnode stands in for Bitcoin Core: it uses the kernel only.')), NO_TOOLS[0]]),
  },
  {
    files: ['src/bitcoin/**/*.ts'],
    rules: restrict([
      {
        regex: '^(?!@scure/|@noble/|micro-packed|node:crypto$|\\.\\./\\.\\./client/network\\.js$|\\.{1,2}/[^.]).*',
        message:
          "src/bitcoin is pure: only @scure, @noble, micro-packed, node:crypto (hashing), the SDK's network table and its own modules.",
      },
    ]),
  },
  {
    files: ['client/**/*.ts'],
    rules: restrict([
      { regex: '^node:', message: 'client/ runs in browsers too: no node: modules.' },
      {
        group: [
          '**/src/**',
          '**/api/**',
          '**/indexer/**',
          '**/streams/**',
          '**/stamp/**',
          '**/devnode/**',
          '**/cli/**',
          'pg',
          'kysely',
          'fastify',
          'ioredis',
          'bullmq',
          'zeromq',
        ],
        message: 'client/ must not pull server code.',
      },
    ]),
  },
);
