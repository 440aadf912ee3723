/**
 * The typed JSON-RPC client Blockwire uses for bitcoind: the only bitcoind RPC code. Plain
 * `fetch` (undici keep-alive) rather than the `bitcoin-core` npm package, whose v5 rides on the
 * long-deprecated `request` library, turns large numbers into strings (json-bigint
 * storeAsString), has no cookie-file auth, no per-call timeout or abort, and reports HTTP and
 * connection failures as untyped errors. Answers from the node become `RpcError` (Core's numeric
 * code and message); an unreachable, timing-out or warming-up node becomes a RetryableError
 * (`ERR_RPC_UNAVAILABLE`, `ERR_RPC_TIMEOUT`, `ERR_RPC_WARMUP`); rejected credentials a FatalError
 * (`ERR_RPC_AUTH`). Basic auth from the URL or from Core's `.cookie` file (re-read on 401),
 * batches, and at most `maxInFlight` requests at once.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { hexToBytes } from '../bitcoin/hash.js';
import { FatalError, RetryableError } from '../errors.js';
import type { Logger } from '../log.js';
import { ConcurrencyLimit } from './limit.js';
import type {
  BlockchainInfo,
  BlockHeaderInfo,
  BlockInfo,
  ChainTip,
  MempoolEntryInfo,
  MempoolInfo,
  MempoolWithSequence,
  NetworkInfo,
  SmartFeeEstimate,
  TestMempoolAcceptResult,
  TxInfo,
  ZmqNotification,
} from './types.js';

/** Core's RPC error codes Blockwire reacts to. */
export const RPC_CODES = {
  MISC_ERROR: -1,
  TYPE_ERROR: -3,
  INVALID_ADDRESS_OR_KEY: -5,
  INVALID_PARAMETER: -8,
  DESERIALIZATION_ERROR: -22,
  VERIFY_ERROR: -25,
  VERIFY_REJECTED: -26,
  VERIFY_ALREADY_IN_UTXO_SET: -27,
  IN_WARMUP: -28,
  METHOD_NOT_FOUND: -32601,
} as const;

/** An error answer from bitcoind: Core's numeric `code` and `message`. Not retryable by itself. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly method: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export type BitcoindClientOptions = {
  /** `http://user:password@host:port` (credentials optional when `cookieFile` is given). */
  url: string;
  /** Path of bitcoind's `.cookie` file (`__cookie__:<password>`), read lazily and on 401. */
  cookieFile?: string;
  /** Wallet name: calls go to `/wallet/<name>`. */
  wallet?: string;
  /** Per-call timeout (default 30 s). */
  timeoutMs?: number;
  /** Requests in flight at most (default 8). */
  maxInFlight?: number;
  log?: Logger;
};

/** One call of a batch. */
export type BatchCall = { method: string; params?: unknown[] };

/** Errors of a reused connection the server had closed (not of a node that refuses connections). */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

type RpcReply = { result?: unknown; error?: { code: number; message: string } | null; id?: unknown };

function causeCode(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error) {
    const code = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = e.cause;
  }
  return err instanceof Error ? err.message : String(err);
}

export class BitcoindClient {
  private readonly endpoint: string;
  private readonly origin: string;
  private authHeader: string | null;
  private readonly limit: ConcurrencyLimit;
  private nextId = 1;

  constructor(private readonly opts: BitcoindClientOptions) {
    const u = new URL(opts.url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`bitcoind RPC URL must be http(s), got ${u.protocol}`);
    this.authHeader =
      u.username || u.password
        ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
        : null;
    u.username = '';
    u.password = '';
    this.origin = `${u.protocol}//${u.host}`;
    this.endpoint = opts.wallet ? `${this.origin}/wallet/${encodeURIComponent(opts.wallet)}` : `${this.origin}/`;
    this.limit = new ConcurrencyLimit(opts.maxInFlight ?? 8);
  }

  /** Most calls that were in flight at once so far. */
  get maxObservedInFlight(): number {
    return this.limit.maxObserved;
  }

  /** `host:port` of the node (no credentials), for logs. */
  get target(): string {
    return this.origin;
  }

  private async cookieAuth(): Promise<string | null> {
    if (!this.opts.cookieFile) return null;
    try {
      const text = (await readFile(this.opts.cookieFile, 'utf8')).trim();
      return `Basic ${Buffer.from(text).toString('base64')}`;
    } catch (err) {
      throw new RetryableError('ERR_RPC_UNAVAILABLE', `cannot read bitcoind cookie file ${this.opts.cookieFile}: ${causeCode(err)}`, {
        cause: err,
      });
    }
  }

