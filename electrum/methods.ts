/**
 * The Electrum protocol methods, 1.4 to 1.6 (docs/electrum.md lists them): each takes the connection's
 * state and the request's params and returns the result, or throws an RpcError. Script hashes
 * are answered from the index by exact script (src/db/queries/script-hash.ts); headers, Merkle
 * branches and block transaction lists from the index; raw transactions of blocks, fee
 * estimates and broadcasts from the node.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { hashToHex, hexToHash } from '../src/bitcoin/hash.js';
import { merkleBranch, merkleLevels } from '../src/bitcoin/merkle.js';
import { readScriptBalance, readScriptUnspent, scriptRef, type ScriptRef } from '../src/db/queries/script-hash.js';
import { findTxPlace, readBlockHashes, readBlockTxids, readHeaders, readMempoolFees } from '../src/db/queries/electrum-chain.js';
import { verifyApiKey } from '../src/auth/keys.js';
import { badRequest, boolParam, hashParam, heightParam, positional, RPC_ERROR, RpcError, uintParam } from './protocol.js';
import { historyItems, mempoolItems } from './status.js';
import { feeHistogram } from './fee-histogram.js';
import { TooLongError, type Subscriber, type Tracker } from './tracker.js';

/** The node calls the Electrum server makes (src/rpc's BitcoindClient satisfies it). */
export interface ElectrumNode {
  call<T = unknown>(method: string, params?: unknown[]): Promise<T>;
}

export type MethodSettings = {
  serverVersion: string;
  banner: string;
  donationAddress: string;
  /** server.features `hosts`: host → ports. */
  hosts: Record<string, { tcp_port?: number; ssl_port?: number }>;
  maxHistory: number;
  maxSubscriptions: number;
  /** Subscriptions of all connections together (each connection's script hashes summed). */
  maxSubscriptionsTotal: number;
  /** Headers per blockchain.block.headers answer at most. */
  maxHeaders: number;
  /** Methods other than server.version/ping/features/banner need blockwire.authenticate first. */
  requireApiKey: boolean;
};

/** A connection's protocol state. */
export type SessionState = Subscriber & {
  subscribed: Set<string>;
  authenticated: boolean;
  version: string | undefined;
  /** Set when the connection must close after this answer (no common protocol version). */
  closeAfterReply: boolean;
};

export type MethodDeps = {
  db: Kysely<Database>;
  node: ElectrumNode;
  tracker: Tracker;
  settings: MethodSettings;
  /** Undefined while the index is at the node's tip, else why answers that read it are refused (sync-gate.ts). */
  syncing?: () => string | undefined;
};

type Handler = (s: SessionState, params: unknown) => Promise<unknown>;

/**
 * Protocol versions spoken: 1.4 (cp_height), 1.4.1 (no AuxPoW here: the same), 1.4.2
 * (scripthash.unsubscribe), 1.6 (headers as a list, mempool.get_info, broadcast_package,
 * relayfee removed; 1.5 was never defined). A connection that has not negotiated speaks 1.4.
 */
export const PROTOCOL_MIN = '1.4';
export const PROTOCOL_MAX = '1.6';
const SPOKEN = ['1.4', '1.4.1', '1.4.2', '1.6'];
/** Methods of one protocol range only: [first version, first version without it]. */
const SINCE: Record<string, [string, string | undefined]> = {
  'blockchain.relayfee': ['1.4', '1.6'],
  'mempool.get_info': ['1.6', undefined],
  'blockchain.transaction.broadcast_package': ['1.6', undefined],
};
const speaks16 = (s: SessionState) => s.version !== undefined && compareVersions(s.version, '1.6') >= 0;

/** Methods answered from the index: refused while it is catching up with the node (the others come from settings or the node). */
const READS_INDEX = new Set([
  'blockchain.headers.subscribe',
  'blockchain.block.header',
  'blockchain.block.headers',
  'blockchain.scripthash.get_balance',
  'blockchain.scripthash.get_history',
  'blockchain.scripthash.get_mempool',
  'blockchain.scripthash.listunspent',
  'blockchain.scripthash.subscribe',
  'blockchain.transaction.get',
  'blockchain.transaction.get_merkle',
  'blockchain.transaction.id_from_pos',
  'mempool.get_fee_histogram',
]);

