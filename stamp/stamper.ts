/**
 * `startStamper(deps)`: the stamping wallet, the batcher, the tracker and the StampService the
 * API calls, wired together, with the node's relay policy and fee estimate cached. Returns a
 * handle: `service` (give it to buildApi as `stamps`), `status()` (for /healthz), `stop()`.
 * Runs in every process that serves POST /stamps; the tracker leads in one of them at a time.
 * @module
 */
import type { Kysely } from 'kysely';
import type { StampService } from '../src/stamp-service.js';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import type { NetworkName } from '../src/bitcoin/network.js';
import { createBatcher, type FeeContext, type PhaseHook } from './batcher.js';
import { dustThreshold } from './build.js';
import { loadWalletBalance, type WalletBalance } from './coins.js';
import { feeFor, satPerVbToPerKvB } from './fee.js';
import { countPendingTxs } from './ledger.js';
import { estimateFeeRate, loadNodePolicy, type NodePolicy, type StampNode } from './node.js';
import { countQueuedStamps } from './requests.js';
import { createStampService } from './service.js';
import { stampDb, type StampDb } from './tables.js';
import { createTracker } from './tracker.js';
import { loadStampWallet } from './wallet.js';
import { readStuckStampTx, stuckStampReason } from '../src/ops/state.js';

/** The STAMP_* part of the configuration. */
export type StampConfig = Pick<
  Config,
  | 'stampWalletWif'
  | 'stampWalletDescriptor'
  | 'stampBatchWindowMs'
  | 'stampMaxPerTx'
  | 'stampConfTarget'
  | 'stampFallbackFeeRate'
  | 'stampMaxFeeRate'
  | 'stampMaxTxFee'
  | 'stampBumpAfterBlocks'
  | 'stampLeaseMs'
  | 'stampMaxChain'
  | 'stampAnswerTimeoutMs'
  | 'stampPollMs'
  | 'stampTargetCoins'
>;

export type StamperDeps = {
  db: Kysely<Database>;
  log: Logger;
  config: StampConfig;
  network: NetworkName;
  node: StampNode;
  /** Test seam: called at each point of a batch. */
  onPhase?: PhaseHook;
  /** Resend an unconfirmed transaction missing from the index's mempool after this long (default 60 s). */
  rebroadcastMs?: number;
};

/** What /healthz shows about stamping. */
export type StamperStatus = {
  address: string;
  addresses: string[];
  balance: { confirmed: number; spendable: number; unconfirmed_change: number };
  can_pay: boolean;
  queued_stamps: number;
  pending_txs: { signed: number; broadcast: number };
  fee_rate_sat_vb: number | null;
  stamps_per_tx: number | null;
  /** Why the stamper cannot make progress (a transaction the node keeps refusing), or null. */
  stuck: string | null;
};

export type Stamper = {
  service: StampService;
  status(): Promise<StamperStatus>;
  /** The wallet's addresses (change address first): fund these. */
  addresses: readonly string[];
  /** Runs batches until no stamp is queued (tests, benchmarks). */
  drain(): Promise<void>;
  /** One tracker pass (tests). */
  track(): Promise<boolean>;
  stop(): Promise<void>;
};

/** True when a stamping wallet is configured. */
export function isStampingConfigured(config: Pick<Config, 'stampWalletWif' | 'stampWalletDescriptor'>): boolean {
  return Boolean(config.stampWalletWif || config.stampWalletDescriptor);
}

