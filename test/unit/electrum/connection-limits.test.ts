import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../../electrum/connection-limits.js';

describe('addressGroup: what the per-address Electrum connection cap counts together', () => {
  it('an IPv4 address alone, an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('203.0.113.8')).not.toBe(addressGroup('203.0.113.7'));
  });

  it('an IPv6 address by its /64, however it is written', () => {
    expect(addressGroup('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('2001:0db8:0000:0001:ffff:0:0:1')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('2001:DB8:0:1:a:b:c:d')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('2001:db8:0:2::5')).not.toBe(addressGroup('2001:db8:0:1::5'));
  });
});
