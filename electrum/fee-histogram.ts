/**
 * `mempool.get_fee_histogram`: [fee rate (sat/vB), virtual size (vB)] pairs from the highest fee
 * rate down, each bin holding at least `binSize` vbytes (growing by 10 % per bin, as ElectrumX
 * and electrs compact it), so that a wallet can tell the fee rate needed to be within the next N
 * megabytes of the mempool. PURE.
 * @module
 */

export function feeHistogram(txs: readonly { fee: bigint; vsize: number }[], binSize = 30_000): [number, number][] {
  const rates = txs.filter((t) => t.vsize > 0).map((t) => ({ rate: Number(t.fee) / t.vsize, vsize: t.vsize }));
  rates.sort((a, b) => b.rate - a.rate);
  const out: [number, number][] = [];
  let size = 0;
  let bin = binSize;
  let last = 0;
  for (const r of rates) {
    size += r.vsize;
    last = r.rate;
    if (size >= bin) {
      out.push([Math.floor(r.rate * 1000) / 1000, size]);
      size = 0;
      bin *= 1.1;
    }
  }
  if (size > 0) out.push([Math.floor(last * 1000) / 1000, size]);
  return out;
}
