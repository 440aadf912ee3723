/**
 * The devnode in corpus mode: serves a pre-generated chain from Bitcoin Core block files
 * (bench/corpus, corpus-manifest.ts) as a synced regtest node would — the RPC methods, REST
 * paths and ZMQ topics the indexer uses — without holding blocks in memory or validating them
 * (they were valid when written). The active chain starts at `tip` and moves forward by
 * `advance(n)`, replaying the manifest's connect/disconnect events (its reorgs) with Core's
 * ZMQ messages (`sequence` C/D, then `hashblock` and `rawblock` for the new tip; per-transaction
 * `hashtx`/`rawtx` are not sent). The mempool is always empty. For benchmarks.
 * @module
 */
import { closeSync } from 'node:fs';
import { hexToBytes, hexToHash } from '../src/bitcoin/hash.js';
import { silentLogger, type Logger } from '../src/log.js';
import { loadCorpusManifest, readCorpusBlock, type CorpusBlock, type CorpusManifest } from './corpus-manifest.js';
import { DevnodeHttpServer, RPC_ERR, RpcError, type RestReply, type RpcMethod } from './rpc-server.js';
import { ZmqPublisher } from './zmq.js';

export interface CorpusNodeOptions {
  /** A corpus directory (corpus.json + blocks/). */
  dir: string;
  host?: string;
  rpcPort?: number;
  zmqPort?: number;
  rpcUser?: string;
  rpcPassword?: string;
  /** Main-chain height the node starts at (default: the corpus tip); events replay up to it. */
  tip?: number;
  log?: Logger;
}

export interface CorpusNode {
  readonly rpcUrl: string;
  readonly restUrl: string;
  readonly zmqUrl: string;
  readonly manifest: CorpusManifest;
  tip(): { height: number; hash: string };
  /** Applies the next `n` connect/disconnect events (with ZMQ); the new tip. */
  advance(n?: number): Promise<{ height: number; hash: string }>;
  /** Applies events until the main chain's block at `height` is the tip. */
  advanceTo(height: number): Promise<{ height: number; hash: string }>;
  /** Events left to apply. */
  remaining(): number;
  /** Serialized block bytes of a record (de-obfuscated). */
  readBlock(b: CorpusBlock): Uint8Array;
  stop(): Promise<void>;
}

