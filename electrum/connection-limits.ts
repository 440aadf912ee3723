/**
 * Connection caps of the Electrum listeners (TCP and TLS together): at most `maxTotal` open
 * connections, and at most `maxPerAddress` from one client address (an IPv4 address; an IPv6
 * address's /64, what one host is usually given), so one address opening connections by the
 * thousand cannot take every slot. A socket is counted from the moment it is accepted (a TLS
 * handshake in progress counts) until it closes. A refused plain-TCP client is told why in one
 * JSON-RPC error line before the socket ends; a refused TLS client is cut before its handshake.
 * @module
 */
import { isIPv6 } from 'node:net';
import type { Socket } from 'node:net';

export type ConnectionLimits = { maxTotal: number; maxPerAddress: number };

/** The group a client address is counted in: the address itself (IPv4, IPv4-mapped), or its /64 (IPv6). */
export function addressGroup(address: string | undefined): string {
  if (address === undefined) return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!isIPv6(address)) return address;
  // expand '::' and keep the first four groups
  const [head = '', tail = ''] = address.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class ConnectionCaps {
  private total = 0;
  private readonly byGroup = new Map<string, number>();
  /** Connections refused since start (total cap, per-address cap). */
  readonly refused = { total: 0, perAddress: 0 };

  constructor(private readonly limits: ConnectionLimits) {}

  /** Open connections counted. */
  get open(): number {
    return this.total;
  }

  /**
   * Counts `socket` if the caps allow it (and uncounts it when it closes); otherwise refuses it:
   * with `tell` (plain TCP) the client reads one error line saying why before the socket ends,
   * without (a TLS handshake not begun) it is cut at once.
   */
  admit(socket: Socket, tell: boolean): boolean {
    const group = addressGroup(socket.remoteAddress);
    const n = this.byGroup.get(group) ?? 0;
    let why: string | undefined;
    if (this.total >= this.limits.maxTotal) {
      this.refused.total++;
      why = `server busy: ${this.limits.maxTotal} connections open`;
    } else if (n >= this.limits.maxPerAddress) {
      this.refused.perAddress++;
      why = `too many connections from your address: at most ${this.limits.maxPerAddress}`;
    }
    if (why !== undefined) {
      socket.on('error', () => {});
      if (tell) socket.end(`${JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: why } })}\n`);
      else socket.destroy();
      socket.setTimeout(1000, () => socket.destroy());
      return false;
    }
    this.total++;
    this.byGroup.set(group, n + 1);
    socket.once('close', () => {
      this.total--;
      const left = (this.byGroup.get(group) ?? 1) - 1;
      if (left <= 0) this.byGroup.delete(group);
      else this.byGroup.set(group, left);
    });
    return true;
  }
}
