/**
 * Client for bitcoind's REST interface (`-rest=1`), the cheapest way to fetch blocks: binary
 * blocks, headers, block hash by height, spent outputs (`/rest/spenttxouts`, Core ≥ 30) decoded,
 * chain info, mempool txids with their sequence, and detection of whether REST is enabled. At
 * most `maxInFlight` requests are open at once (default 8: hundreds of concurrent REST requests can crash a node). "Not found" answers
 * (404 `<hash> not found`, `Block height out of range`) resolve to null; an unreachable or
 * warming-up node is a RetryableError (`ERR_REST_UNAVAILABLE`, `ERR_REST_WARMUP`); a request
 * the node calls malformed (HTTP 400) is an AppError `ERR_REST_BAD_REQUEST`; a path the node has
 * no handler for (bare 404: REST off, or spenttxouts before Core 30) is `ERR_REST_UNSUPPORTED`.
 * @module
 */
import { hashToHex } from '../src/bitcoin/hash.js';
import { compactSizeLength, need, readCompactSize } from '../src/bitcoin/wire.js';
import { AppError, RetryableError } from '../src/errors.js';
import { ConcurrencyLimit } from '../src/rpc/limit.js';
import type { BlockchainInfo, MempoolWithSequence } from '../src/rpc/types.js';

/** An output a block's transaction spent, as `/rest/spenttxouts` gives it. */
export type SpentOutput = { value: bigint; script: Uint8Array };

export type BitcoindRestOptions = {
  /** `http://host:port` of the node (credentials in it are ignored: REST has no auth). */
  url: string;
  /** Requests in flight at most (default 8, at most 16). */
  maxInFlight?: number;
  /** Per-request timeout (default 30 s). */
  timeoutMs?: number;
};

type Reply = { status: number; type: string; body: Uint8Array };

/**
 * Decodes the `.bin` answer of `/rest/spenttxouts/<hash>`: one list per transaction of the block
 * (the coinbase's list is empty) of spent outputs (8-byte value, compact-size script).
 */
export function decodeSpentTxOuts(bytes: Uint8Array): SpentOutput[][] {
  const end = bytes.length;
  let p = 0;
  const nTx = readCompactSize(bytes, p, end, 'transaction count');
  p += compactSizeLength(bytes[p]!);
  const out: SpentOutput[][] = [];
  for (let t = 0; t < nTx; t++) {
    const n = readCompactSize(bytes, p, end, 'spent output count');
    p += compactSizeLength(bytes[p]!);
    const list: SpentOutput[] = [];
    for (let i = 0; i < n; i++) {
      need(p, 9, end, 'spent output');
      const value = new DataView(bytes.buffer, bytes.byteOffset + p, 8).getBigInt64(0, true);
      p += 8;
      const len = readCompactSize(bytes, p, end, 'script length');
      p += compactSizeLength(bytes[p]!);
      need(p, len, end, 'script');
      list.push({ value, script: bytes.slice(p, p + len) });
      p += len;
    }
    out.push(list);
  }
  if (p !== end) throw new RangeError(`${end - p} trailing bytes after the spent outputs`);
  return out;
}

export class BitcoindRest {
  private readonly base: string;
  private readonly limit: ConcurrencyLimit;

  constructor(private readonly opts: BitcoindRestOptions) {
    const u = new URL(opts.url);
    this.base = `${u.protocol}//${u.host}/rest`;
    this.limit = new ConcurrencyLimit(Math.min(opts.maxInFlight ?? 8, 16));
  }

  /** Most requests that were in flight at once so far. */
  get maxObservedInFlight(): number {
    return this.limit.maxObserved;
  }

