/**
 * A plain Electrum protocol client for tests: newline-delimited JSON-RPC over TCP or TLS, one
 * pending promise per request id, notifications kept in arrival order. `raw()` writes bytes as
 * given (malformed requests, batches, oversized lines).
 */
import { createHash } from 'node:crypto';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export type Notification = { method: string; params: unknown[] };

export class ElectrumRpcError extends Error {
  constructor(
    readonly code: number,
    readonly rpcMessage: string,
  ) {
    super(`${code} ${rpcMessage}`);
  }
}

export type ElectrumTestClient = {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Writes `text` as is (add the newline yourself). */
  raw(text: string): void;
  /** Every reply or array of replies that had no waiting request (batches sent with raw()), in order. */
  readonly loose: unknown[];
  readonly notifications: Notification[];
  /** Resolves when the server has closed the connection. */
  readonly closed: Promise<void>;
  close(): void;
};

export async function connectElectrum(
  port: number,
  opts: { tls?: boolean; host?: string; ca?: string; localAddress?: string } = {},
): Promise<ElectrumTestClient> {
  const host = opts.host ?? '127.0.0.1';
  const local = opts.localAddress ? { localAddress: opts.localAddress } : {};
  const socket: Socket = await new Promise((resolve, reject) => {
    const s = opts.tls
      ? tlsConnect({ host, port, ...local, ...(opts.ca ? { ca: opts.ca, servername: 'localhost' } : { rejectUnauthorized: false }) }, () =>
          resolve(s),
        )
      : tcpConnect({ host, port, ...local }, () => resolve(s));
    s.once('error', reject);
  });
  socket.on('error', () => {});
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const notifications: Notification[] = [];
  const loose: unknown[] = [];
  let nextId = 1;
  let buf = '';
  const deliver = (msg: Record<string, unknown>) => {
    if (typeof msg.method === 'string') {
      notifications.push({ method: msg.method, params: msg.params as unknown[] });
      return;
    }
    const p = typeof msg.id === 'number' ? pending.get(msg.id) : undefined;
    if (!p) {
      loose.push(msg);
      return;
    }
    pending.delete(msg.id as number);
    const err = msg.error as { code: number; message: string } | undefined;
    if (err) p.reject(new ElectrumRpcError(err.code, err.message));
    else p.resolve(msg.result);
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim() === '') continue;
      const parsed = JSON.parse(line) as unknown;
      if (Array.isArray(parsed)) loose.push(parsed);
      else deliver(parsed as Record<string, unknown>);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void closed.then(() => {
    for (const p of pending.values()) p.reject(new Error('connection closed'));
    pending.clear();
  });
  return {
    request<T>(method: string, params: unknown[] = []) {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });
    },
    raw: (text) => void socket.write(text),
    loose,
    notifications,
    closed,
    close: () => socket.destroy(),
  };
}

/** Electrum's script hash of an output script (hex): its SHA-256, byte-reversed, as hex. */
export function electrumScriptHash(scriptHex: string): string {
  return Buffer.from(createHash('sha256').update(Buffer.from(scriptHex, 'hex')).digest())
    .reverse()
    .toString('hex');
}