/** Starts a corpus node on free ports (unless given). */
export async function startCorpusNode(opts: CorpusNodeOptions): Promise<CorpusNode> {
  const log = opts.log ?? silentLogger();
  const m = await loadCorpusManifest(opts.dir);
  const byHash = new Map<string, CorpusBlock>(m.blocks.map((b) => [b.hash, b]));
  const fds = new Map<number, number>();
  const readBlock = (b: CorpusBlock): Uint8Array => readCorpusBlock(opts.dir, m, b, fds);

  // The active chain and the event cursor.
  const active: CorpusBlock[] = [];
  let cursor = 0;
  const apply = (pub: ZmqPublisher | null): CorpusBlock => {
    const [kind, i] = m.events[cursor++]!;
    const b = m.blocks[i]!;
    if (kind === 'C') {
      if (active.length !== b.height)
        throw new Error(`corpus event ${cursor - 1}: connect ${b.hash} at ${b.height} onto a chain of ${active.length}`);
      active.push(b);
    } else {
      if (active[active.length - 1] !== b) throw new Error(`corpus event ${cursor - 1}: disconnect ${b.hash} that is not the tip`);
      active.pop();
    }
    pub?.publish('sequence', sequenceBody(b.hash, kind));
    return b;
  };
  const target = opts.tip ?? m.tip.height;
  while (cursor < m.events.length && !(active.length - 1 >= target && !active[active.length - 1]!.stale)) apply(null);

  const tip = () => {
    const b = active[active.length - 1]!;
    return { height: b.height, hash: b.hash };
  };
  const block = (hash: unknown): CorpusBlock => {
    const b = typeof hash === 'string' ? byHash.get(hash) : undefined;
    if (!b) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Block not found');
    return b;
  };
  const inActive = (b: CorpusBlock) => active[b.height] === b;
  const header = (b: CorpusBlock) => readBlock(b).subarray(0, 80);
  const headerJson = (b: CorpusBlock) => {
    const t = tip();
    return {
      hash: b.hash,
      confirmations: inActive(b) ? t.height - b.height + 1 : -1,
      height: b.height,
      nTx: b.txs,
      previousblockhash: b.prev,
      ...(inActive(b) && active[b.height + 1] ? { nextblockhash: active[b.height + 1]!.hash } : {}),
    };
  };
  const chainInfo = () => {
    const t = tip();
    return {
      chain: 'regtest',
      blocks: t.height,
      headers: t.height,
      bestblockhash: t.hash,
      initialblockdownload: false,
      verificationprogress: 1,
      pruned: false,
      warnings: [],
    };
  };

  const methods = new Map<string, RpcMethod>();
  const def = (name: string, args: string[], run: (p: unknown[]) => unknown) => methods.set(name, { args, run: (c) => run(c.params) });
  def('getblockcount', [], () => tip().height);
  def('getbestblockhash', [], () => tip().hash);
  def('getblockchaininfo', [], chainInfo);
  def('getblockhash', ['height'], ([h]) => {
    if (typeof h !== 'number' || !Number.isInteger(h) || h < 0 || h >= active.length)
      throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Block height out of range');
    return active[h]!.hash;
  });
  def('getblock', ['blockhash', 'verbosity'], ([hash, verbosity]) => {
    const b = block(hash);
    if (verbosity === 0 || verbosity === false) return Buffer.from(readBlock(b)).toString('hex');
    return { ...headerJson(b), size: b.length };
  });
  def('getblockheader', ['blockhash', 'verbose'], ([hash, verbose]) => {
    const b = block(hash);
    return verbose === false ? Buffer.from(header(b)).toString('hex') : headerJson(b);
  });
  def('getrawmempool', ['verbose', 'mempool_sequence'], ([, seq]) => (seq === true ? { txids: [], mempool_sequence: 1 } : []));
  def('getmempoolinfo', [], () => ({ loaded: true, size: 0, bytes: 0, usage: 0, total_fee: 0 }));
  def('getnetworkinfo', [], () => ({ version: 300000, subversion: '/Blockwire-devnode-corpus:30.0.0/', protocolversion: 70016 }));
  def('getzmqnotifications', [], () =>
    ['pubsequence', 'pubhashblock', 'pubrawblock'].map((type) => ({ type, address: zmq.endpoint, hwm: 1000 })),
  );
  def('uptime', [], () => Math.round(process.uptime()));
  def('estimatesmartfee', [], () => ({ errors: ['Insufficient data or no feerate found'], blocks: 2 }));
  // Not a Core method: moves the corpus forward by n events (or to a main-chain height).
  def('advancecorpus', ['n', 'height'], ([n, height]) =>
    typeof height === 'number' ? advanceTo(height) : advance(typeof n === 'number' ? n : 1),
  );

  const rest = (path: string): RestReply => {
    const p = path.split('?')[0]!;
    const notFound = (what: string): RestReply => ({ status: 404, type: 'text/plain', body: `${what} not found\r\n` });
    let mm: RegExpExecArray | null;
    if (p === '/rest/chaininfo.json') return { status: 200, type: 'application/json', body: `${JSON.stringify(chainInfo())}\n` };
    if ((mm = /^\/rest\/block\/(?:notxdetails\/)?([0-9a-f]{64})\.(bin|hex)$/.exec(p))) {
      const b = byHash.get(mm[1]!);
      if (!b) return notFound(mm[1]!);
      const raw = readBlock(b);
      return mm[2] === 'bin'
        ? { status: 200, type: 'application/octet-stream', body: raw }
        : { status: 200, type: 'text/plain', body: `${Buffer.from(raw).toString('hex')}\n` };
    }
    if ((mm = /^\/rest\/blockhashbyheight\/(\d+)\.(json|hex|bin)$/.exec(p))) {
      const h = Number(mm[1]);
      if (h >= active.length) return { status: 404, type: 'text/plain', body: 'Block height out of range\r\n' };
      const hash = active[h]!.hash;
      if (mm[2] === 'json') return { status: 200, type: 'application/json', body: `${JSON.stringify({ blockhash: hash })}\n` };
      if (mm[2] === 'hex') return { status: 200, type: 'text/plain', body: `${hash}\n` };
      return { status: 200, type: 'application/octet-stream', body: hexToHash(hash) };
    }
    if (p === '/rest/mempool/info.json')
      return { status: 200, type: 'application/json', body: '{"loaded":true,"size":0,"bytes":0,"usage":0}\n' };
    if (p === '/rest/mempool/contents.json')
      return {
        status: 200,
        type: 'application/json',
        body: /mempool_sequence=true/.test(path) ? '{"txids":[],"mempool_sequence":1}\n' : '{}\n',
      };
    return { status: 404, type: 'text/plain', body: '' };
  };

  const user = opts.rpcUser ?? 'blockwire';
  const password = opts.rpcPassword ?? 'blockwire';
  const http = new DevnodeHttpServer({ methods, rest, user, password, log, warmup: () => null });
  const host = opts.host ?? '127.0.0.1';
  const port = await http.listen(host, opts.rpcPort ?? 0);
  const zmq = new ZmqPublisher(log);
  await zmq.start(host, opts.zmqPort ?? 0);

  /** One event; a connected block is announced at once (hashblock, rawblock): a wake-up hint. */
  const advance = async (n = 1) => {
    for (let k = 0; k < n && cursor < m.events.length; k++) {
      const b = apply(zmq);
      if (m.events[cursor - 1]![0] === 'C') {
        zmq.publish('hashblock', hexToBytes(b.hash));
        zmq.publish('rawblock', readBlock(b));
      }
    }
    await zmq.flush();
    return tip();
  };

  const advanceTo = async (height: number) => {
    while (cursor < m.events.length && !(tip().height >= height && !active[active.length - 1]!.stale)) await advance(1);
    return tip();
  };

  return {
    rpcUrl: `http://${user}:${password}@${host}:${port}`,
    restUrl: `http://${host}:${port}/rest`,
    zmqUrl: zmq.endpoint,
    manifest: m,
    tip,
    advance,
    advanceTo,
    remaining: () => m.events.length - cursor,
    readBlock,
    async stop() {
      await http.close();
      await zmq.stop();
      for (const f of fds.values()) closeSync(f);
      fds.clear();
    },
  };
}

function sequenceBody(hashHex: string, label: 'C' | 'D'): Uint8Array {
  const body = new Uint8Array(33);
  body.set(hexToBytes(hashHex), 0);
  body[32] = label.charCodeAt(0);
  return body;
}
