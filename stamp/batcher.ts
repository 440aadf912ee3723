/**
 * The batcher: once per window it claims the queued stamps (lease), funds one transaction per
 * `perTx` stamps from free wallet coins (leases; change of an earlier transaction of the same
 * batch may fund the next), signs, stores everything in one Postgres transaction, broadcasts in
 * order and then tells the waiting requests their stamp ids. A crash at any point leaves either
 * nothing (leases expire, stamps stay queued) or stored signed transactions the tracker broadcasts.
 * Stamps the wallet cannot pay (and nothing pending will refill it) are dropped: never accepted.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../src/log.js';
import { buildStampTx, type BuiltTx, type Coin, dustThreshold, estimateVsize, FeeTooHighError, InsufficientFundsError } from './build.js';
import { coinKey, hasLiveLeases, leaseCoins, loadFreeCoins, releaseLeases } from './coins.js';
import { feeFor } from './fee.js';
import { countPendingTxs, LeaseLostError, markAccepted, type PlannedTx, recordBroadcastError, storeSignedTxs } from './ledger.js';
import { broadcastRaw, type StampNode } from './node.js';
import { type ClaimedStamp, claimQueuedStamps, dropUnpayableStamps, releaseStampClaims } from './requests.js';
import type { StampDb } from './tables.js';
import type { StampWallet } from './wallet.js';
import { nullDataScript } from '../src/bitcoin/script.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { chooseCoins, type Cut, nextCut, poolAfter, windowWaitMs } from './batch-plan.js';

/** Points a batch passes; tests kill the process at one of them. */
export type StampPhase = 'claimed' | 'reserved' | 'persisted' | 'broadcast' | 'answered';
export type PhaseHook = (phase: StampPhase, detail: { txids: string[] }) => void | Promise<void>;

/** What one batch needs to know about fees and the node, refreshed by the stamper. */
export type FeeContext = { perTx: number; ratePerKvB: bigint; maxFee: bigint };

/** The batcher's view of its settings (src/config.ts STAMP_*). */
export type BatcherSettings = {
  windowMs: number;
  leaseMs: number;
  maxChain: number;
  targetCoins: number;
};

export type BatcherDeps = {
  db: StampDb;
  log: Logger;
  wallet: StampWallet;
  node: StampNode;
  settings: BatcherSettings;
  fees: () => Promise<FeeContext>;
  tipHeight: () => Promise<number>;
  onPhase?: PhaseHook | undefined;
};

/** A stamp's fate as its waiting request learns it. */
export type Placement = { kind: 'placed'; txid: Buffer; vout: number } | { kind: 'unpayable'; reason: string };

export type Batcher = {
  /** A stamp was queued: start a window. */
  wake(): void;
  /**
   * Waits for this process's batcher to place or drop stamp `id` (it never resolves when another
   * process does: the caller also polls, and calls `cancel`).
   */
  placement(id: bigint): { promise: Promise<Placement>; cancel(): void };
  /** Runs batches until the queue is empty (tests and benchmarks). */
  drain(): Promise<void>;
  stop(): Promise<void>;
};

type Funded = { built: BuiltTx; stamps: ClaimedStamp[] };

