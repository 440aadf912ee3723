/**
 * The typed API client: one method per route of the Blockwire REST API (blockchain, blocks,
 * addresses with paging, transactions, broadcast, stamps, hooks, subscriptions), the apiKey
 * header, typed errors, `sendTransaction` with retry, and the factory of stream clients.
 * The client also owns the reservation book its transaction builders share.
 * @module
 */
import { hex } from '@scure/base';
import { sha256 } from '@noble/hashes/sha2.js';
import { ApiError, BlockwireError } from './errors.js';
import { OpenAssets } from './assets.js';
import { sleep } from './backoff.js';
import { TransactionBuilder, type BuilderOptions } from './builder.js';
import { createHttp, nextLink, type FetchLike, type Http } from './http.js';
import { getNetwork, type Network, type NetworkName } from './network.js';
import { Reservations } from './reservations.js';
import { sendWithRetry, type SendOptions, type SignedTransaction } from './send.js';
import { EventStream, type StreamOptions } from './stream.js';
import { parseUnspent, toSats, type RawUnspent } from './unspent.js';
import { WalletsApi } from './wallets.js';
import type {
  AddressBatchEntry,
  AddressStats,
  Block,
  BlockHeaderFields,
  MempoolRecentTransaction,
  MempoolSummary,
  MerkleProof,
  Outspend,
  StreamEvent,
  BlockchainStatus,
  DeliveryStatus,
  Hook,
  HookDelivery,
  HookSpec,
  Page,
  StampStatus,
  Subscription,
  SubscriptionSpec,
  Transaction,
  TransactionExtras,
  TransactionInput,
  TransactionOutput,
  UnspentOutput,
} from './types.js';

/** Options of `BlockwireClient`. */
export type ClientOptions = {
  /** Blockwire's base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** The API key (sent in the `apiKey` header). */
  apiKey: string;
  /** The chain the server indexes (default `main`); addresses and keys are checked against it. */
  network?: NetworkName | Network;
  /** Path prefix of the versioned API (default `/v1`). */
  basePath?: string;
  /** Per-request timeout in ms (default 30 000). */
  timeoutMs?: number;
  /** A fetch implementation (default `globalThis.fetch`). */
  fetch?: FetchLike;
  /**
   * A WebSocket constructor for streams (default `globalThis.WebSocket`; Node 20 has none, pass
   * the `ws` package's).
   */
  WebSocket?: StreamOptions['WebSocket'];
  /** How long outputs spent by a broadcast transaction stay reserved (default 10 min). */
  spentReservationTtlMs?: number;
};

/** Paging parameters of the address lists. */
export type PageOptions = {
  /** Items per page (server default 1000, max 10 000). */
  limit?: number;
};

/** Options of the unspent-output list. */
export type UnspentOptions = PageOptions & {
  /** Only outputs with at least this many confirmations. */
  minConf?: number;
};

type RawTransaction = Omit<Transaction, 'inputs' | 'outputs'> & {
  inputs: (Omit<TransactionInput, 'value'> & { value: string | number | null })[];
  outputs: (Omit<TransactionOutput, 'value'> & { value: string | number })[];
};

function parseTransaction(t: RawTransaction): Transaction {
  return {
    ...t,
    inputs: t.inputs.map((i) => ({ ...i, value: i.value === '' || i.value === null ? null : toSats(i.value) })),
    outputs: t.outputs.map((o) => ({ ...o, value: toSats(o.value) })),
  };
}

/** A /v1 transaction view (its extras kept as the server sent them). */
const parseViewWithExtras = (t: RawTransaction & TransactionExtras): Transaction & TransactionExtras =>
  parseTransaction(t) as Transaction & TransactionExtras;

const enc = encodeURIComponent;

/** A script for the `/scripthash` reads: its SHA-256 (64 hex, natural byte order), or the script itself. */
export type ScriptArg = { hash: string } | { script: string | Uint8Array };

const scriptHex = (a: ScriptArg) => ('script' in a ? (typeof a.script === 'string' ? a.script : hex.encode(a.script)) : undefined);
const scriptPath = (a: ScriptArg, what: string) => {
  const s = scriptHex(a);
  return `/scripthash/${s === undefined ? enc((a as { hash: string }).hash) : hex.encode(sha256(hex.decode(s.toLowerCase())))}/${what}`;
};
const scriptQuery = (a: ScriptArg) => ({ script: scriptHex(a) });

