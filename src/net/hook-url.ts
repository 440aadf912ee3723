/**
 * The SSRF guard for webhook URLs. A URL is acceptable when it is
 * https on port 443 or 8443, carries no credentials, and its host — an IP literal in any
 * spelling the WHATWG parser accepts (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) or every
 * address its name resolves to — is a public unicast address. The API checks at registration;
 * the webhook worker checks again at connect time through `guardedLookup` (DNS rebinding).
 * `allowPrivate` (BLOCKWIRE_ALLOW_PRIVATE_HOOKS, tests and closed networks) lifts every rule but
 * the shape of the URL.
 * @module
 */
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';

/** Why a hook URL was refused; `message` is safe to show the API client. */
export class HookUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HookUrlError';
  }
}

export type ResolvedAddress = { address: string; family: 4 | 6 };
/** Resolves a host name to every address it has (dns.lookup with `all`, or a test resolver). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export type HookUrlPolicy = {
  /** Allow http, any port and private, loopback and link-local addresses. */
  allowPrivate: boolean;
  /** Name resolution; the system resolver when absent. */
  resolve?: Resolver;
};

const MAX_HOOK_URL_LENGTH = 2048;
const PUBLIC_PORTS = new Set(['', '443', '8443']);

// Everything that is not public unicast: RFC 6890 special-purpose registries, plus ranges that
// embed or translate to IPv4 (NAT64, 6to4, Teredo) so a private IPv4 cannot hide inside them.
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 96],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** True for a public unicast IPv4 or IPv6 address (IPv4-mapped IPv6 judged by its IPv4). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The IP of a URL hostname when it is a literal (`[v6]` unbracketed), else undefined. */
function literalAddress(hostname: string): string | undefined {
  const h = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(h) ? h : undefined;
}

function isLocalName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '' || !h.includes('.');
}

/**
 * Checks the shape of a hook URL and, for IP literals, the address. Returns the parsed URL or
 * throws HookUrlError. No name resolution (see `checkHookUrl`).
 */
export function parseHookUrl(raw: string, policy: Pick<HookUrlPolicy, 'allowPrivate'>): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw new HookUrlError('url is required');
  if (raw.length > MAX_HOOK_URL_LENGTH) throw new HookUrlError(`url is longer than ${MAX_HOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HookUrlError('url is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new HookUrlError(`url scheme ${url.protocol} is not allowed: use https`);
  if (url.username !== '' || url.password !== '') throw new HookUrlError('url must not carry credentials');
  if (policy.allowPrivate) return url;
  if (url.protocol !== 'https:') throw new HookUrlError('url must use https');
  if (!PUBLIC_PORTS.has(url.port)) throw new HookUrlError(`url port ${url.port} is not allowed: use 443 or 8443`);
  const ip = literalAddress(url.hostname);
  if (ip !== undefined) {
    if (!isPublicAddress(ip)) throw new HookUrlError(`url host ${url.hostname} is a private, loopback or reserved address`);
  } else if (isLocalName(url.hostname)) {
    throw new HookUrlError(`url host ${url.hostname} is not a public domain name`);
  }
  return url;
}

/** The system resolver: every A and AAAA address of a name. */
const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

/** Resolves `hostname` and throws HookUrlError unless every address is public. */
async function resolvePublic(hostname: string, resolve: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  let addresses: ResolvedAddress[];
  try {
    addresses = await resolve(hostname);
  } catch (err) {
    throw new HookUrlError(`url host ${hostname} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (addresses.length === 0) throw new HookUrlError(`url host ${hostname} does not resolve`);
  const bad = addresses.find((a) => !isPublicAddress(a.address));
  if (bad) throw new HookUrlError(`url host ${hostname} resolves to ${bad.address}, a private, loopback or reserved address`);
  return addresses;
}

/** The full registration check: shape, then (without allowPrivate) name resolution. */
export async function checkHookUrl(raw: string, policy: HookUrlPolicy): Promise<URL> {
  const url = parseHookUrl(raw, policy);
  if (!policy.allowPrivate && literalAddress(url.hostname) === undefined) await resolvePublic(url.hostname, policy.resolve);
  return url;
}

/**
 * A `lookup` for http(s) agents that refuses names resolving to non-public addresses, so the
 * address connected to is the address checked (no time-of-check/time-of-use gap). IP literals
 * never reach a lookup: check them with `parseHookUrl` before the request.
 */
export function guardedLookup(policy: HookUrlPolicy): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const resolver = policy.resolve ?? systemResolver;
    const run = policy.allowPrivate ? resolver(hostname) : resolvePublic(hostname, resolver);
    run.then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: unknown) => callback(err),
    );
  }) as LookupFunction;
}
