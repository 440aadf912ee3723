/**
 * bench/small's chain on a real Bitcoin Core, built in bulk and cached: paying one address at a
 * time through the wallet (`sendtoaddress` per payment, a mined block after each run of them)
 * slowed with the wallet's growing set of coins and took over 12 minutes for 1,000 blocks on a
 * loaded machine. Here the wallet signs every payment in a few RPC batches and `generateblock`
 * mines each block from its raw transactions:
 * - 101 blocks mined to the wallet (as `funded` does), then one block whose single transaction
 *   splits the one mature coinbase into one coin per payment to come, each at its own wallet
 *   address;
 * - block i of `blocks` carries 1 + i mod 10 payments, each spending one of those coins to one
 *   payee address of the wallet with its change back to the coin's address (a P2WPKH input
 *   signed by the wallet, two outputs: a wallet payment's shape).
 * The node is then stopped and its datadir kept under the bench cache, keyed by the parameters
 * and `CHAIN_VERSION`; each run starts a node on a fresh copy of it (the index still starts
 * empty and catches up from Core).
 * @module
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BitcoindClient, RpcError } from '../src/rpc/bitcoind.js';
import { startBitcoind } from '../test/support/bitcoind.js';

/** Bump when the chain's shape changes: cached datadirs of another version are not used. */
const CHAIN_VERSION = 1;
/** Blocks mined to the wallet before the payments (101: one coinbase mature), plus the split block. */
export const CORE_SETUP_BLOCKS = 102;
const COIN_SATS = 500_000;
const FEE_SATS = 1_000;
/** RPC calls per JSON-RPC batch. */
const BATCH = 500;

/** Payments in block `i` of the run (0-based). */
export const paymentsIn = (i: number): number => 1 + (i % 10);

const btc = (sats: number) => (sats / 1e8).toFixed(8);

async function batched<T>(rpc: BitcoindClient, calls: { method: string; params?: unknown[] }[]): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < calls.length; i += BATCH) {
    for (const r of await rpc.batch<T>(calls.slice(i, i + BATCH))) {
      if (r instanceof RpcError) throw r;
      out.push(r);
    }
  }
  return out;
}

/** Builds the chain on a fresh node and stops it; its datadir is then complete at `datadir`. */
async function build(blocks: number, keep: string, log: (line: string) => void): Promise<void> {
  const node = await startBitcoind({ funded: true });
  try {
    const rpc = new BitcoindClient({ url: node.rpcUrl, wallet: node.wallet! });
    const payee = await node.call<string>('getnewaddress', [], node.wallet!);
    let total = 0;
    for (let i = 0; i < blocks; i++) total += paymentsIn(i);
    const addrs = await batched<string>(
      rpc,
      Array.from({ length: total }, () => ({ method: 'getnewaddress' })),
    );
    const coins = await node.call<{ txid: string; vout: number; amount: number }[]>('listunspent', [1], node.wallet!);
    const coin = coins[0];
    if (!coin || coins.length !== 1) throw new Error(`expected one mature coin after 101 blocks, found ${coins.length}`);
    const change = Math.round(coin.amount * 1e8) - total * COIN_SATS - (total + 10) * 50;
    const splitOuts = [...addrs.map((a) => ({ [a]: btc(COIN_SATS) })), { [payee]: btc(change) }];
    const split = await signed(rpc, [{ method: 'createrawtransaction', params: [[{ txid: coin.txid, vout: coin.vout }], splitOuts] }]);
    const splitTxid = await node.call<{ txid: string }>('decoderawtransaction', [split[0]]).then((t) => t.txid);
    await node.call('generateblock', [payee, split]);
    const payments = await signed(
      rpc,
      addrs.map((a, k) => ({
        method: 'createrawtransaction',
        params: [
          [{ txid: splitTxid, vout: k }],
          [{ [payee]: btc(10_000 + (k % 1000)) }, { [a]: btc(COIN_SATS - 10_000 - (k % 1000) - FEE_SATS) }],
        ],
      })),
    );
    let next = 0;
    for (let i = 0; i < blocks; i++) {
      const txs = payments.slice(next, next + paymentsIn(i));
      next += txs.length;
      await node.call('generateblock', [payee, txs]);
      if ((i + 1) % 250 === 0) log(`  core: ${i + 1}/${blocks} blocks mined`);
    }
    await node.call('stop');
    for (const t0 = Date.now(); node.pid !== undefined;) {
      if (Date.now() - t0 > 120_000) throw new Error('bitcoind did not stop within 120 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    rmSync(join(node.datadir, 'regtest', 'debug.log'), { force: true });
    cpSync(node.datadir, keep, { recursive: true });
  } finally {
    await node.stop();
  }
}

/** `createrawtransaction` calls, each signed by the wallet: the raw transactions' hex. */
async function signed(rpc: BitcoindClient, creates: { method: string; params: unknown[] }[]): Promise<string[]> {
  const raws = await batched<string>(rpc, creates);
  const signs = await batched<{ hex: string; complete: boolean }>(
    rpc,
    raws.map((hex) => ({ method: 'signrawtransactionwithwallet', params: [hex] })),
  );
  return signs.map((s) => {
    if (!s.complete) throw new Error('the wallet could not sign a payment of the small chain');
    return s.hex;
  });
}

/**
 * The datadir of a stopped regtest node holding the chain for `blocks` (built the first time,
 * then taken from `cacheRoot`): start nodes on copies of it (`copyDatadir`).
 */
export async function smallCoreChain(cacheRoot: string, blocks: number, log: (line: string) => void): Promise<string> {
  const key = createHash('sha256')
    .update(JSON.stringify({ v: CHAIN_VERSION, blocks, setup: CORE_SETUP_BLOCKS }))
    .digest('hex')
    .slice(0, 10);
  const dir = join(cacheRoot, `small-core-b${blocks}-${key}`);
  if (existsSync(dir)) return dir;
  mkdirSync(cacheRoot, { recursive: true });
  const t0 = performance.now();
  log(`  core: building the chain of ${blocks} small blocks (cached in ${dir})`);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await build(blocks, tmp, log);
    // Another run may have finished the same chain meanwhile: either copy serves.
    if (!existsSync(dir)) renameSync(tmp, dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  log(`  core: chain built in ${Math.round((performance.now() - t0) / 1000)} s`);
  return dir;
}