export function createBatcher(deps: BatcherDeps): Batcher {
  const { db, wallet, settings } = deps;
  const log = deps.log.child({ component: 'stamp.batcher' });
  const waiters = new Map<bigint, ((p: Placement) => void)[]>();
  let stopped = false;
  let wakeUp: (() => void) | null = null;
  let woken = false;
  let lastStart = 0;
  let running: Promise<void> = Promise.resolve();

  const settle = (id: bigint, p: Placement) => {
    const list = waiters.get(id);
    if (!list) return;
    waiters.delete(id);
    for (const fn of list) fn(p);
  };

  const phase = async (p: StampPhase, txs: readonly BuiltTx[]) => {
    if (deps.onPhase) await deps.onPhase(p, { txids: txs.map((t) => hashToHex(t.txid)) });
  };

  /** Picks coins for `payloads` from `pool`, leasing those not created by this batch. */
  async function fund(
    owner: string,
    pool: Coin[],
    fresh: Set<string>,
    leased: Set<string>,
    stamps: ClaimedStamp[],
    fee: FeeContext,
  ): Promise<Funded | null> {
    const payloads = stamps.map((s) => s.hash);
    const scripts = [...payloads.map((p) => nullDataScript(p)), wallet.change.script];
    const need = (chosen: readonly Coin[]) =>
      feeFor(fee.ratePerKvB, estimateVsize(wallet, [...chosen], scripts)) + dustThreshold(wallet.change.type);
    for (let attempt = 0; attempt < 4; attempt++) {
      const chosen = chooseCoins(pool, settings.maxChain, need);
      if (!chosen) return null;
      const toLease = chosen.filter((c) => !fresh.has(coinKey(c)) && !leased.has(coinKey(c)));
      const got = await leaseCoins(db, owner, toLease, settings.leaseMs);
      for (const k of got) leased.add(k);
      const lost = toLease.filter((c) => !got.has(coinKey(c)));
      if (lost.length > 0) {
        // Another batch holds them: forget them and choose again.
        const gone = new Set(lost.map(coinKey));
        pool.splice(0, pool.length, ...pool.filter((c) => !gone.has(coinKey(c))));
        continue;
      }
      const freeAfter = pool.length - chosen.length;
      try {
        const built = buildStampTx({
          wallet,
          inputs: chosen,
          payloads,
          feeRatePerKvB: fee.ratePerKvB,
          maxFee: fee.maxFee,
          changeOutputs: freeAfter + 1 < settings.targetCoins ? 2 : 1,
        });
        const depth = Math.max(...chosen.map((c) => c.depth)) + 1;
        const change = built.change.map((o) => ({ txid: built.txid, vout: o.vout, value: o.value, script: o.script, depth }));
        for (const c of change) fresh.add(coinKey(c));
        pool.splice(0, pool.length, ...poolAfter(pool, chosen, change));
        return { built, stamps };
      } catch (err) {
        // Too little money, or more fee than STAMP_MAX_TX_FEE: the caller tries fewer stamps.
        if (err instanceof InsufficientFundsError || (err instanceof FeeTooHighError && stamps.length > 1)) return null;
        throw err;
      }
    }
    return null;
  }

  /** One batch. Returns true when more queued stamps may be waiting. */
  async function runBatch(): Promise<boolean> {
    const t0 = Date.now();
    const fee = await deps.fees();
    const limit = fee.perTx === 1 ? settings.maxChain : fee.perTx * 4;
    const owner = randomUUID();
    const claimed = await claimQueuedStamps(db, owner, settings.leaseMs, limit);
    if (claimed.length === 0) return false;
    await phase('claimed', []);
    const t1 = Date.now();
    const leased = new Set<string>();
    try {
      const tip = await deps.tipHeight();
      const pool = await loadFreeCoins(db, wallet, tip);
      const fresh = new Set<string>();
      const funded: Funded[] = [];
      const unfunded: ClaimedStamp[] = [];
      // One transaction per `perTx` stamps; when coins or STAMP_MAX_TX_FEE do not allow that
      // many, halve the size and go on: as many stamps as can be paid for.
      let cut: Cut | null = { next: 0, size: fee.perTx };
      let i = 0;
      while (cut && cut.next < claimed.length) {
        i = cut.next;
        const group = claimed.slice(cut.next, cut.next + cut.size);
        const f = await fund(owner, pool, fresh, leased, group, fee);
        if (f) funded.push(f);
        cut = nextCut(cut, group.length, f !== null);
        if (cut) i = cut.next;
      }
      unfunded.push(...claimed.slice(i));
      const built = funded.map((f) => f.built);
      const t2 = Date.now();
      await phase('reserved', built);
      if (funded.length > 0) {
        const planned: PlannedTx[] = funded.map((f) => ({
          built: f.built,
          family: f.built.txid,
          replaces: null,
          stampIds: f.stamps.map((s) => s.id),
        }));
        await db.transaction().execute((trx) => storeSignedTxs(trx, owner, planned, leased));
        log.info(
          {
            txs: built.length,
            stamps: claimed.length - unfunded.length,
            fee: built.reduce((s, b) => s + b.fee, 0n).toString(),
            claimMs: t1 - t0,
            buildMs: t2 - t1,
            storeMs: Date.now() - t2,
          },
          'stamp transactions signed and stored',
        );
        await phase('persisted', built);
      }
      const spent = new Set(built.flatMap((b) => b.inputs.map(coinKey)));
      const unused = [...leased]
        .filter((k) => !spent.has(k))
        .map((k) => ({ txid: Buffer.from(k.split(':')[0]!, 'hex'), vout: Number(k.split(':')[1]) }));
      await releaseLeases(db, owner, unused);
      await handleUnfunded(owner, unfunded, funded.length > 0);
      for (const b of built) {
        const outcome = await broadcastRaw(deps.node, b.raw);
        if (outcome.kind === 'accepted') await markAccepted(db, { txid: b.txid, replaces: null }, tip);
        else if (outcome.kind !== 'in-chain') {
          log.warn(
            { txid: hashToHex(b.txid), outcome: outcome.kind, message: outcome.message },
            'stamp transaction not accepted yet; the tracker will rebroadcast it',
          );
          await recordBroadcastError(db, b.txid, outcome.message);
        }
      }
      if (built.length > 0) {
        log.info({ txids: built.map((b) => hashToHex(b.txid)), ms: Date.now() - t0 }, 'stamp transactions broadcast');
        await phase('broadcast', built);
      }
      for (const f of funded) f.stamps.forEach((s, vout) => settle(s.id, { kind: 'placed', txid: f.built.txid, vout }));
      if (built.length > 0) await phase('answered', built);
      return claimed.length === limit && unfunded.length === 0;
    } catch (err) {
      await releaseStampClaims(db, owner).catch(() => undefined);
      await releaseLeases(db, owner).catch(() => undefined);
      if (err instanceof LeaseLostError) {
        log.warn({ err }, 'stamp batch lost a lease; its stamps stay queued');
        return true;
      }
      if (err instanceof FeeTooHighError)
        log.error(
          { fee: err.fee.toString(), maxFee: err.maxFee.toString() },
          'stamp transaction fee above STAMP_MAX_TX_FEE; lower STAMP_MAX_PER_TX or raise the limit',
        );
      else throw err;
      return false;
    }
  }

  /** Stamps no coin could fund: wait for pending change, or drop them when nothing will come. */
  async function handleUnfunded(owner: string, stamps: ClaimedStamp[], placedSome: boolean): Promise<void> {
    if (stamps.length === 0) return;
    const pending = await countPendingTxs(db);
    if (placedSome || pending.signed + pending.broadcast > 0 || (await hasLiveLeases(db))) {
      // Change of our unconfirmed transactions will come back, or another batch holds coins it may
      // not spend: try again later.
      await releaseStampClaims(
        db,
        owner,
        stamps.map((s) => s.id),
      );
      return;
    }
    const dropped = await dropUnpayableStamps(
      db,
      owner,
      stamps.map((s) => s.id),
    );
    await releaseStampClaims(
      db,
      owner,
      stamps.map((s) => s.id).filter((id) => !dropped.includes(id)),
    );
    const reason = `stamping wallet cannot pay: no spendable coins at ${wallet.change.address}`;
    if (dropped.length === 0) return;
    log.error({ address: wallet.change.address, stamps: dropped.length }, 'stamping wallet cannot pay; stamps refused');
    for (const id of dropped) settle(id, { kind: 'unpayable', reason });
  }

  async function loop(): Promise<void> {
    const sweepMs = Math.max(settings.windowMs, 1000);
    while (!stopped) {
      const byRequest = await new Promise<boolean>((resolve) => {
        if (woken) return resolve(true);
        const t = setTimeout(() => {
          wakeUp = null;
          resolve(false);
        }, sweepMs);
        wakeUp = () => {
          clearTimeout(t);
          wakeUp = null;
          resolve(true);
        };
      });
      if (stopped) break;
      if (byRequest) await new Promise((r) => setTimeout(r, windowWaitMs(Date.now(), lastStart, settings.windowMs)));
      woken = false;
      lastStart = Date.now();
      try {
        while (!stopped && (await runBatch()));
      } catch (err) {
        log.error({ err }, 'stamp batch failed; its stamps stay queued');
      }
    }
  }

  running = loop();

  return {
    wake() {
      woken = true;
      wakeUp?.();
    },
    placement(id) {
      let fn: (p: Placement) => void = () => {};
      const promise = new Promise<Placement>((resolve) => {
        fn = resolve;
        const list = waiters.get(id) ?? [];
        list.push(resolve);
        waiters.set(id, list);
      });
      const cancel = () => {
        const list = waiters.get(id)?.filter((f) => f !== fn) ?? [];
        if (list.length > 0) waiters.set(id, list);
        else waiters.delete(id);
      };
      return { promise, cancel };
    },
    async drain() {
      while (await runBatch());
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await running;
    },
  };
}
