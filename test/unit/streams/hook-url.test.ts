/**
 * The SSRF corpus, registration side (no network): every spelling of a
 * private, loopback or link-local address, non-https, odd ports and local names are refused;
 * names are resolved and refused when any address is private; BLOCKWIRE_ALLOW_PRIVATE_HOOKS
 * lifts the address rules and is itself refused in production.
 */
import { describe, expect, it } from 'vitest';
import { checkHookUrl, isPublicAddress, parseHookUrl, type Resolver } from '../../../src/net/hook-url.js';
import { loadConfig } from '../../../src/config.js';

const strict = { allowPrivate: false };

describe('hook URL guard', () => {
  it.each([
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://api.localhost/hook',
    'https://[::1]/hook',
    'https://2130706433/hook',
    'https://0x7f.1/hook',
    'https://017700000001/hook',
    'https://127.1/hook',
    'https://0.0.0.0/hook',
    'https://0/hook',
    'https://169.254.169.254/latest/meta-data/',
    'https://10.1.2.3/hook',
    'https://172.16.0.1/hook',
    'https://192.168.1.1/hook',
    'https://100.64.0.1/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[::ffff:a9fe:a9fe]/hook',
    'https://[fd00::1]/hook',
    'https://[fe80::1]/hook',
    'https://[64:ff9b::7f00:1]/hook',
    'https://[2002:7f00:1::]/hook',
    'https://224.0.0.1/hook',
    'https://intranet/hook',
    'http://example.com/hook',
    'https://example.com:8080/hook',
    'https://example.com:22/hook',
    'https://user:pass@example.com/hook',
    'ftp://example.com/hook',
    'file:///etc/passwd',
    'not a url',
    `https://example.com/${'a'.repeat(2100)}`,
  ])('refuses %s', (url) => {
    expect(() => parseHookUrl(url, strict)).toThrow();
  });

  it.each([
    'https://example.com/hook',
    'https://example.com:443/x?y=1',
    'https://hooks.example.org:8443/in',
    'https://93.184.216.34/hook',
    'https://[2606:4700::1111]/hook',
  ])('accepts %s', (url) => {
    expect(parseHookUrl(url, strict).href).toBe(new URL(url).href);
  });

  it('explains refusals exactly', () => {
    expect(() => parseHookUrl('https://0x7f.1/', strict)).toThrow('url host 127.0.0.1 is a private, loopback or reserved address');
    expect(() => parseHookUrl('http://example.com/', strict)).toThrow('url must use https');
    expect(() => parseHookUrl('https://example.com:8080/', strict)).toThrow('url port 8080 is not allowed: use 443 or 8443');
  });

  it('classifies addresses', () => {
    for (const a of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::1', '::ffff:127.0.0.1', 'fc00::1', '::', '192.0.2.1'])
      expect(isPublicAddress(a)).toBe(false);
    for (const a of ['1.1.1.1', '93.184.216.34', '2606:4700::1111', '::ffff:1.1.1.1']) expect(isPublicAddress(a)).toBe(true);
    expect(isPublicAddress('example.com')).toBe(false);
  });

  it('resolves names at registration and refuses one with any private address', async () => {
    const dns: Record<string, string[]> = {
      'good.example': ['93.184.216.34'],
      'mixed.example': ['93.184.216.34', '10.0.0.7'],
      'rebind.example': ['127.0.0.1'],
    };
    const resolve: Resolver = async (h) => {
      const list = dns[h];
      if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return list.map((address) => ({ address, family: 4 as const }));
    };
    await expect(checkHookUrl('https://good.example/h', { allowPrivate: false, resolve })).resolves.toBeInstanceOf(URL);
    await expect(checkHookUrl('https://mixed.example/h', { allowPrivate: false, resolve })).rejects.toThrow(
      'url host mixed.example resolves to 10.0.0.7, a private, loopback or reserved address',
    );
    await expect(checkHookUrl('https://rebind.example/h', { allowPrivate: false, resolve })).rejects.toThrow('resolves to 127.0.0.1');
    await expect(checkHookUrl('https://nope.example/h', { allowPrivate: false, resolve })).rejects.toThrow(
      'url host nope.example does not resolve (ENOTFOUND)',
    );
  });

  it('lets the test flag through to loopback and http, and refuses the flag in production', () => {
    expect(parseHookUrl('http://127.0.0.1:9999/hook', { allowPrivate: true }).port).toBe('9999');
    expect(() => parseHookUrl('ftp://127.0.0.1/', { allowPrivate: true })).toThrow('url scheme ftp: is not allowed: use https');
    expect(loadConfig({ BLOCKWIRE_ALLOW_PRIVATE_HOOKS: '1', NODE_ENV: 'test' }).allowPrivateHooks).toBe(true);
    expect(() => loadConfig({ BLOCKWIRE_ALLOW_PRIVATE_HOOKS: '1', NODE_ENV: 'production' })).toThrow(
      'BLOCKWIRE_ALLOW_PRIVATE_HOOKS is refused when NODE_ENV=production',
    );
  });
});
