/**
 * startDevnode: wires the node, the built-in wallet, ZMQ, the RPC/REST server, persistence,
 * replay and background mining, and returns the handle tests drive (mining, reorg helpers,
 * wallet, fault injection, stop). See README.md for the contract.
 * @module
 */
import { decodeBlock, type DecodedBlock } from '../src/bitcoin/block.js';
import { bytesToHex, hashToHex, hexToBytes } from '../src/bitcoin/hash.js';
import { decodeTx } from '../src/bitcoin/tx.js';
import { silentLogger, type Logger } from '../src/log.js';
import { regtestScript } from './address.js';
import { broadcastTx } from './broadcast.js';
import type { BlockEntry } from './chain.js';
import { genesisBytes } from './consensus.js';
import type { DevnodeContext, MineOptions } from './context.js';
import { assembleBlock } from './miner.js';
import { Node, type BlockResult } from './node.js';
import { zmqSignals } from './notifications.js';
import { loadReplay, Replayer } from './replay.js';
import { createRest } from './rest.js';
import { chainMethods } from './rpc-chain.js';
import { miscMethods } from './rpc-misc.js';
import { DevnodeHttpServer, RpcError, type HttpStats, type RpcMethod } from './rpc-server.js';
import { setFeeEstimate, txMethods } from './rpc-tx.js';
import { samplePayments } from './samples.js';
import { DevnodeStore, type StoredOp } from './store.js';
import { randomSeed, Wallet, type AddressType, type Destination, type PaymentTarget, type SendOptions } from './wallet.js';
import { ZmqPublisher, type ZmqFaults } from './zmq.js';

export type DevnodeOptions = {
  host?: string;
  rpcPort?: number;
  zmqPort?: number;
  rpcUser?: string;
  rpcPassword?: string;
  dataDir?: string;
  replay?: { dir: string; pace?: number | 'all' | 'manual' };
  mineEvery?: number;
  samplePayments?: boolean;
  initialBlocks?: number;
  verifyScripts?: boolean;
  /** Serve REST (default true); false answers /rest/ with 404 as a node without -rest. */
  rest?: boolean;
  walletSeed?: string;
  log?: Logger;
};

/** A rejected RPC-level operation (code and message as bitcoind would answer). */
export { RpcError as DevnodeRpcError };

export type DevnodeFaults = {
  zmq: ZmqFaults;
  hideBlock(hash: string): void;
  unhideBlock(hash: string): void;
  down(): Promise<void>;
  up(): Promise<void>;
  outage(ms: number): Promise<void>;
  restart(): Promise<void>;
  warmup(on?: boolean): void;
  /**
   * Answer estimatesmartfee with this rate (sat/kvB), found at `blocks` (default 2) or the asked
   * target if higher; null for "Insufficient data". The RPC `setfeeestimate` does the same.
   */
  setFeeEstimate(perKvB: bigint | null, blocks?: number): void;
};

