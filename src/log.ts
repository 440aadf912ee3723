/**
 * Logging: one root pino logger per process, made by an entrypoint; components take
 * `log.child({ component: 'indexer.apply' })`. JSON lines to stdout.
 * @module
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Creates the root logger. `silent` is what tests use. */
export function createLogger(opts: { level?: LevelWithSilent; name?: string } = {}): Logger {
  return pino({
    name: opts.name ?? 'blockwire',
    level: opts.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Keys of every kind must never reach a log line.
    redact: {
      paths: ['apikey', 'apiKey', 'headers.apikey', 'req.headers.apikey', 'headers.authorization', 'req.headers.authorization', '*.password', '*.secret', 'secret', 'wif', 'serverSecretKeys', '*.serverSecretKeys'],
      censor: '[redacted]',
    },
  });
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
