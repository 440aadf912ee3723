import { describe, expect, it } from 'vitest';
import { ConfigError, configMarkdown, loadConfig, settings } from '../../../src/config.js';

describe('loadConfig', () => {
  it('applies defaults to an empty environment', () => {
    const c = loadConfig({});
    expect(c.port).toBe(3000);
    expect(c.databaseUrl).toBeUndefined();
    expect(c.pollIntervalMs).toBe(2000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('parses and validates values', () => {
    const c = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://u:p@h:5432/db', BITCOIN_NETWORK: 'signet' });
    expect(c.port).toBe(8080);
    expect(c.databaseUrl).toBe('postgres://u:p@h:5432/db');
    expect(c.network).toBe('signet');
  });

  it('names every bad variable at once', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'eighty', BITCOIND_ZMQ_URL: 'http://x', BITCOIN_NETWORK: 'mainnet' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    expect(problems).toContain('PORT must be an integer');
    expect(problems).toContain('BITCOIND_ZMQ_URL must use tcp:');
    expect(problems).toContain('BITCOIN_NETWORK must be one of');
  });

  it('documents every variable in the Markdown table', () => {
    const md = configMarkdown();
    for (const s of Object.values(settings)) expect(md).toContain(`\`${s.env}\``);
  });
});