export type Devnode = {
  readonly rpcUrl: string;
  readonly restUrl: string;
  readonly zmqUrl: string;
  readonly rpc: { host: string; port: number; user: string; password: string };
  readonly cookieFile: string | null;
  /** The node model itself, for assertions that need more than RPC. */
  readonly node: Node;
  tip(): { height: number; hash: string };
  blockHash(height: number): string;
  mine(n?: number, opts?: { address?: string; txs?: string[]; includeMempool?: boolean; time?: number }): Promise<string[]>;
  mineOn(parentHash: string, n?: number, opts?: { address?: string; txs?: string[]; time?: number }): Promise<string[]>;
  invalidate(hash: string): Promise<void>;
  reconsider(hash: string): Promise<void>;
  reorg(depth: number, opts?: { newBlocks?: number; keepTxs?: boolean }): Promise<{ disconnected: string[]; connected: string[] }>;
  broadcast(hex: string): Promise<string>;
  mempool(): string[];
  wallet: {
    address(type: AddressType): string;
    destination(type: AddressType): Destination;
    newAddress(type: AddressType): Destination;
    /** True when the wallet can spend this output script (hex or bytes). */
    owns(script: string | Uint8Array): boolean;
    balance(): bigint;
    send(to: PaymentTarget, sats: bigint, opts?: SendOptions): Promise<string>;
    createTx(to: PaymentTarget | null, sats: bigint, opts?: SendOptions): string;
    bumpFee(txid: string, opts?: { feeRate?: number }): Promise<string>;
  };
  faults: DevnodeFaults;
  replay: { done: Promise<void>; step(n?: number): number; position(): { applied: number; total: number } } | null;
  /** HTTP request counters: total, in flight now, most in flight at once (RPC and REST). */
  stats(): HttpStats;
  /** Called when a client sends the `stop` RPC (default: the devnode stops itself). */
  onStopRequest(listener: () => void): void;
  stop(): Promise<void>;
};

const WARMUP_MESSAGE = 'Loading block index…';

