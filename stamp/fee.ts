/**
 * Fee arithmetic for stamp transactions, in Core's units: rates are sat/kvB (`bigint`), fees
 * satoshis. `feeFor` is CFeeRate::GetFee (rounded up). `replacementFee` gives the least fee a
 * BIP125 replacement must pay: rule 3 (at least the fees it evicts), rule 4 (plus the incremental
 * relay fee for its own size), a higher feerate than the original (Core's rule 6), our policy of
 * at least +25% feerate, and the target feerate for the package of its unconfirmed ancestors.
 * Pure: no I/O.
 * @module
 */

/** sat/vB (config, up to 3 decimals) → sat/kvB. */
export function satPerVbToPerKvB(satPerVb: number): bigint {
  return BigInt(Math.round(satPerVb * 1000));
}

/** BTC/kvB as Core prints it (estimatesmartfee, relayfee) → sat/kvB. */
export function btcPerKvBToSatPerKvB(btc: number): bigint {
  return BigInt(Math.round(btc * 1e8));
}

/** The fee of `vsize` vbytes at `ratePerKvB`, rounded up (at least 1 sat for a positive rate). */
export function feeFor(ratePerKvB: bigint, vsize: number): bigint {
  if (ratePerKvB < 0n) throw new RangeError(`fee rate must not be negative, got ${ratePerKvB}`);
  const size = BigInt(vsize);
  let fee = (ratePerKvB * size + 999n) / 1000n;
  if (fee === 0n && size > 0n && ratePerKvB > 0n) fee = 1n;
  return fee;
}

/** The rate `fee` pays for `vsize` vbytes, sat/kvB rounded down (as Core compares them). */
export function rateOf(fee: bigint, vsize: number): bigint {
  return vsize > 0 ? (fee * 1000n) / BigInt(vsize) : 0n;
}

/** Least feerate increase of a bump, in percent. */
const MIN_BUMP_PERCENT = 25n;

export type ReplacementInput = {
  /** Fee and vsize of the transaction being replaced (it has no descendants of ours). */
  original: { fee: bigint; vsize: number };
  /** vsize of the replacement. */
  vsize: number;
  /** Fee and vsize of the unconfirmed ancestors of the original (our chain below it), 0 when none. */
  ancestors: { fee: bigint; vsize: number };
  /** What the fee estimator asks for now. */
  targetRatePerKvB: bigint;
  /** The node's incremental relay fee (getnetworkinfo.incrementalfee). */
  incrementalPerKvB: bigint;
};

/**
 * The least fee of a replacement that satisfies BIP125 rules 3 and 4, pays a feerate above the
 * original's (by at least 25%), and brings the package (ancestors + replacement) to the target.
 */
export function replacementFee(r: ReplacementInput): bigint {
  const oldRate = rateOf(r.original.fee, r.original.vsize);
  const oldPackageRate = rateOf(r.original.fee + r.ancestors.fee, r.original.vsize + r.ancestors.vsize);
  const bumpedRate = (max(oldRate, oldPackageRate) * (100n + MIN_BUMP_PERCENT) + 99n) / 100n;
  const rate = max(r.targetRatePerKvB, bumpedRate);
  const rule34 = r.original.fee + feeFor(r.incrementalPerKvB, r.vsize);
  const ownRate = feeFor(max(bumpedRate, oldRate + 1n), r.vsize);
  const packageFee = feeFor(rate, r.vsize + r.ancestors.vsize) - r.ancestors.fee;
  return max(rule34, ownRate, packageFee);
}

function max(...xs: bigint[]): bigint {
  return xs.reduce((a, b) => (b > a ? b : a));
}
