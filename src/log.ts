/**
 * Logging: one root pino logger per process, made by an entrypoint; components take
 * `log.child({ component: 'indexer.apply' })`. JSON lines to stdout (level names as strings, each
 * key once: a child's `component` replaces its parent's), or a human format when stdout is a
 * terminal or LOG_FORMAT=pretty.
 * @module
 */
import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';
import { PinoPretty } from 'pino-pretty';

export type { Logger };

/** `auto`: pretty on a terminal, JSON otherwise. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Whether lines are pretty-printed for the given format and stdout. */
export function isPretty(format: LogFormat, stdoutIsTty: boolean = process.stdout.isTTY === true): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTty);
}

const { chindingsSym } = pino.symbols;

/**
 * pino appends a child's bindings to its parent's serialized ones, so a nested child repeats
 * `component`. JSON.parse keeps the last value of a repeated key: re-serialize once per child.
 */
function dedupeBindings(child: Logger): void {
  const holder = child as unknown as Record<symbol, string>;
  const chindings = holder[chindingsSym];
  if (!chindings) return;
  const merged = JSON.stringify(JSON.parse(`{${chindings.slice(1)}}`));
  holder[chindingsSym] = merged === '{}' ? '' : `,${merged.slice(1, -1)}`;
}

/** Creates the root logger. `silent` is what tests use. */
export function createLogger(
  opts: { level?: LevelWithSilent; name?: string; format?: LogFormat; destination?: DestinationStream } = {},
): Logger {
  const pretty = isPretty(opts.format ?? 'auto');
  const options = {
    name: opts.name ?? 'blockwire',
    level: opts.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    onChild: dedupeBindings,
    // Keys of every kind must never reach a log line.
    redact: {
      paths: [
        'apikey',
        'apiKey',
        'headers.apikey',
        'req.headers.apikey',
        'headers.authorization',
        'req.headers.authorization',
        '*.password',
        '*.secret',
        'secret',
        'wif',
        'serverSecretKeys',
        '*.serverSecretKeys',
      ],
      censor: '[redacted]',
    },
  };
  if (!pretty) return opts.destination ? pino(options, opts.destination) : pino(options);
  const stream = PinoPretty({
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name,component',
    messageFormat: '{if component}[{component}] {end}{msg}',
    hideObject: false,
    singleLine: true,
    sync: true,
    ...(opts.destination ? { destination: opts.destination } : {}),
  });
  return pino(options, stream);
}

/** A logger that writes nothing, for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