/** Starts a devnode; resolves once RPC/REST and ZMQ listen (and a `pace: 'all'` replay finished). */
export async function startDevnode(opts: DevnodeOptions = {}): Promise<Devnode> {
  const log = opts.log ?? silentLogger();
  log.warn('devnode: a Bitcoin Core 30 regtest STAND-IN written in Blockwire, NOT bitcoind (tests, CI and the quick start only)');
  const host = opts.host ?? '127.0.0.1';
  const user = opts.rpcUser ?? 'blockwire';
  const password = opts.rpcPassword ?? 'blockwire';
  const store = opts.dataDir ? new DevnodeStore(opts.dataDir) : null;
  const node = new Node({ genesis: decodeBlock(genesisBytes()), verifyScripts: opts.verifyScripts ?? true, log });

  // Wallet seed: option, then the data dir, then random (persisted when there is a data dir).
  const saved = store?.readWallet() ?? null;
  const seedHex = opts.walletSeed ?? saved?.seed ?? bytesToHex(randomSeed());
  const wallet = new Wallet(node, hexToBytes(seedHex), (saved?.counters ?? {}) as Partial<Record<AddressType, number>>);
  const saveWallet = () => store?.writeWallet({ seed: seedHex, counters: wallet.counters() });
  saveWallet();

  // Rebuild the chain from the log, quietly (no notifications yet, no script or time checks).
  const persist = (op: StoredOp) => store?.append(op);
  if (store) {
    const verify = node.verifyScripts;
    node.verifyScripts = false;
    for (const op of store.readOps()) {
      if (op.kind === 'block') node.processBlock(decodeBlock(op.raw), { checkTime: false, checkScripts: false });
      else if (op.kind === 'replay-connect') node.replayConnect(decodeBlock(op.raw));
      else if (op.kind === 'replay-disconnect') node.replayDisconnect();
      else {
        const e = node.chain.get(op.hash);
        if (e && op.kind === 'invalidate') node.invalidateBlock(e);
        else if (e) node.reconsiderBlock(e);
      }
    }
    node.verifyScripts = verify;
    for (const hex of store.readMempool()) {
      try {
        node.acceptTx(decodeTx(hexToBytes(hex)));
      } catch (err) {
        log.debug({ err }, 'devnode: saved mempool transaction not reloaded');
      }
    }
    if (node.chain.height() > 0)
      log.info({ height: node.chain.height(), hash: node.chain.tip().hash }, 'devnode: chain loaded from data dir');
  }

  const zmq = new ZmqPublisher(log);
  let zmqEndpoint = await zmq.start(host, opts.zmqPort ?? 0);
  const signals = zmqSignals(zmq);
  node.setSignals(signals);
  // Core connects the genesis block while it sets up a new datadir, before anyone can have
  // subscribed: the genesis coinbase's hashtx and rawtx and its sequence `C` take counter 0 of
  // those topics (no hashblock: the tip did not move from an earlier one), so a subscriber's
  // first messages of them carry 1. A datadir that was used before starts every counter at 0.
  if (saved === null && node.chain.height() === 0) signals.blockConnected(node.chain.tip());

  const hidden = new Set<string>();
  const feeEstimate = { perKvB: null as bigint | null, blocks: 2 };
  let warm = false;
  let stopRequested: (() => void) | null = null;
  let stopListener: (() => void) | null = null;

  const submitBlock = (block: DecodedBlock, o: { checkTime?: boolean } = {}): BlockResult => {
    const r = node.processBlock(block, o);
    if (r.status === 'accepted' || r.status === 'inconclusive') persist({ kind: 'block', raw: block.bytes });
    return r;
  };
  const mine = (n: number, payout: Uint8Array, o: MineOptions = {}): string[] => {
    const hashes: string[] = [];
    let parent = o.parent;
    for (let i = 0; i < n; i++) {
      const template = (time?: number) =>
        assembleBlock(node, {
          payoutScript: payout,
          ...(i === 0 && o.txs ? { txs: o.txs } : {}),
          ...(o.txsPerBlock?.[i] ? { txs: o.txsPerBlock[i] } : {}),
          useMempool: o.useMempool ?? parent === undefined,
          ...(parent ? { parent } : {}),
          ...(time !== undefined ? { time } : {}),
        });
      let block = template(o.time !== undefined ? o.time + i : undefined);
      // Same parent, transactions and second as a block already known (say one just invalidated):
      // move the time on so the new block is a different one.
      for (let bump = 1; node.chain.get(hashToHex(block.hash)) && bump < 100; bump++) block = template(block.header.time + 1);
      const r = submitBlock(block);
      if (r.status === 'invalid') throw new RpcError(-25, `TestBlockValidity failed: ${r.reason}${r.debug ? `, ${r.debug}` : ''}`);
      if (r.status === 'duplicate-invalid') throw new RpcError(-25, 'TestBlockValidity failed: duplicate-invalid');
      hashes.push(r.entry.hash);
      if (parent) parent = r.entry;
    }
    return hashes;
  };

  const methods = new Map<string, RpcMethod>();
  const ctx: DevnodeContext = {
    node,
    wallet,
    log,
    zmqEndpoint: () => zmqEndpoint,
    hidden,
    feeEstimate,
    startedAt: Math.floor(Date.now() / 1000),
    submitBlock,
    invalidate: (e) => {
      node.invalidateBlock(e);
      persist({ kind: 'invalidate', hash: e.hash });
    },
    reconsider: (e) => {
      node.reconsiderBlock(e);
      persist({ kind: 'reconsider', hash: e.hash });
    },
    mine,
    requestStop: () => setImmediate(() => stopRequested?.()),
  };
  for (const [name, m] of Object.entries({ ...chainMethods(ctx), ...txMethods(ctx), ...miscMethods(ctx, () => [...methods.keys()]) }))
    methods.set(name, m);

  const cookie = store?.writeCookie();
  const http = new DevnodeHttpServer({
    methods,
    rest: createRest(ctx),
    user,
    password,
    ...(cookie ? { cookie } : {}),
    log,
    warmup: () => (warm ? WARMUP_MESSAGE : null),
    restEnabled: opts.rest ?? true,
  });
  // A busy RPC port: the ZMQ port is given back, so that a caller can try again on other ports.
  const port = await http.listen(host, opts.rpcPort ?? 0).catch(async (err: unknown) => {
    await zmq.stop();
    throw err;
  });

  const defaultPayout = () => regtestScript(wallet.address('p2wpkh'))!;
  const payoutFor = (address?: string) => {
    if (!address) return defaultPayout();
    const s = regtestScript(address);
    if (!s) throw new TypeError(`not a regtest address: ${address}`);
    return s;
  };
  const decodeTxs = (hexes?: string[]) => hexes?.map((h) => decodeTx(hexToBytes(h)));
  const entryOf = (hash: string): BlockEntry => {
    const e = node.chain.get(hash);
    if (!e) throw new RpcError(-5, 'Block not found');
    return e;
  };

  if (opts.initialBlocks) mine(opts.initialBlocks, defaultPayout());

  // Replay.
  let replayer: Replayer | null = null;
  if (opts.replay) {
    const plan = loadReplay(opts.replay.dir);
    const lag = Math.floor(Date.now() / 1000) - plan.maxTime;
    if (lag > 6 * 3600) node.setClockOffset(-(lag - 60));
    const pace = opts.replay.pace ?? 'all';
    // A paced replay says what each event did (all at once: only at debug level, and a summary).
    const level = typeof pace === 'number' ? 'info' : 'debug';
    const onEvent = (ev: { label: 'C' | 'D'; hash: string }, tip: { height: number; hash: string }) =>
      log[level](
        { block: ev.hash, tip: tip.height },
        ev.label === 'C'
          ? `devnode: replay connected block ${tip.height}`
          : `devnode: replay disconnected block ${ev.hash} (tip now ${tip.height})`,
      );
    replayer = new Replayer(node, plan, persist, (err) => log.error({ err }, 'devnode: replay failed'), onEvent);
    if (node.chain.tip().hash === plan.final.hash) {
      // Restarted on a data dir that already holds the replayed chain.
      replayer.markDone();
    } else if (pace === 'all') {
      replayer.runAll();
      await replayer.done;
      log.info({ events: plan.events.length, height: node.chain.height(), hash: node.chain.tip().hash }, 'devnode: replay applied');
    } else if (typeof pace === 'number') replayer.startPaced(pace);
  }

  // Background mining with sample payments (the quick start).
  let round = 0;
  let miner: NodeJS.Timeout | null = null;
  if (opts.mineEvery && opts.mineEvery > 0) {
    if (wallet.balance() === 0n && node.chain.height() < 101) mine(101 - node.chain.height(), defaultPayout());
    miner = setInterval(() => {
      try {
        if (opts.samplePayments ?? true) samplePayments(wallet, round++, log);
        const [hash] = mine(1, defaultPayout());
        saveWallet();
        log.info({ height: node.chain.height(), hash, mempool: node.mempool.entries.size }, 'devnode: mined a block');
      } catch (err) {
        log.error({ err }, 'devnode: background mining failed');
      }
    }, opts.mineEvery * 1000);
  }

  const rpcUrl = () => `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${http.port}`;
  const restartZmq = async () => {
    await zmq.stop();
    const [, p] = /:(\d+)$/.exec(zmqEndpoint) ?? [];
    for (let attempt = 0; ; attempt++) {
      try {
        zmqEndpoint = await zmq.start(host, Number(p));
        return;
      } catch (err) {
        if (attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (miner) clearInterval(miner);
    replayer?.stop();
    store?.writeMempool(node.mempool.all().map((e) => bytesToHex(e.tx.bytes)));
    saveWallet();
    await http.close();
    await zmq.stop();
    node.setSignals(null);
  };

  const handle: Devnode = {
    get rpcUrl() {
      return rpcUrl();
    },
    get restUrl() {
      return `http://${host}:${http.port}/rest`;
    },
    get zmqUrl() {
      return zmqEndpoint;
    },
    rpc: { host, port, user, password },
    cookieFile: store?.cookiePath ?? null,
    node,
    tip: () => ({ height: node.chain.height(), hash: node.chain.tip().hash }),
    blockHash: (h) => {
      const e = node.chain.active[h];
      if (!e) throw new RangeError(`no block at height ${h}`);
      return e.hash;
    },
    mine: async (n = 1, o = {}) => {
      const txs = decodeTxs(o.txs);
      return mine(n, payoutFor(o.address), {
        ...(txs ? { txs } : {}),
        useMempool: o.includeMempool ?? true,
        ...(o.time !== undefined ? { time: o.time } : {}),
      });
    },
    mineOn: async (parentHash, n = 1, o = {}) => {
      const txs = decodeTxs(o.txs);
      return mine(n, payoutFor(o.address), {
        parent: entryOf(parentHash),
        ...(txs ? { txs } : {}),
        useMempool: false,
        ...(o.time !== undefined ? { time: o.time } : {}),
      });
    },
    invalidate: async (hash) => ctx.invalidate(entryOf(hash)),
    reconsider: async (hash) => ctx.reconsider(entryOf(hash)),
    reorg: async (depth, o = {}) => {
      const h = node.chain.height();
      if (depth < 1 || depth > h) throw new RangeError(`reorg depth must be between 1 and ${h}`);
      const disconnected = node.chain.active.slice(h - depth + 1).map((e) => e.hash);
      const fork = node.chain.active[h - depth]!;
      const newBlocks = o.newBlocks ?? depth + 1;
      const keep = o.keepTxs ?? true;
      let connected: string[];
      if (newBlocks > depth) {
        // Each old block's transactions go into the new block at the same height (locktimes stay final).
        const txsPerBlock = keep ? node.chain.active.slice(h - depth + 1).map((e) => e.block.txs.slice(1)) : [];
        connected = mine(newBlocks, defaultPayout(), { parent: fork, txsPerBlock, useMempool: false });
      } else {
        ctx.invalidate(node.chain.active[h - depth + 1]!);
        // Extend the fork point (another valid branch with more work may win: Core's rule).
        connected = mine(newBlocks, defaultPayout(), { parent: fork, useMempool: keep && node.chain.tip() === fork });
      }
      return { disconnected, connected };
    },
    broadcast: async (hex) => broadcastTx(node, decodeTx(hexToBytes(hex))),
    mempool: () => node.mempool.all().map((e) => e.txid),
    wallet: {
      address: (type) => wallet.address(type),
      destination: (type) => wallet.destination(type),
      newAddress: (type) => {
        const d = wallet.newDestination(type);
        saveWallet();
        return d;
      },
      owns: (script) => wallet.owns(script),
      balance: () => wallet.balance(),
      send: async (to, sats, o) => wallet.send(to, sats, o),
      createTx: (to, sats, o) => bytesToHex(wallet.createTx(to, sats, o).bytes),
      bumpFee: async (txid, o) => wallet.bumpFee(txid, o),
    },
    faults: {
      zmq,
      hideBlock: (hash) => void hidden.add(hash.toLowerCase()),
      unhideBlock: (hash) => void hidden.delete(hash.toLowerCase()),
      down: () => http.close(),
      up: async () => {
        if (!http.listening) await http.listen(host, http.port);
      },
      outage: async (ms) => {
        await http.close();
        setTimeout(
          () =>
            void (http.listening
              ? undefined
              : http.listen(host, http.port).catch((err: unknown) => log.error({ err }, 'devnode: could not come back'))),
          ms,
        ).unref();
      },
      restart: async () => {
        await http.close();
        await restartZmq();
        zmq.resetCounters();
        node.mempool.resetSequence();
        await http.listen(host, http.port);
      },
      warmup: (on = true) => {
        warm = on;
      },
      setFeeEstimate: (perKvB, blocks = 2) => setFeeEstimate(feeEstimate, perKvB, blocks),
    },
    replay: replayer ? { done: replayer.done, step: (n) => replayer!.step(n), position: () => replayer!.position() } : null,
    stats: () => ({ ...http.stats }),
    onStopRequest: (listener) => {
      stopListener = listener;
    },
    stop,
  };
  stopRequested = () => (stopListener ? stopListener() : void stop());
  return handle;
}