export async function startStamper(deps: StamperDeps): Promise<Stamper> {
  const { config } = deps;
  const log = deps.log.child({ component: 'stamp' });
  const db = stampDb(deps.db);
  const wallet = loadStampWallet({ wif: config.stampWalletWif, descriptor: config.stampWalletDescriptor }, deps.network);
  const fallbackPerKvB = satPerVbToPerKvB(config.stampFallbackFeeRate);
  const maxPerKvB = satPerVbToPerKvB(config.stampMaxFeeRate);
  const maxTxFee = BigInt(config.stampMaxTxFee);

  let policy: { value: NodePolicy; at: number } | undefined;
  let rate: { value: bigint; at: number } | undefined;
  const nodePolicy = async (): Promise<NodePolicy> => {
    if (!policy || Date.now() - policy.at > 600_000)
      policy = { value: await loadNodePolicy(deps.node, config.stampMaxPerTx), at: Date.now() };
    return policy.value;
  };
  const feeRate = async (): Promise<bigint> => {
    if (!rate || Date.now() - rate.at > 30_000) {
      const p = await nodePolicy();
      const r = await estimateFeeRate(deps.node, {
        confTarget: config.stampConfTarget,
        fallbackPerKvB,
        maxPerKvB,
        relayPerKvB: p.relayPerKvB,
      });
      rate = { value: r.ratePerKvB, at: Date.now() };
    }
    return rate.value;
  };
  const fees = async (): Promise<FeeContext> => ({ perTx: (await nodePolicy()).perTx, ratePerKvB: await feeRate(), maxFee: maxTxFee });
  const tipHeight = async (q: StampDb = db) =>
    (await q.selectFrom('chain_tip').select('height').where('id', '=', 1).executeTakeFirst())?.height ?? -1;

  // A positive answer is cached for a second and concurrent checks share one query (a burst of
  // requests costs one); a negative one is checked afresh, so a wallet just funded is seen at once.
  let canPayUntil = 0;
  let checking: Promise<string | null> | null = null;
  const walletBalance = async (): Promise<WalletBalance> => loadWalletBalance(db, wallet, await tipHeight());
  const checkPay = async (): Promise<string | null> => {
    const b = await walletBalance();
    const least = feeFor(fallbackPerKvB, 200) + dustThreshold(wallet.change.type);
    if (b.spendable >= least || b.unconfirmedChange > 0n) {
      canPayUntil = Date.now() + 1000;
      return null;
    }
    return `stamping wallet cannot pay: ${b.spendable} sat spendable at ${wallet.scripts.map((s) => s.address).join(', ')}`;
  };
  const cannotPay = (): Promise<string | null> => {
    if (Date.now() < canPayUntil) return Promise.resolve(null);
    checking ??= checkPay().finally(() => (checking = null));
    return checking;
  };

  const batcher = createBatcher({
    db,
    log,
    wallet,
    node: deps.node,
    settings: {
      windowMs: config.stampBatchWindowMs,
      leaseMs: config.stampLeaseMs,
      maxChain: config.stampMaxChain,
      targetCoins: config.stampTargetCoins,
    },
    fees,
    tipHeight,
    onPhase: deps.onPhase,
  });
  const tracker = createTracker({
    db,
    log,
    wallet,
    node: deps.node,
    leaseMs: config.stampLeaseMs,
    maxFeeRatePerKvB: maxPerKvB,
    maxTxFee,
    settings: { pollMs: config.stampPollMs, bumpAfterBlocks: config.stampBumpAfterBlocks, rebroadcastMs: deps.rebroadcastMs ?? 60_000 },
    fees: async () => ({ ratePerKvB: await feeRate(), incrementalPerKvB: (await nodePolicy()).incrementalPerKvB }),
  });
  const service = createStampService({ db, batcher, cannotPay, answerTimeoutMs: config.stampAnswerTimeoutMs });

  const status = async (): Promise<StamperStatus> => {
    // One snapshot: a transaction confirmed between separate reads would show its change as
    // still unconfirmed next to a pending count that no longer includes it.
    const [b, queued, pending] = await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(
        async (trx) =>
          [await loadWalletBalance(trx, wallet, await tipHeight(trx)), await countQueuedStamps(trx), await countPendingTxs(trx)] as const,
      );
    const stuck = await readStuckStampTx(deps.db);
    return {
      address: wallet.change.address,
      addresses: wallet.scripts.map((s) => s.address),
      balance: { confirmed: Number(b.confirmed), spendable: Number(b.spendable), unconfirmed_change: Number(b.unconfirmedChange) },
      can_pay: (await cannotPay()) === null,
      queued_stamps: queued,
      pending_txs: pending,
      fee_rate_sat_vb: rate ? Number(rate.value) / 1000 : null,
      stamps_per_tx: policy ? policy.value.perTx : null,
      stuck: stuck ? stuckStampReason(stuck) : null,
    };
  };

  try {
    const s = await status();
    const line = {
      address: s.address,
      addresses: s.addresses,
      confirmed: s.balance.confirmed,
      spendable: s.balance.spendable,
      queued: s.queued_stamps,
      pending: s.pending_txs,
    };
    if (s.can_pay) log.info(line, 'stamping wallet ready');
    else log.warn(line, 'stamping wallet has no spendable coins: fund its address; POST /stamps answers ERR_STAMP_WALLET_EMPTY until then');
  } catch (err) {
    log.warn({ err, address: wallet.change.address }, 'stamping wallet status unavailable at start');
  }

  return {
    service,
    status,
    addresses: wallet.scripts.map((s) => s.address),
    drain: () => batcher.drain(),
    track: () => tracker.turn(),
    async stop() {
      await batcher.stop();
      await tracker.stop();
    },
  };
}
