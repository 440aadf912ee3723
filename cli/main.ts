/**
 * The `blockwire` command line: dispatches to one subcommand module, loaded lazily so that
 * `blockwire decode` never pays for loading Postgres or ZMQ.
 * @module
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** A subcommand: receives its own arguments (after the name), returns the exit code. */
export type Command = {
  summary: string;
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
};

/** Every subcommand. Later issues add entries here; each module exports `run(argv)`. */
export const commands: Record<string, Command> = {
  start: { summary: 'run Blockwire (all roles, or --role indexer,api,streams,worker,electrum)', load: () => import('./start.js') },
  migrate: { summary: 'apply or revert database migrations (latest | down | status)', load: () => import('./migrate.js') },
  devnode: { summary: 'run the regtest stand-in for Bitcoin Core (RPC, REST, ZMQ; NOT bitcoind)', load: () => import('./devnode.js') },
  keys: { summary: 'manage API keys (create --name NAME | list | revoke ID|PREFIX)', load: () => import('./keys.js') },
  import: { summary: 'index Bitcoin Core blk*.dat files in bulk for the first sync (--blocks-dir DIR)', load: () => import('./import.js') },
  'history-buckets': {
    summary: 'keep the history of addresses with at most N entries in buckets, half the size (--busy N)',
    load: () => import('./history-buckets.js'),
  },
  status: {
    summary: 'print index tip, node tip, lag, outbox backlog, delivery failures; exit 1 when unhealthy',
    load: () => import('./status.js'),
  },
  config: {
    summary: 'print the settings (--markdown: the reference, --check: validate the environment)',
    load: () => import('./config.js'),
  },
  faucet: { summary: "regtest only: pay ADDRESS AMOUNT (BTC) from the node's wallet and mine a block", load: () => import('./faucet.js') },
  decode: { summary: 'decode a raw block or transaction to JSON (FILE|HEX|- [--network NAME])', load: () => import('./decode.js') },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return [
    'usage: blockwire <command> [options]',
    '',
    'commands:',
    ...lines,
    '',
    'blockwire <command> --help tells more; blockwire --version prints the version.',
    '',
  ].join('\n');
}

/** The version in package.json (one level above cli/ in a checkout, two above dist/cli/). */
export function version(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const file = [join(here, '..', 'package.json'), join(here, '..', '..', 'package.json')].find((f) => existsSync(f));
  return file ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : 'unknown';
}

/**
 * A reader that goes away (`blockwire keys list | head -1`) closes the pipe: that ends the
 * output, it is not an error worth a stack trace.
 */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
}

const isHelp = (a: string) => a === '--help' || a === '-h';

/** Runs the command line and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe();
  const [name, ...rest] = argv;
  if (name === undefined || isHelp(name) || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`blockwire ${version()}\n`);
    return 0;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`blockwire: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  const mod = await command.load();
  // `--help` anywhere before a `--` (`blockwire keys create --help`): the command's usage, exit 0.
  const options = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
  if (options.some(isHelp)) return mod.run(['--help']);
  return mod.run(rest);
}

// Run directly (`node dist/cli/main.js …`, as the image does) rather than imported by
// bin/blockwire.js or a test: this module is then the process's entrypoint.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