  /** POSTs one JSON-RPC body; returns the parsed JSON (object or array). */
  private async post(body: unknown, label: string): Promise<unknown> {
    return this.limit.run(async () => {
      if (this.authHeader === null && this.opts.cookieFile) this.authHeader = await this.cookieAuth();
      let staleRetried = false;
      let cookieReread = false;
      for (;;) {
        let res: Response;
        try {
          res = await fetch(this.endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(this.authHeader ? { authorization: this.authHeader } : {}) },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
          });
        } catch (err) {
          if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
            throw new RetryableError('ERR_RPC_TIMEOUT', `bitcoind RPC ${label} at ${this.origin} timed out`, { cause: err });
          }
          // A kept-alive connection the node closed meanwhile (it restarted): try once on a new one.
          if (!staleRetried && STALE_CONNECTION.has(causeCode(err))) {
            staleRetried = true;
            continue;
          }
          throw new RetryableError('ERR_RPC_UNAVAILABLE', `bitcoind RPC unreachable at ${this.origin} (${label}): ${causeCode(err)}`, {
            cause: err,
          });
        }
        if (res.status === 401 || res.status === 403) {
          await res.arrayBuffer().catch(() => undefined);
          // A restarted bitcoind writes a new cookie: read it again once.
          if (!cookieReread && this.opts.cookieFile) {
            cookieReread = true;
            this.authHeader = await this.cookieAuth();
            continue;
          }
          throw new FatalError('ERR_RPC_AUTH', `bitcoind RPC at ${this.origin} rejected the credentials (HTTP ${res.status})`);
        }
        const text = await res.text();
        const json = res.headers.get('content-type')?.includes('application/json') ? safeParse(text) : undefined;
        if (json === undefined) {
          throw new RetryableError(
            'ERR_RPC_UNAVAILABLE',
            `bitcoind RPC at ${this.origin} answered HTTP ${res.status} without JSON (${label}): ${text.slice(0, 200)}`,
          );
        }
        return json;
      }
    });
  }

  private unwrap<T>(reply: RpcReply, method: string): T {
    if (reply.error) {
      if (reply.error.code === RPC_CODES.IN_WARMUP) {
        throw new RetryableError('ERR_RPC_WARMUP', `bitcoind is starting: ${reply.error.message}`, {
          cause: new RpcError(reply.error.code, reply.error.message, method),
        });
      }
      throw new RpcError(reply.error.code, reply.error.message, method);
    }
    return reply.result as T;
  }

  /** Calls one method; resolves to its result or throws RpcError / RetryableError / FatalError. */
  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const reply = (await this.post({ jsonrpc: '2.0', id: this.nextId++, method, params }, method)) as RpcReply;
    if (reply === null || typeof reply !== 'object' || Array.isArray(reply)) {
      throw new RetryableError('ERR_RPC_UNAVAILABLE', `bitcoind RPC at ${this.origin} sent an unexpected reply to ${method}`);
    }
    return this.unwrap<T>(reply, method);
  }

  /**
   * Sends several calls in one HTTP request. Each element is the result or the RpcError of that
   * call, in order; a transport failure rejects the whole batch.
   */
  async batch<T = unknown>(calls: BatchCall[]): Promise<(T | RpcError)[]> {
    if (calls.length === 0) return [];
    const first = this.nextId;
    this.nextId += calls.length;
    const body = calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params ?? [] }));
    const replies = await this.post(body, `batch of ${calls.length}`);
    if (!Array.isArray(replies))
      throw new RetryableError('ERR_RPC_UNAVAILABLE', `bitcoind RPC at ${this.origin} answered a batch with a non-array`);
    const byId = new Map<unknown, RpcReply>();
    for (const r of replies as RpcReply[]) byId.set(r.id, r);
    return calls.map((c, i) => {
      const r = byId.get(first + i);
      if (!r) return new RpcError(-32603, 'no reply in batch', c.method);
      try {
        return this.unwrap<T>(r, c.method);
      } catch (err) {
        if (err instanceof RpcError) return err;
        throw err;
      }
    });
  }

  getBlockchainInfo(): Promise<BlockchainInfo> {
    return this.call('getblockchaininfo');
  }

  getBestBlockHash(): Promise<string> {
    return this.call('getbestblockhash');
  }

  getBlockCount(): Promise<number> {
    return this.call('getblockcount');
  }

  /** Hash of the active-chain block at `height` (RpcError -8 "Block height out of range" above the tip). */
  getBlockHash(height: number): Promise<string> {
    return this.call('getblockhash', [height]);
  }

  getBlockHeader(hash: string): Promise<BlockHeaderInfo> {
    return this.call('getblockheader', [hash, true]);
  }

  /** The 80 header bytes. */
  async getBlockHeaderRaw(hash: string): Promise<Uint8Array> {
    return hexBytes(await this.call<string>('getblockheader', [hash, false]));
  }

  /** The serialized block (`getblock <hash> 0`); RpcError -5 "Block not found" when unknown. */
  async getBlockRaw(hash: string): Promise<Uint8Array> {
    return hexBytes(await this.call<string>('getblock', [hash, 0]));
  }

  getBlock(hash: string, verbosity: 1): Promise<BlockInfo<string>>;
  getBlock(hash: string, verbosity: 2 | 3): Promise<BlockInfo<TxInfo>>;
  getBlock(hash: string, verbosity: 1 | 2 | 3): Promise<BlockInfo<string> | BlockInfo<TxInfo>> {
    return this.call('getblock', [hash, verbosity]);
  }

  getChainTips(): Promise<ChainTip[]> {
    return this.call('getchaintips');
  }

  /** Raw transaction bytes (mempool or txindex; or the given block). */
  async getRawTransaction(txid: string, blockhash?: string): Promise<Uint8Array> {
    return hexBytes(await this.call<string>('getrawtransaction', blockhash ? [txid, 0, blockhash] : [txid, 0]));
  }

  getTransaction(txid: string, verbosity: 1 | 2 = 1, blockhash?: string): Promise<TxInfo> {
    return this.call('getrawtransaction', blockhash ? [txid, verbosity, blockhash] : [txid, verbosity]);
  }

  getRawMempool(): Promise<string[]> {
    return this.call('getrawmempool', [false]);
  }

  /** Txids and the mempool sequence they are valid at (the mempool sync seed). */
  getRawMempoolWithSequence(): Promise<MempoolWithSequence> {
    return this.call('getrawmempool', [false, true]);
  }

  getRawMempoolVerbose(): Promise<Record<string, MempoolEntryInfo>> {
    return this.call('getrawmempool', [true]);
  }

  /** RpcError -5 "Transaction not in mempool" when absent. */
  getMempoolEntry(txid: string): Promise<MempoolEntryInfo> {
    return this.call('getmempoolentry', [txid]);
  }

  getMempoolInfo(): Promise<MempoolInfo> {
    return this.call('getmempoolinfo');
  }

  /**
   * Broadcasts a transaction; resolves to its txid. Rejections are RpcError: -25 (missing or
   * spent inputs, fee above maxfeerate), -26 (policy, with Core's reason), -27 (already mined),
   * -22 (undecodable).
   */
  sendRawTransaction(hex: string, maxFeeRateBtcPerKvB?: number): Promise<string> {
    return this.call('sendrawtransaction', maxFeeRateBtcPerKvB === undefined ? [hex] : [hex, maxFeeRateBtcPerKvB]);
  }

  testMempoolAccept(hexes: string[], maxFeeRateBtcPerKvB?: number): Promise<TestMempoolAcceptResult[]> {
    return this.call('testmempoolaccept', maxFeeRateBtcPerKvB === undefined ? [hexes] : [hexes, maxFeeRateBtcPerKvB]);
  }

  estimateSmartFee(confTarget: number, mode?: 'economical' | 'conservative'): Promise<SmartFeeEstimate> {
    return this.call('estimatesmartfee', mode ? [confTarget, mode] : [confTarget]);
  }

  getZmqNotifications(): Promise<ZmqNotification[]> {
    return this.call('getzmqnotifications');
  }

  getNetworkInfo(): Promise<NetworkInfo> {
    return this.call('getnetworkinfo');
  }

  /** Regtest helpers used by tests. */
  generateToAddress(n: number, address: string): Promise<string[]> {
    return this.call('generatetoaddress', [n, address]);
  }

  invalidateBlock(hash: string): Promise<null> {
    return this.call('invalidateblock', [hash]);
  }

  reconsiderBlock(hash: string): Promise<null> {
    return this.call('reconsiderblock', [hash]);
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function hexBytes(hex: string): Uint8Array {
  return hexToBytes(hex);
}
