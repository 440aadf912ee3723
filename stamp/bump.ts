/**
 * Fee bump by replacement (BIP125) of a stamp transaction left unconfirmed for
 * STAMP_BUMP_AFTER_BLOCKS blocks. Only a chain tip is bumped (no transaction of ours spends its
 * change: replacing it would evict them); its change is leased first so no batch starts spending
 * it meanwhile. The replacement spends the same coins (plus a confirmed one if the change cannot
 * cover the increase: a replacement may not add unconfirmed inputs), carries the same OP_RETURN
 * outputs at the same vouts, pays ≥ 25% more feerate under rules 3/4 for the package of its
 * unconfirmed ancestors, and never more than STAMP_MAX_FEE_RATE / STAMP_MAX_TX_FEE. It is stored
 * before broadcast; the stamps move to it once the node accepts it.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { hashToHex } from '../src/bitcoin/hash.js';
import type { Logger } from '../src/log.js';
import { buildStampTx, type Coin, FeeTooHighError, InsufficientFundsError } from './build.js';
import { coinKey, leaseCoins, loadFreeCoins, releaseLeases } from './coins.js';
import { feeFor, rateOf, replacementFee } from './fee.js';
import { abandonTxs, liveChildren, markAccepted, stampsOfTx, type StampTxRow, storeSignedTxs } from './ledger.js';
import { broadcastRaw, type StampNode } from './node.js';
import type { StampDb } from './tables.js';
import type { StampWallet } from './wallet.js';

export type BumpDeps = {
  db: StampDb;
  log: Logger;
  wallet: StampWallet;
  node: StampNode;
  leaseMs: number;
  maxFeeRatePerKvB: bigint;
  maxTxFee: bigint;
};

export type BumpResult =
  | { kind: 'bumped'; txid: Buffer; fee: bigint; ratePerKvB: bigint }
  | { kind: 'skipped'; reason: string }
  | { kind: 'refused'; reason: string };

/** Fee and vsize of the live unconfirmed ancestors of `txid` (our chain below it). */
async function ancestorsOf(db: StampDb, txid: Buffer): Promise<{ fee: bigint; vsize: number }> {
  let fee = 0n;
  let vsize = 0;
  const seen = new Set<string>();
  let frontier = [txid];
  while (frontier.length > 0) {
    const parents = await db
      .selectFrom('stamp_tx_inputs as i')
      .innerJoin('stamp_txs as p', 'p.txid', 'i.prev_txid')
      .select(['p.txid', 'p.fee', 'p.vsize'])
      .distinct()
      .where('i.txid', 'in', frontier)
      .where('p.status', 'in', ['signed', 'broadcast'])
      .execute();
    frontier = [];
    for (const p of parents) {
      const k = p.txid.toString('hex');
      if (seen.has(k)) continue;
      seen.add(k);
      fee += p.fee;
      vsize += p.vsize;
      frontier.push(p.txid);
    }
  }
  return { fee, vsize };
}

/**
 * Replaces `tx` with a higher-fee version. `targetRatePerKvB` is the fee estimate now;
 * `incrementalPerKvB` the node's incremental relay fee; `tipHeight` the index tip.
 */
