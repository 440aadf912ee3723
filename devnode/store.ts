/**
 * Persistence under --data-dir so a restart continues the same chain: an append-only log of the
 * operations that shape the block tree (blocks received, invalidate/reconsider, replay
 * connects/disconnects), replayed at start without notifications; the mempool saved at stop
 * (as Core's mempool.dat); the wallet seed and address counters; and the RPC cookie file.
 * Record: 1-byte kind, 4-byte little-endian length, payload. A torn last record is ignored.
 * @module
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { bytesToHex, hexToBytes } from '../src/bitcoin/hash.js';

/** One logged operation. */
export type StoredOp =
  | { kind: 'block'; raw: Uint8Array }
  | { kind: 'invalidate'; hash: string }
  | { kind: 'reconsider'; hash: string }
  | { kind: 'replay-connect'; raw: Uint8Array }
  | { kind: 'replay-disconnect' };

const KIND_CODE = { block: 1, invalidate: 2, reconsider: 3, 'replay-connect': 4, 'replay-disconnect': 5 } as const;

export type WalletFile = { seed: string; counters: Record<string, number> };

export class DevnodeStore {
  readonly logPath: string;
  readonly mempoolPath: string;
  readonly walletPath: string;
  readonly cookiePath: string;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.logPath = join(dir, 'chain.log');
    this.mempoolPath = join(dir, 'mempool.txt');
    this.walletPath = join(dir, 'wallet.json');
    this.cookiePath = join(dir, '.cookie');
  }

  /** Every logged operation, in order. */
  readOps(): StoredOp[] {
    if (!existsSync(this.logPath)) return [];
    const buf = readFileSync(this.logPath);
    const ops: StoredOp[] = [];
    let p = 0;
    while (p + 5 <= buf.length) {
      const kind = buf[p]!;
      const len = buf.readUInt32LE(p + 1);
      if (p + 5 + len > buf.length) break;
      const payload = new Uint8Array(buf.subarray(p + 5, p + 5 + len));
      p += 5 + len;
      if (kind === KIND_CODE.block) ops.push({ kind: 'block', raw: payload });
      else if (kind === KIND_CODE.invalidate) ops.push({ kind: 'invalidate', hash: bytesToHex(payload) });
      else if (kind === KIND_CODE.reconsider) ops.push({ kind: 'reconsider', hash: bytesToHex(payload) });
      else if (kind === KIND_CODE['replay-connect']) ops.push({ kind: 'replay-connect', raw: payload });
      else if (kind === KIND_CODE['replay-disconnect']) ops.push({ kind: 'replay-disconnect' });
    }
    return ops;
  }

  /** Appends one operation (synchronously, so the log order is the operation order). */
  append(op: StoredOp): void {
    let payload: Uint8Array;
    if (op.kind === 'block' || op.kind === 'replay-connect') payload = op.raw;
    else if (op.kind === 'invalidate' || op.kind === 'reconsider') payload = hexToBytes(op.hash);
    else payload = new Uint8Array(0);
    const head = Buffer.alloc(5);
    head[0] = KIND_CODE[op.kind];
    head.writeUInt32LE(payload.length, 1);
    appendFileSync(this.logPath, Buffer.concat([head, payload]));
  }

  readMempool(): string[] {
    if (!existsSync(this.mempoolPath)) return [];
    return readFileSync(this.mempoolPath, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
  }

  writeMempool(hexes: string[]): void {
    writeFileSync(this.mempoolPath, hexes.join('\n') + (hexes.length ? '\n' : ''));
  }

  readWallet(): WalletFile | null {
    if (!existsSync(this.walletPath)) return null;
    return JSON.parse(readFileSync(this.walletPath, 'utf8')) as WalletFile;
  }

  writeWallet(w: WalletFile): void {
    writeFileSync(this.walletPath, JSON.stringify(w, null, 2));
  }

  /** Writes a fresh `.cookie` (`__cookie__:<hex>`) and returns its content. */
  writeCookie(): string {
    const cookie = `__cookie__:${randomBytes(32).toString('hex')}`;
    writeFileSync(this.cookiePath, cookie, { mode: 0o600 });
    return cookie;
  }
}