/**
 * A client of one Blockwire server for one API key. Long-lived: it holds the reservation book
 * that keeps concurrent transaction builders from spending the same outputs.
 */
export class BlockwireClient {
  /** The network the server indexes. */
  readonly network: Network;
  /** Outputs held by builders of this client. */
  readonly reservations: Reservations;
  private readonly http: Http;
  private readonly options: ClientOptions;
  private assets: OpenAssets | undefined;

  constructor(options: ClientOptions) {
    this.options = options;
    this.network = getNetwork(options.network ?? 'main');
    this.http = createHttp(options);
    this.reservations = new Reservations(options.spentReservationTtlMs);
  }

  /** The versioned API root, e.g. `http://127.0.0.1:3000/v1`. */
  get root(): string {
    return this.http.root;
  }

  /** The wallet routes (`/wallets`): create and read wallets, pay from one (client/wallets.ts). */
  get wallets(): WalletsApi {
    return new WalletsApi(this.http, this.network);
  }

  // ---- chain -------------------------------------------------------------------------------

  /** `GET /blockchain`: the best block. */
  async getBlockchain(): Promise<BlockchainStatus> {
    return (await this.http.request<BlockchainStatus>('GET', '/blockchain')).data;
  }

  /** `GET /blocks/{hash}`. */
  async getBlock(hash: string): Promise<Block> {
    return (await this.http.request<Block>('GET', `/blocks/${enc(hash)}`)).data;
  }

  /** `GET /transactions/{hash}` (confirmed or in the mempool). */
  async getTransaction(hash: string): Promise<Transaction> {
    return parseTransaction((await this.http.request<RawTransaction>('GET', `/transactions/${enc(hash)}`)).data);
  }

  /** `GET /blocks/height/{height}`: the main-chain block at a height, with its header fields. */
  async getBlockAtHeight(height: number): Promise<Block & BlockHeaderFields> {
    return (await this.http.request<Block & BlockHeaderFields>('GET', `/blocks/height/${height}`)).data;
  }

  /** `GET /blocks?limit&start_height`: recent blocks, newest first (no transaction lists). */
  async getRecentBlocks(
    opts: { limit?: number; startHeight?: number } = {},
  ): Promise<(Omit<Block, 'transaction_list'> & BlockHeaderFields)[]> {
    return (
      await this.http.request<(Omit<Block, 'transaction_list'> & BlockHeaderFields)[]>('GET', '/blocks', {
        query: { limit: opts.limit, start_height: opts.startHeight },
      })
    ).data;
  }

  /**
   * One page of `GET /blocks/{hash}/txs`: the block's transactions in block order, each with
   * /v1's fee, sizes and replaceability (`limit` per page, server default 25, max 100); pass
   * `page.next` to `blockTransactionsPage` for the next.
   */
  async getBlockTransactions(hash: string, opts: PageOptions = {}): Promise<Page<Transaction & TransactionExtras>> {
    return this.page(`/blocks/${enc(hash)}/txs`, { limit: opts.limit }, parseViewWithExtras);
  }

  /** The page at a `next` URL of a block's transaction page. */
  async blockTransactionsPage(next: string): Promise<Page<Transaction & TransactionExtras>> {
    return this.page(next, {}, parseViewWithExtras);
  }

  /** Every transaction of the block in block order, fetching pages as iteration goes. */
  blockTransactions(hash: string, opts: PageOptions = {}): AsyncIterableIterator<Transaction & TransactionExtras> {
    return iterateItems(
      () => this.getBlockTransactions(hash, opts),
      (next) => this.blockTransactionsPage(next),
    );
  }

  /** `GET /transactions/{hash}/hex`: the serialized transaction. */
  async getTransactionHex(hash: string): Promise<string> {
    return (await this.http.request<string>('GET', `/transactions/${enc(hash)}/hex`, { text: true })).data;
  }

  /** `GET /transactions/{hash}/raw`: the serialized transaction's bytes (witness included). */
  async getTransactionRaw(hash: string): Promise<Uint8Array> {
    return (await this.http.request<Uint8Array>('GET', `/transactions/${enc(hash)}/raw`, { bytes: true })).data;
  }

  /** `GET /transactions/{hash}/merkle-proof`: the branch from a confirmed transaction to its block's Merkle root. */
  async getMerkleProof(hash: string): Promise<MerkleProof> {
    return (await this.http.request<MerkleProof>('GET', `/transactions/${enc(hash)}/merkle-proof`)).data;
  }

