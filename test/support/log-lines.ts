/**
 * A logger that keeps what it writes: the lines (pino's JSON) a test reads back, at `level` and above.
 */
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

export function recordingLogger(level: 'warn' | 'info' | 'debug' = 'warn'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  return { log, lines };
}