  private get(path: string): Promise<Reply> {
    return this.limit.run(async () => {
      let res: Response;
      try {
        res = await fetch(`${this.base}${path}`, { signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000) });
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
        throw new RetryableError('ERR_REST_UNAVAILABLE', `bitcoind REST unreachable at ${this.base}${path}: ${code}`, { cause: err });
      }
      const body = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, type: res.headers.get('content-type') ?? '', body };
    });
  }

  /** Fails for everything but 200; returns null for Core's "not found" 404s. */
  private check(r: Reply, path: string): Reply | null {
    if (r.status === 200) return r;
    const text = Buffer.from(r.body).toString('utf8').trim();
    if (r.status === 404 && r.type.startsWith('text/plain') && (text.endsWith('not found') || text === 'Block height out of range'))
      return null;
    // No handler for the path (a node without -rest, or one older than the endpoint, e.g. spenttxouts before Core 30).
    if (r.status === 404 && text === '')
      throw new AppError(
        'ERR_REST_UNSUPPORTED',
        `bitcoind does not serve REST ${path} (started without -rest, or too old for this endpoint)`,
      );
    if (r.status === 503) throw new RetryableError('ERR_REST_WARMUP', `bitcoind REST not ready: ${text}`);
    if (r.status === 400) throw new AppError('ERR_REST_BAD_REQUEST', `bitcoind REST refused ${path}: ${text}`);
    throw new RetryableError('ERR_REST_UNAVAILABLE', `bitcoind REST ${path} answered HTTP ${r.status}${text ? `: ${text}` : ''}`);
  }

  /**
   * Whether the node serves REST: true when `/rest/chaininfo.json` answers JSON, false when the
   * node answers 404 without it (started without `-rest`). Unreachable: RetryableError.
   */
  async available(): Promise<boolean> {
    const r = await this.get('/chaininfo.json');
    return r.status === 200 && r.type.startsWith('application/json');
  }

  /** The serialized block, or null when the node does not have it. */
  async getBlock(hash: string): Promise<Uint8Array | null> {
    const r = this.check(await this.get(`/block/${hash}.bin`), `/block/${hash}.bin`);
    return r && r.body;
  }

  /** Up to `count` 80-byte headers of the active chain starting at `hash` (empty if not on it). */
  async getHeaders(hash: string, count: number): Promise<Uint8Array[]> {
    const path = `/headers/${hash}.bin?count=${count}`;
    const r = this.check(await this.get(path), path);
    if (!r) return [];
    if (r.body.length % 80 !== 0) throw new RangeError(`headers answer of ${r.body.length} bytes is not a multiple of 80`);
    const out: Uint8Array[] = [];
    for (let i = 0; i < r.body.length; i += 80) out.push(r.body.slice(i, i + 80));
    return out;
  }

  /** Hash of the active-chain block at `height`, or null above the tip. */
  async getBlockHashByHeight(height: number): Promise<string | null> {
    const path = `/blockhashbyheight/${height}.bin`;
    const r = this.check(await this.get(path), path);
    return r && hashToHex(r.body);
  }

  /** The outputs each transaction of the block spent (Core ≥ 30), or null when unknown. */
  async getSpentTxOuts(hash: string): Promise<SpentOutput[][] | null> {
    const path = `/spenttxouts/${hash}.bin`;
    const r = this.check(await this.get(path), path);
    return r && decodeSpentTxOuts(r.body);
  }

  /** A transaction (mempool or txindex), or null. */
  async getTx(txid: string): Promise<Uint8Array | null> {
    const path = `/tx/${txid}.bin`;
    const r = this.check(await this.get(path), path);
    return r && r.body;
  }

  async getChainInfo(): Promise<BlockchainInfo> {
    const r = this.check(await this.get('/chaininfo.json'), '/chaininfo.json');
    if (!r) throw new RetryableError('ERR_REST_UNAVAILABLE', 'bitcoind REST has no chaininfo');
    return JSON.parse(Buffer.from(r.body).toString('utf8')) as BlockchainInfo;
  }

  /** Mempool txids with the mempool sequence (`/rest/mempool/contents.json?verbose=false&mempool_sequence=true`). */
  async getMempoolWithSequence(): Promise<MempoolWithSequence> {
    const path = '/mempool/contents.json?verbose=false&mempool_sequence=true';
    const r = this.check(await this.get(path), path);
    if (!r) throw new RetryableError('ERR_REST_UNAVAILABLE', 'bitcoind REST has no mempool contents');
    return JSON.parse(Buffer.from(r.body).toString('utf8')) as MempoolWithSequence;
  }
}