  /** `GET /transactions/{hash}/merkleblock-proof`: Bitcoin Core's `gettxoutproof` bytes for a confirmed transaction, hex (`verifytxoutproof` takes them). */
  async getTxOutProof(hash: string): Promise<string> {
    return (await this.http.request<string>('GET', `/transactions/${enc(hash)}/merkleblock-proof`, { text: true })).data;
  }

  /** `GET /transactions/{hash}/outspends`: for each output, in order, whether and by which transaction and input it is spent. */
  async getOutspends(hash: string): Promise<Outspend[]> {
    return (await this.http.request<Outspend[]>('GET', `/transactions/${enc(hash)}/outspends`)).data;
  }

  /** `GET /transactions/{hash}/outspend/{vout}`: the spend status of one output. */
  async getOutspend(hash: string, vout: number): Promise<Outspend> {
    return (await this.http.request<Outspend>('GET', `/transactions/${enc(hash)}/outspend/${vout}`)).data;
  }

  /** `GET /fee-estimates`: sat/vB by confirmation target in blocks ("1"–"25", "144", "504", "1008"). */
  async getFeeEstimates(opts: { mode?: 'economical' | 'conservative' } = {}): Promise<Record<string, number>> {
    return (await this.http.request<Record<string, number>>('GET', '/fee-estimates', { query: { mode: opts.mode } })).data;
  }

  /** `GET /mempool`: count, vsize, total fee and the fee histogram of the mempool. */
  async getMempool(): Promise<MempoolSummary> {
    return (await this.http.request<MempoolSummary>('GET', '/mempool')).data;
  }

  /** `GET /mempool/recent`: the transactions the mempool took last, newest first (`limit` 1–100, server default 10). */
  async getRecentMempool(opts: { limit?: number } = {}): Promise<MempoolRecentTransaction[]> {
    return (await this.http.request<MempoolRecentTransaction[]>('GET', '/mempool/recent', { query: { limit: opts.limit } })).data;
  }

  // ---- addresses ---------------------------------------------------------------------------

  /** `GET /addresses/{address}/balance`: the sum of the address's unspent outputs. */
  async getBalance(address: string, opts: { minConf?: number } = {}): Promise<bigint> {
    const r = await this.http.request<{ balance: number | string }>('GET', `/addresses/${enc(address)}/balance`, {
      query: { min_conf: opts.minConf },
    });
    return toSats(r.data.balance);
  }

  /** One page of `GET /addresses/{address}/history` (newest first); pass `page.next` to `historyPage` for the next. */
  async getHistory(address: string, opts: PageOptions = {}): Promise<Page<string>> {
    return this.page<string>(`/addresses/${enc(address)}/history`, { limit: opts.limit }, (x) => x);
  }

  /** The page at a `next` URL of a history page. */
  async historyPage(next: string): Promise<Page<string>> {
    return this.page<string>(next, {}, (x) => x);
  }

  /** Every transaction hash of the address, newest first, fetching pages as iteration goes. */
  history(address: string, opts: PageOptions = {}): AsyncIterableIterator<string> {
    return iterateItems(
      () => this.getHistory(address, opts),
      (next) => this.historyPage(next),
    );
  }

