/**
 * `blockwire faucet ADDRESS AMOUNT [--no-mine]`: regtest coins for trying payments. Pays AMOUNT
 * (BTC, as `sendtoaddress` takes it) to ADDRESS from the node's wallet and mines a block so the
 * payment confirms. The node is the configured one (BITCOIND_RPC_URL, a real regtest bitcoind
 * with a wallet) or the one the quick start runs (its RPC URL kept in the data directory). Refuses
 * any chain but regtest. A wallet short of coins first mines 101 blocks to itself (coinbase
 * outputs mature after 100). It pays its own fee rate, so a node without `-fallbackfee` (as Core
 * ships) can pay too.
 * @module
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../src/config.js';
import { BitcoindClient, RpcError } from '../src/rpc/bitcoind.js';
import { explainDependencyFailure } from './ops/dependency-error.js';
import { quickStartNodeFile, readQuickStartNode } from './quickstart-node.js';

const USAGE = `usage: blockwire faucet ADDRESS AMOUNT [--no-mine]

Regtest only. Pays AMOUNT bitcoin (e.g. 0.5) to ADDRESS from the node's wallet, then mines a
block so that the payment confirms (--no-mine leaves it in the mempool). The node is
BITCOIND_RPC_URL when set (a regtest bitcoind with a wallet), otherwise the one the quick start
(./scripts/start.sh) runs.
`;

const SATS_PER_BTC = 100_000_000n;
/** The faucet's fee rate: above every node's minimum relay fee (Core's default 0.1 sat/vB since 29.1, 1 before). */
const FEE_RATE_SAT_VB = 2;

/** `0.5` → 50_000_000n; undefined when not a positive amount with at most 8 decimals. */
export function parseBtc(text: string): bigint | undefined {
  const m = /^(\d{1,8})(?:\.(\d{1,8}))?$/.exec(text.trim());
  if (!m) return undefined;
  const sats = BigInt(m[1]!) * SATS_PER_BTC + BigInt((m[2] ?? '').padEnd(8, '0'));
  return sats > 0n ? sats : undefined;
}

const btc = (sats: bigint) => `${sats / SATS_PER_BTC}.${String(sats % SATS_PER_BTC).padStart(8, '0')}`;

/** The node to pay from: the configured one, else the quick start's. */
async function findNode(): Promise<{ rpcUrl: string; cookieFile?: string; source: string } | string> {
  const config = loadConfig(process.env);
  if (config.bitcoindRpcUrl)
    return {
      rpcUrl: config.bitcoindRpcUrl,
      ...(config.bitcoindCookieFile ? { cookieFile: config.bitcoindCookieFile } : {}),
      source: 'BITCOIND_RPC_URL',
    };
  const dataDir = resolve(config.dataDir);
  const saved = await readQuickStartNode(dataDir);
  if (!saved)
    return `no node: BITCOIND_RPC_URL is unset and no quick start ran with BLOCKWIRE_DATA_DIR ${dataDir} (start one with ./scripts/start.sh, or set BITCOIND_RPC_URL)`;
  return { rpcUrl: saved.rpcUrl, source: `the quick start's node (${quickStartNodeFile(dataDir)})` };
}

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { 'no-mine': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`blockwire faucet: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [address, amountText] = parsed.positionals;
  const sats = amountText === undefined ? undefined : parseBtc(amountText);
  if (!address || sats === undefined || parsed.positionals.length !== 2) {
    process.stderr.write(
      `blockwire faucet: ${!address ? 'give an ADDRESS and an AMOUNT' : `AMOUNT must be a positive number of bitcoin with at most 8 decimals, got '${amountText ?? ''}'`}\n\n${USAGE}`,
    );
    return 2;
  }

  let node;
  try {
    node = await findNode();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`blockwire faucet: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (typeof node === 'string') {
    process.stderr.write(`blockwire faucet: ${node}\n`);
    return 1;
  }
  const rpc = new BitcoindClient({ url: node.rpcUrl, ...(node.cookieFile ? { cookieFile: node.cookieFile } : {}) });
  try {
    const info = await rpc.call<{ chain: string }>('getblockchaininfo');
    if (info.chain !== 'regtest') {
      process.stderr.write(`blockwire faucet: regtest only, and ${node.source} is on ${info.chain}\n`);
      return 2;
    }
    const wallet = await openWallet(rpc, node);
    const balance = BigInt(Math.round((await wallet.call<number>('getbalance')) * 1e8));
    if (balance < sats + 100_000n) {
      // Coins to pay with: 101 blocks to the wallet make the first coinbase spendable.
      await wallet.call('generatetoaddress', [101, await wallet.call<string>('getnewaddress')]);
    }
    // Our own fee rate: a regtest chain has no fee estimates, and Core ships without -fallbackfee,
    // so a wallet left to estimate refuses (`Fee estimation failed. Fallbackfee is disabled`).
    // Positional: address, amount, comment, comment_to, subtractfeefromamount, replaceable,
    // conf_target, estimate_mode, avoid_reuse, fee_rate (sat/vB).
    const txid = await wallet.call<string>('sendtoaddress', [
      address,
      btc(sats),
      '',
      '',
      false,
      true,
      null,
      'unset',
      null,
      FEE_RATE_SAT_VB,
    ]);
    process.stdout.write(`${txid}\n`);
    if (!parsed.values['no-mine']) {
      const [hash] = await wallet.call<string[]>('generatetoaddress', [1, await wallet.call<string>('getnewaddress')]);
      const header = await rpc.call<{ height: number }>('getblockheader', [hash]);
      process.stderr.write(`paid ${btc(sats)} BTC to ${address} in ${txid}, confirmed in block ${header.height}\n`);
    } else {
      process.stderr.write(`paid ${btc(sats)} BTC to ${address} in ${txid} (in the mempool)\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof RpcError) {
      process.stderr.write(`blockwire faucet: the node refused ${err.method}: ${err.message} (code ${err.code})\n`);
      return 1;
    }
    const explained = explainDependencyFailure('node', node.rpcUrl, err).error;
    process.stderr.write(
      `blockwire faucet: ${node.source === 'BITCOIND_RPC_URL' ? explained.message : `${node.source} does not answer (is the quick start running?): ${explained.problem}`}\n`,
    );
    return 1;
  }
}

/** The node's wallet: the one loaded, else `blockwire` loaded or created (a fresh regtest bitcoind has none). */
async function openWallet(rpc: BitcoindClient, node: { rpcUrl: string; cookieFile?: string }): Promise<BitcoindClient> {
  const forWallet = (name: string) =>
    new BitcoindClient({ url: node.rpcUrl, wallet: name, ...(node.cookieFile ? { cookieFile: node.cookieFile } : {}) });
  const loaded = await rpc.call<string[]>('listwallets');
  if (loaded.length > 0) return forWallet(loaded[0]!);
  try {
    await rpc.call('loadwallet', ['blockwire']);
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    await rpc.call('createwallet', ['blockwire']);
  }
  return forWallet('blockwire');
}