/** Methods allowed before authentication when an API key is required. */
const OPEN_METHODS = new Set(['server.version', 'server.ping', 'server.features', 'server.banner', 'blockwire.authenticate']);

const versionParts = (v: string) => v.split('.').map((x) => Number(x));
function compareVersions(a: string, b: string): number {
  const x = versionParts(a);
  const y = versionParts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** A node failure as the client sees it: Core's message for its answers (code 2, as electrs), else "node unavailable". */
function nodeError(err: unknown): RpcError {
  const e = err as { code?: unknown; message?: string };
  if (typeof e?.code === 'number') return new RpcError(RPC_ERROR.DAEMON_ERROR, e.message ?? 'node error');
  return new RpcError(RPC_ERROR.DAEMON_ERROR, `node unavailable: ${(err as Error)?.message ?? String(err)}`);
}

/** `refused(message)` when the node answered with an error of its own (a rejection), else the node failure. */
async function callNode<T>(node: ElectrumNode, method: string, params: unknown[], refused?: (message: string) => RpcError): Promise<T> {
  try {
    return await node.call<T>(method, params);
  } catch (err) {
    const e = err as { code?: unknown; message?: string };
    if (refused && typeof e?.code === 'number') throw refused(e.message ?? 'node error');
    throw nodeError(err);
  }
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** A short-lived memo of one async value. */
function memo<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let at = 0;
  let value: Promise<T> | undefined;
  return () => {
    if (!value || Date.now() - at > ttlMs) {
      at = Date.now();
      value = load();
      value.catch(() => {
        value = undefined;
      });
    }
    return value;
  };
}

/** The method table. */
export function createMethods(deps: MethodDeps): {
  call(s: SessionState, method: string, params: unknown): Promise<unknown>;
  /** Gives back the subscriptions of a connection that closed (counted against maxSubscriptionsTotal). */
  release(s: SessionState): void;
} {
  const { db, node, tracker, settings } = deps;
  /** Subscriptions of every connection, counted when a script hash enters a connection's set. */
  let subscriptions = 0;
  const subscribed = (s: SessionState, hex: string) => {
    if (!s.subscribed.has(hex)) subscriptions++;
    s.subscribed.add(hex);
  };
  const unsubscribed = (s: SessionState, hex: string) => {
    if (s.subscribed.delete(hex)) subscriptions--;
  };

  const scripthash = (params: unknown): { hex: string; ref: ScriptRef } => {
    const [h] = positional(params, ['scripthash']);
    const hex = hashParam(h, 'scripthash');
    return { hex, ref: scriptRef(hexToHash(hex)) };
  };
  const history = async (ref: ScriptRef) => {
    const h = await tracker.history(ref);
    if (h.kind !== 'ok') throw tooLarge(h.count);
    return h;
  };
  const tooLarge = (count?: number) =>
    badRequest(
      `history too large${count !== undefined ? `: ${count} transactions` : ''}, this server answers at most ${settings.maxHistory}`,
    );
  const tipHeight = () => tracker.tip()?.height ?? -1;
  const proofOf = async (height: number, cp: number) => {
    if (cp > tipHeight()) throw badRequest(`cp_height ${cp} is above the tip (${tipHeight()})`);
    const p = await tracker.proofs.prove(height, cp);
    return { branch: p.branch.map(hashToHex), root: hashToHex(p.root) };
  };
  const genesis = memo(3_600_000, async () => {
    const [h] = await readBlockHashes(db, 0, 0);
    if (!h) throw new RpcError(RPC_ERROR.INTERNAL, 'the index holds no block yet');
    return hashToHex(h);
  });
  const relayFee = memo(600_000, async () => (await callNode<{ relayfee: number }>(node, 'getnetworkinfo', [])).relayfee);
  const mempoolInfo = memo(5_000, async () => {
    const i = await callNode<{ mempoolminfee: number; minrelaytxfee: number; incrementalrelayfee: number }>(node, 'getmempoolinfo', []);
    return { mempoolminfee: i.mempoolminfee, minrelaytxfee: i.minrelaytxfee, incrementalrelayfee: i.incrementalrelayfee };
  });
  const histogram = memo(10_000, async () => feeHistogram(await readMempoolFees(db)));
  const estimates = new Map<string, () => Promise<number>>();

  const handlers: Record<string, Handler> = {
    'server.version': async (s, params) => {
      // (further arguments are ignored, as 1.6 requires; only the first server.version counts, as ElectrumX)
      if (s.version !== undefined) throw badRequest('server.version already sent');
      const [client, requested] = positional(params, ['client_name', 'protocol_version']);
      if (client !== undefined && typeof client !== 'string') throw badRequest('client_name must be a string');
      let min = PROTOCOL_MIN;
      let max = PROTOCOL_MIN;
      if (typeof requested === 'string') min = max = requested;
      else if (Array.isArray(requested) && requested.length === 2 && requested.every((v) => typeof v === 'string'))
        [min, max] = requested as [string, string];
      else if (requested !== undefined) throw badRequest('protocol_version must be a version string or [min, max]');
      const chosen = [...SPOKEN].reverse().find((v) => compareVersions(v, min) >= 0 && compareVersions(v, max) <= 0);
      if (!chosen) {
        s.closeAfterReply = true;
        throw badRequest(
          `unsupported protocol version: ${JSON.stringify(requested)}; this server speaks ${PROTOCOL_MIN} to ${PROTOCOL_MAX}`,
        );
      }
      s.version = chosen;
      return [settings.serverVersion, chosen];
    },
    'server.banner': async () => settings.banner,
    'server.donation_address': async () => settings.donationAddress,
    'server.features': async () => ({
      genesis_hash: await genesis(),
      hosts: settings.hosts,
      protocol_max: PROTOCOL_MAX,
      protocol_min: PROTOCOL_MIN,
      pruning: null,
      server_version: settings.serverVersion,
      hash_function: 'sha256',
    }),
    'server.ping': async () => null,
    'server.peers.subscribe': async () => [],
    'blockwire.authenticate': async (s, params) => {
      const [key] = positional(params, ['api_key']);
      if (typeof key !== 'string' || key === '') throw badRequest('api_key must be a string');
      const principal = await verifyApiKey(db, key.slice(0, 256));
      if (!principal) throw new RpcError(RPC_ERROR.UNAUTHORIZED, 'invalid API key');
      s.authenticated = true;
      return true;
    },

    'blockchain.headers.subscribe': async (s) => {
      const tip = tracker.tip();
      if (!tip) throw new RpcError(RPC_ERROR.INTERNAL, 'the index holds no block yet');
      tracker.subscribeHeaders(s);
      return { hex: tip.header.toString('hex'), height: tip.height };
    },
    'blockchain.block.header': async (_s, params) => {
      const [h, c] = positional(params, ['height', 'cp_height']);
      const height = heightParam(h, 'height');
      const cp = heightParam(c, 'cp_height', 0);
      if (cp !== 0 && height > cp) throw badRequest(`height ${height} is above cp_height ${cp}`);
      const [header] = await readHeaders(db, height, 1);
      if (!header) throw badRequest(`height ${height} out of range`);
      if (cp === 0) return header.toString('hex');
      return { header: header.toString('hex'), ...(await proofOf(height, cp)) };
    },
    'blockchain.block.headers': async (s, params) => {
      const [st, n, c] = positional(params, ['start_height', 'count', 'cp_height']);
      const start = heightParam(st, 'start_height');
      const count = uintParam(n, 'count');
      const cp = heightParam(c, 'cp_height', 0);
      if (cp !== 0 && count > 0 && start + count - 1 > cp)
        throw badRequest(`start_height + count - 1 (${start + count - 1}) is above cp_height ${cp}`);
      const headers = await readHeaders(db, start, Math.min(count, settings.maxHeaders));
      // 1.6: a list of headers; before: one concatenated hex string
      const out: Record<string, unknown> = speaks16(s)
        ? { count: headers.length, headers: headers.map((x) => x.toString('hex')), max: settings.maxHeaders }
        : { count: headers.length, hex: Buffer.concat(headers).toString('hex'), max: settings.maxHeaders };
      if (cp !== 0 && headers.length > 0) Object.assign(out, await proofOf(start + headers.length - 1, cp));
      return out;
    },
    'blockchain.estimatefee': async (_s, params) => {
      const [n, m] = positional(params, ['number', 'mode']);
      const target = uintParam(n, 'number');
      // 1.6's mode, passed to estimatesmartfee (ElectrumX's list: absent, CONSERVATIVE, ECONOMICAL)
      const mode = typeof m === 'string' ? m.toUpperCase() : m === undefined || m === null ? undefined : m;
      if (mode !== undefined && mode !== 'CONSERVATIVE' && mode !== 'ECONOMICAL')
        throw badRequest(`unknown estimatefee mode: ${String(m)}`);
      const blocks = Math.max(1, Math.min(target, 1008));
      const key = `${blocks}:${mode ?? ''}`;
      let get = estimates.get(key);
      if (!get) {
        get = memo(30_000, async () => {
          const r = await callNode<{ feerate?: number }>(node, 'estimatesmartfee', mode === undefined ? [blocks] : [blocks, mode]);
          return typeof r.feerate === 'number' ? r.feerate : -1;
        });
        estimates.set(key, get);
      }
      return get();
    },
    'blockchain.relayfee': async () => relayFee(),
    'mempool.get_info': async () => mempoolInfo(),

    'blockchain.scripthash.get_balance': async (_s, params) => {
      const b = await readScriptBalance(db, scripthash(params).ref);
      return { confirmed: b.confirmed, unconfirmed: b.unconfirmed };
    },
    'blockchain.scripthash.get_history': async (_s, params) => historyItems(await history(scripthash(params).ref)),
    'blockchain.scripthash.get_mempool': async (_s, params) => mempoolItems(await history(scripthash(params).ref)),
    'blockchain.scripthash.listunspent': async (_s, params) => {
      const rows = await readScriptUnspent(db, scripthash(params).ref, settings.maxHistory);
      if (rows.length > settings.maxHistory) throw tooLarge();
      return rows.map((u) => ({ tx_hash: hashToHex(u.txid), tx_pos: u.vout, height: u.height, value: u.value }));
    },
    'blockchain.scripthash.subscribe': async (s, params) => {
      const { hex, ref } = scripthash(params);
      if (!s.subscribed.has(hex)) {
        if (s.subscribed.size >= settings.maxSubscriptions)
          throw badRequest(`too many subscriptions: this server allows ${settings.maxSubscriptions} per connection`);
        if (subscriptions >= settings.maxSubscriptionsTotal)
          throw badRequest(
            `server subscription budget reached: ${settings.maxSubscriptionsTotal} subscriptions across all connections; try again later or another server`,
          );
      }
      try {
        subscribed(s, hex);
        return await tracker.subscribe(s, hex, ref);
      } catch (err) {
        unsubscribed(s, hex);
        if (err instanceof TooLongError) throw tooLarge();
        throw err;
      }
    },
    'blockchain.scripthash.unsubscribe': async (s, params) => {
      const { hex } = scripthash(params);
      unsubscribed(s, hex);
      return tracker.unsubscribe(s, hex);
    },

    'blockchain.transaction.broadcast': async (_s, params) => {
      const [raw] = positional(params, ['raw_tx']);
      if (typeof raw !== 'string' || !HEX.test(raw)) throw badRequest('raw_tx must be a transaction in hexadecimal');
      // a rejection is a bad request with Core's message, worded as ElectrumX words it (Electrum matches Core's messages in it)
      return callNode<string>(node, 'sendrawtransaction', [raw], (m) =>
        badRequest(`the transaction was rejected by network rules.\n\n${m}\n[${raw}]`),
      );
    },
    'blockchain.transaction.broadcast_package': async (_s, params) => {
      const [txs, v] = positional(params, ['raw_txs', 'verbose']);
      if (!Array.isArray(txs)) throw badRequest('raw_txs must be a list of transactions in hexadecimal');
      if (!txs.every((t) => typeof t === 'string' && HEX.test(t)))
        throw badRequest('raw_txs must be a list of transactions in hexadecimal');
      const verbose = boolParam(v, 'verbose', false);
      type Package = { package_msg: string; 'tx-results'?: Record<string, { txid?: string; error?: string }> };
      const r = await callNode<Package>(node, 'submitpackage', [txs], (m) =>
        badRequest(`the tx package was rejected by network rules.\n\n${m}.`),
      );
      if (verbose) return r;
      const errors = Object.values(r['tx-results'] ?? {})
        .filter((t) => t.error)
        .map((t) => ({ txid: t.txid, error: t.error }));
      return { success: r.package_msg === 'success', ...(errors.length > 0 ? { errors } : {}) };
    },
    'blockchain.transaction.get': async (_s, params) => {
      const [h, v] = positional(params, ['tx_hash', 'verbose']);
      const txid = hashParam(h, 'tx_hash');
      const verbose = boolParam(v, 'verbose', false);
      const place = await findTxPlace(db, Buffer.from(hexToHash(txid)));
      if (place.kind === 'mempool' && !verbose) return place.raw.toString('hex');
      const args: unknown[] = [txid, verbose];
      if (place.kind === 'block') args.push(hashToHex(place.blockHash));
      return callNode(node, 'getrawtransaction', args);
    },
    'blockchain.transaction.get_merkle': async (_s, params) => {
      const [h, ht] = positional(params, ['tx_hash', 'height']);
      const txid = hashParam(h, 'tx_hash');
      const height = heightParam(ht, 'height');
      const block = await readBlockTxids(db, height);
      if (!block) throw badRequest(`height ${height} out of range`);
      const want = Buffer.from(hexToHash(txid));
      const pos = block.txids.findIndex((t) => t.equals(want));
      if (pos < 0) throw badRequest(`tx ${txid} not in block at height ${height}`);
      return { block_height: height, merkle: merkleBranch(merkleLevels(block.txids), pos).map(hashToHex), pos };
    },
    'blockchain.transaction.id_from_pos': async (_s, params) => {
      const [ht, p, m] = positional(params, ['height', 'tx_pos', 'merkle']);
      const height = heightParam(ht, 'height');
      const pos = uintParam(p, 'tx_pos');
      const merkle = boolParam(m, 'merkle', false);
      const block = await readBlockTxids(db, height);
      if (!block) throw badRequest(`height ${height} out of range`);
      if (pos >= block.txids.length) throw badRequest(`tx_pos ${pos} out of range in block at height ${height}`);
      const txHash = hashToHex(block.txids[pos]!);
      if (!merkle) return txHash;
      return { tx_hash: txHash, merkle: merkleBranch(merkleLevels(block.txids), pos).map(hashToHex) };
    },
    'mempool.get_fee_histogram': async () => histogram(),
  };

  return {
    release(s) {
      subscriptions -= s.subscribed.size;
      s.subscribed.clear();
    },
    async call(s, method, params) {
      let handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
      const range = Object.hasOwn(SINCE, method) ? SINCE[method] : undefined;
      if (range) {
        const v = s.version ?? PROTOCOL_MIN;
        if (compareVersions(v, range[0]) < 0 || (range[1] !== undefined && compareVersions(v, range[1]) >= 0)) handler = undefined;
      }
      if (!handler) throw new RpcError(RPC_ERROR.METHOD_NOT_FOUND, `unknown method '${method}'`);
      if (settings.requireApiKey && !s.authenticated && !OPEN_METHODS.has(method))
        throw new RpcError(RPC_ERROR.UNAUTHORIZED, 'this server requires an API key: call blockwire.authenticate first');
      if (READS_INDEX.has(method)) {
        const behind = deps.syncing?.();
        if (behind !== undefined) throw badRequest(behind);
      }
      return handler(s, params);
    },
  };
}