  /**
   * The one way to read unspent outputs: every unspent output of the address (`GET
   * /addresses/{address}/unspentoutputs`, every page, `limit` per page), named `txid`/`vout` as
   * `builder.spend()` takes them. An address no transaction has touched (the server's 404
   * `ERR_ADDRESS_NOT_FOUND`) has none. A script's: `getScriptUnspentOutputs`.
   */
  async listUnspentOutputs(address: string, opts: UnspentOptions = {}): Promise<UnspentOutput[]> {
    const all: UnspentOutput[] = [];
    const first = () =>
      this.page<UnspentOutput, RawUnspent>(
        `/addresses/${enc(address)}/unspentoutputs`,
        { limit: opts.limit, min_conf: opts.minConf },
        parseUnspent,
      );
    try {
      for await (const u of iterateItems(first, (next) => this.page<UnspentOutput, RawUnspent>(next, {}, parseUnspent))) all.push(u);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.code === 'ERR_ADDRESS_NOT_FOUND') return [];
      throw err;
    }
    return all;
  }

  private async page<T, R = T>(
    pathOrUrl: string,
    query: Record<string, string | number | undefined>,
    parse: (r: R) => T,
  ): Promise<Page<T>> {
    const r = await this.http.request<R[]>('GET', pathOrUrl, { query });
    if (!Array.isArray(r.data)) throw new TypeError(`Expected a JSON array from ${pathOrUrl}`);
    const link = nextLink(r.headers.get('link'));
    return { items: r.data.map(parse), next: link === null ? null : new URL(link, r.url).toString() };
  }

  /** `GET /addresses/{address}/stats`: outputs funded and spent (count, sum) and transactions, confirmed and in the mempool (Esplora's shape). */
  async getAddressStats(address: string): Promise<AddressStats> {
    const r = (await this.http.request<AddressStats & { address: string }>('GET', `/addresses/${enc(address)}/stats`)).data;
    return { chain_stats: r.chain_stats, mempool_stats: r.mempool_stats };
  }

  /**
   * `POST /addresses/batch`: balances, unspent outputs and statistics of up to 1,000 addresses in
   * one request (one snapshot), in the order given. `include` defaults to the balance.
   */
  async getAddressBatch(
    addresses: readonly string[],
    include: readonly ('balance' | 'unspentoutputs' | 'stats')[] = ['balance'],
  ): Promise<AddressBatchEntry[]> {
    type Raw = { address: string; balance?: number; unspentoutputs?: RawUnspent[]; unspentoutputs_more?: boolean; stats?: AddressStats };
    const r = await this.http.request<Raw[]>('POST', '/addresses/batch', { body: { addresses, include } });
    return r.data.map((x) => ({
      address: x.address,
      ...(x.balance !== undefined ? { balance: toSats(x.balance) } : {}),
      ...(x.unspentoutputs
        ? { unspentOutputs: x.unspentoutputs.map(parseUnspent), unspentOutputsMore: x.unspentoutputs_more === true }
        : {}),
      ...(x.stats ? { stats: x.stats } : {}),
    }));
  }

  /**
   * Reads by output script (`/scripthash/{sha256 of the script}/…`), P2PK and bare multisig
   * included. `script` (hex) gives the script itself: the hash is computed from it and the script
   * sent along, so the server finds where a P2PK or multisig script's outputs are kept without the
   * alias its index records (P2PK outputs spent before the aliases existed are found only so).
   */
  async getScriptStats(script: ScriptArg): Promise<AddressStats> {
    const r = (await this.http.request<AddressStats>('GET', scriptPath(script, 'stats'), { query: scriptQuery(script) })).data;
    return { chain_stats: r.chain_stats, mempool_stats: r.mempool_stats };
  }

  /** `GET /scripthash/{hash}/balance`: confirmed, unconfirmed (mempool net) and their sum, sat. */
  async getScriptBalance(script: ScriptArg): Promise<{ balance: bigint; confirmed: bigint; unconfirmed: bigint }> {
    const r = (
      await this.http.request<{ balance: number; confirmed: number; unconfirmed: number }>('GET', scriptPath(script, 'balance'), {
        query: scriptQuery(script),
      })
    ).data;
    return { balance: toSats(r.balance), confirmed: toSats(r.confirmed), unconfirmed: toSats(r.unconfirmed) };
  }

  /** `GET /scripthash/{hash}/history`: txids funding or spending the script, mempool first, then newest first. */
  async getScriptHistory(script: ScriptArg): Promise<string[]> {
    return (await this.http.request<string[]>('GET', scriptPath(script, 'history'), { query: scriptQuery(script) })).data;
  }

  /** `GET /scripthash/{hash}/unspentoutputs`: the script's unspent outputs (mempool ones with 0 confirmations), named as `listUnspentOutputs` names them. */
  async getScriptUnspentOutputs(script: ScriptArg): Promise<UnspentOutput[]> {
    return (await this.http.request<RawUnspent[]>('GET', scriptPath(script, 'unspentoutputs'), { query: scriptQuery(script) })).data.map(
      parseUnspent,
    );
  }

  /**
   * `GET /events?after&wait`: the key's events after event `after` by long polling, for hosts
   * where WebSockets are blocked: the stream's events (same ids, order and JSON), at once when
   * there are some, else the first ones within `wait` seconds (0–60). Pass `next` as `after` to
   * the next poll; without `after`, events from now on.
   */
  async pollEvents(opts: { after?: number; wait?: number; limit?: number } = {}): Promise<{ events: StreamEvent[]; next: number }> {
    const wait = opts.wait ?? 0;
    const r = await this.http.request<{ events: StreamEvent[]; next: number }>('GET', '/events', {
      query: { after: opts.after, wait, limit: opts.limit },
      // (the answer may take the whole wait)
      timeoutMs: (this.options.timeoutMs ?? 30_000) + wait * 1000,
    });
    return r.data;
  }

  // ---- broadcast ---------------------------------------------------------------------------

  /** `POST /transactions {"tx"}`: broadcasts once. Returns the txid. */
  async broadcast(tx: SignedTransaction): Promise<string> {
    const txHex = typeof tx === 'string' ? tx : tx instanceof Uint8Array ? hex.encode(tx) : tx.hex;
    const r = await this.http.request<{ transaction_hash: string }>('POST', '/transactions', { body: { tx: txHex } });
    return r.data.transaction_hash;
  }

  /**
   * Broadcasts a signed transaction, resubmitting while the error says `retry` (bounded
   * attempts, exponential backoff, `Retry-After` honored) and never when the transaction itself
   * is faulty. Returns the txid.
   */
  async sendTransaction(tx: SignedTransaction, opts: SendOptions = {}): Promise<string> {
    return sendWithRetry((h) => this.broadcast(h), tx, opts);
  }

  // ---- stamps ------------------------------------------------------------------------------

  /** `POST /stamps {"hash"}`: stamps a SHA-256 hash (64 hex chars). Returns the stamp id `<txid>-<vout>`. */
  async createStamp(hash: string, opts: { idempotencyKey?: string } = {}): Promise<string> {
    const headers = opts.idempotencyKey === undefined ? undefined : { 'Idempotency-Key': opts.idempotencyKey };
    const r = await this.http.request<{ stampid: string }>('POST', '/stamps', { body: { hash }, headers });
    return r.data.stampid;
  }

  /** `GET /stamps/{id}`: where the stamp is and how deep, its hash and transaction and, once confirmed, its inclusion proof (check it offline with `verifyStampProof`). */
  async getStamp(id: string): Promise<StampStatus> {
    return (await this.http.request<StampStatus>('GET', `/stamps/${enc(id)}`)).data;
  }

  // ---- hooks ------------------------------------------------------------------------------

  /** `POST /hooks`: registers a delivery target. The answer carries an http hook's `secret` (`whsec_…`), once. */
  async createHook(spec: HookSpec): Promise<Hook> {
    return (await this.http.request<Hook>('POST', '/hooks', { body: spec })).data;
  }

  /** `GET /hooks`: this key's hooks. */
  async listHooks(): Promise<Hook[]> {
    return (await this.http.request<Hook[]>('GET', '/hooks')).data;
  }

  /** `GET /hooks/{id}`. */
  async getHook(id: string): Promise<Hook> {
    return (await this.http.request<Hook>('GET', `/hooks/${enc(id)}`)).data;
  }

  /** `DELETE /hooks/{id}` (a hook no subscription uses). */
  async deleteHook(id: string): Promise<void> {
    await this.http.request<unknown>('DELETE', `/hooks/${enc(id)}`);
  }

  /** `POST /hooks/{id}/rotate-secret`: a new secret; the previous one stays valid until the time given. */
  async rotateHookSecret(id: string): Promise<{ id: string; secret: string; previous_secret_expires_at: string }> {
    return (
      await this.http.request<{ id: string; secret: string; previous_secret_expires_at: string }>('POST', `/hooks/${enc(id)}/rotate-secret`)
    ).data;
  }

  /** `POST /hooks/{id}/enable`: re-enables a hook disabled by a 410 answer. */
  async enableHook(id: string): Promise<Hook> {
    return (await this.http.request<Hook>('POST', `/hooks/${enc(id)}/enable`)).data;
  }

  /** One page of `GET /hooks/{id}/deliveries` (newest event first; `status: 'dead'` lists dead letters). */
  async getHookDeliveries(id: string, opts: PageOptions & { status?: DeliveryStatus } = {}): Promise<Page<HookDelivery>> {
    return this.page<HookDelivery>(`/hooks/${enc(id)}/deliveries`, { limit: opts.limit, status: opts.status }, (x) => x);
  }

  /** Every delivery of the hook, fetching pages as iteration goes. */
  hookDeliveries(id: string, opts: PageOptions & { status?: DeliveryStatus } = {}): AsyncIterableIterator<HookDelivery> {
    return iterateItems(
      () => this.getHookDeliveries(id, opts),
      (next) => this.page<HookDelivery>(next, {}, (x) => x),
    );
  }

  /** `GET /hooks/{id}/deliveries/{delivery}`. */
  async getHookDelivery(id: string, delivery: string): Promise<HookDelivery> {
    return (await this.http.request<HookDelivery>('GET', `/hooks/${enc(id)}/deliveries/${enc(delivery)}`)).data;
  }

  /** `POST /hooks/{id}/deliveries/{delivery}/redeliver`: delivers again (a dead letter, a failed or a delivered one). */
  async redeliver(id: string, delivery: string): Promise<HookDelivery> {
    return (await this.http.request<HookDelivery>('POST', `/hooks/${enc(id)}/deliveries/${enc(delivery)}/redeliver`)).data;
  }

  // ---- subscriptions -----------------------------------------------------------------------

  /** `POST /subscriptions`: watch an address (or the chain). Returns the subscription id. */
  async createSubscription(spec: SubscriptionSpec): Promise<string> {
    return (await this.http.request<{ id: string }>('POST', '/subscriptions', { body: spec })).data.id;
  }

  /** `GET /subscriptions`: this key's subscriptions, every page (oldest first). */
  async listSubscriptions(): Promise<Subscription[]> {
    const all: Subscription[] = [];
    const first = () => this.page<Subscription>('/subscriptions', {}, (x) => x);
    for await (const s of iterateItems(first, (next) => this.page<Subscription>(next, {}, (x) => x))) all.push(s);
    return all;
  }

  /** `DELETE /subscriptions/{id}`. */
  async deleteSubscription(id: string): Promise<void> {
    await this.http.request<unknown>('DELETE', `/subscriptions/${enc(id)}`);
  }

  // ---- building and assets -----------------------------------------------------------------

  /** A transaction builder bound to this client (its outputs are reserved in this client's book). */
  transaction(opts: BuilderOptions = {}): TransactionBuilder {
    return new TransactionBuilder(this, opts);
  }

  /** Open Assets operations (issue, transfer, balances) with one coloring cache per client. */
  get openAssets(): OpenAssets {
    this.assets ??= new OpenAssets(this);
    return this.assets;
  }

  /**
   * Waits until the index knows `txid` with at least `confirmations` confirmations (0: as soon as
   * it is in the mempool) and returns it.
   * @throws BlockwireError `ERR_TIMEOUT` after `timeoutMs` (default 120 s).
   */
  async waitForTransaction(
    txid: string,
    opts: { confirmations?: number; timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {},
  ): Promise<Transaction> {
    const want = opts.confirmations ?? 1;
    const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
    for (;;) {
      let seen: number | undefined;
      try {
        const tx = await this.getTransaction(txid);
        const block = tx.block_hash[0];
        seen = block ? (await this.getBlockchain()).best_height - block.block_height + 1 : 0;
        if (seen >= want) return tx;
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'ERR_TX_NOT_FOUND')) throw err;
      }
      if (Date.now() >= deadline) {
        const state = seen === undefined ? 'not indexed' : `${seen} confirmation${seen === 1 ? '' : 's'}`;
        throw new BlockwireError(
          'ERR_TIMEOUT',
          `Transaction ${txid} has ${state} after ${opts.timeoutMs ?? 120_000} ms; waiting for ${want}`,
        );
      }
      await sleep(opts.intervalMs ?? 1_000, opts.signal);
    }
  }

  // ---- streams -----------------------------------------------------------------------------

  /**
   * Opens the event stream (`/v1/stream`), resuming after `opts.after` if given. It reconnects
   * with backoff and resumes from the last event id seen; no id is delivered twice.
   */
  stream(opts: Omit<StreamOptions, 'url' | 'apiKey'> = {}): EventStream {
    const root = new URL(this.http.root);
    root.protocol = root.protocol === 'https:' ? 'wss:' : 'ws:';
    return new EventStream({
      WebSocket: this.options.WebSocket,
      ...opts,
      url: `${root.toString().replace(/\/$/, '')}/stream`,
      apiKey: this.options.apiKey,
    });
  }
}

async function* iterateItems<T>(first: () => Promise<Page<T>>, nextPage: (next: string) => Promise<Page<T>>): AsyncIterableIterator<T> {
  let page = await first();
  for (;;) {
    yield* page.items;
    if (page.next === null) return;
    page = await nextPage(page.next);
  }
}
