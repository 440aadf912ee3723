/**
 * `blockwire devnode`: runs the regtest stand-in in the foreground, prints its URLs when ready,
 * and stops on SIGINT/SIGTERM (saving the mempool and wallet under --data-dir).
 * @module
 */
import { createLogger } from '../src/log.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { createShutdown, installSignalHandlers } from './lifecycle.js';
import { startCorpusNode } from '../devnode/corpus.js';
import { startDevnode, type DevnodeOptions } from '../devnode/start.js';

const USAGE = `usage: blockwire devnode [--rpc-port N] [--zmq-port N] [--rpc-user U] [--rpc-password P]
                        [--replay DIR] [--pace BLOCKS_PER_SECOND|all] [--data-dir DIR]
                        [--mine-every SECONDS] [--initial-blocks N] [--host H] [--no-samples]
                        [--corpus DIR [--corpus-tip N]]

A Bitcoin Core 30 regtest stand-in (NOT bitcoind): JSON-RPC and REST on --rpc-port (18443),
ZMQ rawblock/hashblock/rawtx/hashtx/sequence on --zmq-port (28332).
--corpus serves a generated block corpus (bench/corpus) from its block files instead.
`;

/** Parsed command line, or an error message. */
export function parseDevnodeArgs(
  argv: string[],
): { opts: DevnodeOptions; logLevel: string; corpus?: { dir: string; tip?: number } } | { error: string } | { help: true } {
  const opts: DevnodeOptions = { rpcPort: 18443, zmqPort: 28332 };
  let pace: number | 'all' = 'all';
  let replayDir: string | undefined;
  let logLevel = 'info';
  let corpus: { dir: string; tip?: number } | undefined;
  const num = (flag: string, v: string | undefined, min: number, max: number): number => {
    if (v === undefined || !/^\d+(\.\d+)?$/.test(v)) throw new Error(`${flag} needs a number`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`${flag} must be between ${min} and ${max}`);
    return n;
  };
  try {
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
      const value = () => inline ?? argv[++i];
      switch (flag) {
        case '-h':
        case '--help':
          return { help: true };
        case '--rpc-port':
          opts.rpcPort = num(flag, value(), 0, 65535);
          break;
        case '--zmq-port':
          opts.zmqPort = num(flag, value(), 0, 65535);
          break;
        case '--rpc-user':
          opts.rpcUser = value();
          break;
        case '--rpc-password':
          opts.rpcPassword = value();
          break;
        case '--host':
          opts.host = value();
          break;
        case '--replay':
          replayDir = value();
          break;
        case '--pace': {
          const v = value();
          pace = v === 'all' ? 'all' : num(flag, v, 0.001, 100_000);
          break;
        }
        case '--data-dir':
          opts.dataDir = value();
          break;
        case '--mine-every':
          opts.mineEvery = num(flag, value(), 0.05, 86_400);
          break;
        case '--initial-blocks':
          opts.initialBlocks = num(flag, value(), 0, 100_000);
          break;
        case '--no-samples':
          opts.samplePayments = false;
          break;
        case '--corpus':
          corpus = { ...corpus, dir: value() ?? '' };
          break;
        case '--corpus-tip':
          corpus = { dir: corpus?.dir ?? '', tip: num(flag, value(), 0, 100_000_000) };
          break;
        case '--log-level':
          logLevel = value() ?? 'info';
          break;
        default:
          throw new Error(`unknown option '${a}'`);
      }
    }
  } catch (err) {
    return { error: (err as Error).message };
  }
  if (replayDir) opts.replay = { dir: replayDir, pace };
  if (corpus && !corpus.dir) return { error: '--corpus-tip needs --corpus DIR' };
  return { opts, logLevel, ...(corpus ? { corpus } : {}) };
}

/** Entry point of `blockwire devnode`. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseDevnodeArgs(argv);
  if ('help' in parsed) {
    process.stdout.write(USAGE);
    return 0;
  }
  if ('error' in parsed) {
    process.stderr.write(`blockwire devnode: ${parsed.error}\n\n${USAGE}`);
    return 2;
  }
  // LOG_FORMAT as for every command (pretty on a terminal, JSON otherwise, unless set).
  let format;
  try {
    format = loadConfig(process.env).logFormat;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`blockwire devnode: ${err.message}\n`);
    return 2;
  }
  const log = createLogger({ name: 'devnode', level: parsed.logLevel as 'info', format });
  if (parsed.corpus) return runCorpus(parsed.corpus, parsed.opts, log);
  log.warn('THIS IS THE BLOCKWIRE DEVNODE: a regtest stand-in for Bitcoin Core, NOT bitcoind. Do not use it with real funds.');
  const node = await startDevnode({ ...parsed.opts, log });
  const shutdown = createShutdown(log);
  shutdown.add('devnode', () => node.stop());
  process.stdout.write(
    [
      'devnode ready (a regtest stand-in, NOT bitcoind)',
      `  rpc   ${node.rpcUrl}`,
      `  rest  ${node.restUrl}`,
      `  zmq   ${node.zmqUrl}   (rawblock hashblock rawtx hashtx sequence)`,
      `  tip   ${node.tip().height} ${node.tip().hash}`,
      ...(node.cookieFile ? [`  cookie ${node.cookieFile}`] : []),
      '',
    ].join('\n'),
  );
  return new Promise<number>((resolve) => {
    installSignalHandlers(shutdown, resolve);
    // `stop` over RPC ends the process as bitcoind does.
    node.onStopRequest(() => void shutdown.run('rpc stop').then(() => resolve(0)));
  });
}

/** `--corpus DIR`: serves a generated corpus (corpus.ts) until SIGINT/SIGTERM or the `stop` RPC. */
async function runCorpus(
  corpus: { dir: string; tip?: number },
  opts: DevnodeOptions,
  log: ReturnType<typeof createLogger>,
): Promise<number> {
  const node = await startCorpusNode({
    dir: corpus.dir,
    ...(corpus.tip !== undefined ? { tip: corpus.tip } : {}),
    rpcPort: opts.rpcPort ?? 0,
    zmqPort: opts.zmqPort ?? 0,
    ...(opts.host ? { host: opts.host } : {}),
    ...(opts.rpcUser ? { rpcUser: opts.rpcUser } : {}),
    ...(opts.rpcPassword ? { rpcPassword: opts.rpcPassword } : {}),
    log,
  });
  const shutdown = createShutdown(log);
  shutdown.add('devnode', () => node.stop());
  process.stdout.write(
    [
      'devnode ready (a regtest stand-in serving a block corpus, NOT bitcoind)',
      `  rpc   ${node.rpcUrl}`,
      `  rest  ${node.restUrl}`,
      `  zmq   ${node.zmqUrl}   (sequence hashblock rawblock)`,
      `  tip   ${node.tip().height} ${node.tip().hash}`,
      '',
    ].join('\n'),
  );
  return new Promise<number>((resolve) => installSignalHandlers(shutdown, resolve));
}