export async function bumpStampTx(
  deps: BumpDeps,
  tx: StampTxRow,
  fees: { targetRatePerKvB: bigint; incrementalPerKvB: bigint },
  tipHeight: number,
): Promise<BumpResult> {
  const { db, wallet } = deps;
  const log = deps.log.child({ component: 'stamp.bump' });
  const owner = randomUUID();
  const txidHex = hashToHex(tx.txid);
  const change = await db.selectFrom('stamp_change').select(['txid', 'vout']).where('txid', '=', tx.txid).execute();
  const held = await leaseCoins(db, owner, change, deps.leaseMs);
  try {
    if (held.size < change.length || (await liveChildren(db, tx.txid)).length > 0)
      return { kind: 'skipped', reason: 'its change is being spent' };
    const inputs: Coin[] = (
      await db
        .selectFrom('stamp_tx_inputs')
        .select(['prev_txid', 'prev_vout', 'value', 'script'])
        .where('txid', '=', tx.txid)
        .orderBy('vin')
        .execute()
    ).map((i) => ({
      txid: i.prev_txid,
      vout: i.prev_vout,
      value: i.value,
      script: i.script,
      depth: 0,
    }));
    const stamps = await stampsOfTx(db, tx.txid);
    const ancestors = await ancestorsOf(db, tx.txid);
    const minFeeFor = (vsize: number) =>
      replacementFee({
        original: { fee: tx.fee, vsize: tx.vsize },
        vsize,
        ancestors,
        targetRatePerKvB: fees.targetRatePerKvB,
        incrementalPerKvB: fees.incrementalPerKvB,
      });
    const capByRate = feeFor(deps.maxFeeRatePerKvB, tx.vsize + ancestors.vsize) - ancestors.fee;
    const maxFee = capByRate < deps.maxTxFee ? capByRate : deps.maxTxFee;
    if (minFeeFor(tx.vsize) > maxFee) {
      return {
        kind: 'refused',
        reason: `a bump needs ${minFeeFor(tx.vsize)} sat, above the maximum of ${maxFee} sat (STAMP_MAX_FEE_RATE / STAMP_MAX_TX_FEE)`,
      };
    }
    const extra: Coin[] = [];
    let built;
    for (;;) {
      try {
        built = buildStampTx({
          wallet,
          inputs: [...inputs, ...extra],
          payloads: stamps.map((s) => s.hash),
          feeRatePerKvB: 0n,
          minFeeFor,
          maxFee,
        });
        break;
      } catch (err) {
        if (err instanceof FeeTooHighError) return { kind: 'refused', reason: err.message };
        if (!(err instanceof InsufficientFundsError) || extra.length >= 3) throw err;
        const free = (await loadFreeCoins(db, wallet, tipHeight)).filter(
          (c) => c.depth === 0 && !extra.some((e) => coinKey(e) === coinKey(c)),
        );
        const got = free.length > 0 ? await leaseCoins(db, owner, [free[0]!], deps.leaseMs) : new Set<string>();
        if (got.size === 0) return { kind: 'skipped', reason: 'the change cannot pay the higher fee and no confirmed coin is free' };
        extra.push(free[0]!);
      }
    }
    const leased = new Set(extra.map(coinKey));
    await db
      .transaction()
      .execute((trx) =>
        storeSignedTxs(trx, owner, [{ built, family: tx.family, replaces: tx.txid, stampIds: stamps.map((s) => s.stamp_id) }], leased),
      );
    const outcome = await broadcastRaw(deps.node, built.raw);
    const newHex = hashToHex(built.txid);
    if (outcome.kind === 'accepted') {
      await markAccepted(db, { txid: built.txid, replaces: tx.txid }, tipHeight);
      log.info(
        {
          replaced: txidHex,
          txid: newHex,
          fee: built.fee.toString(),
          oldFee: tx.fee.toString(),
          rate: rateOf(built.fee, built.vsize).toString(),
        },
        'stamp transaction fee-bumped by replacement',
      );
      return { kind: 'bumped', txid: built.txid, fee: built.fee, ratePerKvB: rateOf(built.fee, built.vsize) };
    }
    if (outcome.kind === 'unavailable') return { kind: 'skipped', reason: outcome.message }; // stored: the tracker sends it later
    await db.transaction().execute((trx) => abandonTxs(trx, [built.txid]));
    log.warn(
      { replaced: txidHex, txid: newHex, outcome: outcome.kind, message: 'message' in outcome ? outcome.message : '' },
      'fee bump refused by the node',
    );
    return { kind: 'refused', reason: 'message' in outcome ? outcome.message : outcome.kind };
  } finally {
    await releaseLeases(db, owner);
  }
}
