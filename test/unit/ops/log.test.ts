/**
 * Log lines: JSON with level names as strings and each binding once (a nested child's
 * `component` replaces its parent's), or one human line each when LOG_FORMAT=pretty or stdout is
 * a terminal.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createLogger, isPretty } from '../../../src/log.js';

function capture(): { stream: Writable; lines: () => string[] } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

describe('logs', () => {
  it('JSON: string level names, one component key per line (the innermost child wins), keys redacted', () => {
    const out = capture();
    const log = createLogger({ format: 'json', destination: out.stream });
    const streams = log.child({ component: 'streams' });
    const relay = streams.child({ component: 'streams.relay', shard: 1 });
    relay.warn({ height: 7, apiKey: 'bw_secret' }, 'relay behind');
    streams.info('plain');
    const [first, second] = out.lines();
    expect(first!.match(/"component"/g)).toHaveLength(1);
    const parsed = JSON.parse(first!) as Record<string, unknown>;
    expect(parsed).toMatchObject({
      level: 'warn',
      component: 'streams.relay',
      shard: 1,
      height: 7,
      apiKey: '[redacted]',
      msg: 'relay behind',
      name: 'blockwire',
    });
    expect(JSON.parse(second!)).toMatchObject({ level: 'info', component: 'streams', msg: 'plain' });
  });

  it('pretty: one human line per entry with time, level name, component and message, no JSON', () => {
    const out = capture();
    const log = createLogger({ format: 'pretty', destination: out.stream });
    log.child({ component: 'devnode' }).child({ component: 'devnode.rpc' }).info({ port: 18443 }, 'listening');
    const lines = out.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[devnode\.rpc\] listening \{"port":18443\}$/);
  });

  it('auto: pretty on a terminal, JSON when stdout is a pipe or a file; LOG_FORMAT chooses', () => {
    expect(isPretty('auto', true)).toBe(true);
    expect(isPretty('auto', false)).toBe(false);
    expect(isPretty('json', true)).toBe(false);
    expect(isPretty('pretty', false)).toBe(true);
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT must be one of auto, json, pretty/);
  });
});
