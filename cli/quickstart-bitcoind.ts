/**
 * The quick start on a real Bitcoin Core: a regtest bitcoind child (cli/embedded/bitcoind.ts)
 * with its datadir under the data directory, a descriptor wallet `blockwire` loaded on every start,
 * 101 blocks to it on a new chain (coinbase outputs mature after 100), and, every `mineEvery`
 * seconds, a block after a few sample payments from the wallet to its own new addresses of every
 * type (one with an OP_RETURN output now and then), so that a fresh index has something to show.
 * @module
 */
import { join } from 'node:path';
import type { Logger } from '../src/log.js';
import { BitcoindClient, RpcError } from '../src/rpc/bitcoind.js';
import { startRegtestBitcoind, type RegtestBitcoind } from './embedded/bitcoind.js';

const QUICKSTART_WALLET = 'blockwire';

/** getnewaddress types, one of each in turn. */
const SAMPLE_TYPES = ['bech32', 'bech32m', 'legacy', 'p2sh-segwit'] as const;

export type QuickStartBitcoind = {
  readonly node: RegtestBitcoind;
  /** Calls to the node; `wallet` calls go to the quick start's wallet. */
  readonly rpc: BitcoindClient;
  readonly wallet: BitcoindClient;
  tip(): Promise<{ height: number; hash: string }>;
  blockHash(height: number): Promise<string>;
  /** Mines `n` blocks to the wallet. */
  mine(n: number): Promise<string[]>;
  /** Pays `sats` to each address from the wallet and mines a block. */
  fund(addresses: readonly string[], sats: bigint): Promise<void>;
  /** An address of the wallet that has received coins (for the banner's history example). */
  exampleAddress(): Promise<string>;
  /** Stops the mining loop, then the node. */
  stop(): Promise<void>;
};

const btc = (sats: bigint) => Number(sats) / 1e8;

/** Loads the wallet (created on the first start), marked to load again when the node restarts. */
async function openWallet(rpc: BitcoindClient): Promise<void> {
  if ((await rpc.call<string[]>('listwallets')).includes(QUICKSTART_WALLET)) return;
  try {
    await rpc.call('loadwallet', [QUICKSTART_WALLET, true]);
  } catch (err) {
    // -18: no such wallet yet (a new datadir).
    if (!(err instanceof RpcError) || err.code !== -18) throw err;
    await rpc.call('createwallet', [QUICKSTART_WALLET, false, false, '', false, true, true]);
  }
}

export async function startQuickStartBitcoind(opts: {
  bin: string;
  dataDir: string;
  mineEvery: number;
  log: Logger;
}): Promise<QuickStartBitcoind> {
  const { log } = opts;
  const node = await startRegtestBitcoind({
    bin: opts.bin,
    datadir: join(opts.dataDir, 'bitcoind'),
    onLog: (l) => log.debug({ component: 'bitcoind' }, l.trim()),
  });
  const rpc = new BitcoindClient({ url: node.rpcUrl });
  const wallet = new BitcoindClient({ url: node.rpcUrl, wallet: QUICKSTART_WALLET });
  try {
    await openWallet(rpc);
  } catch (err) {
    await node.stop();
    throw err;
  }
  // After a supervised restart the wallet comes back by itself (load_on_startup).
  const mine = async (n: number) => wallet.call<string[]>('generatetoaddress', [n, await wallet.call<string>('getnewaddress')]);
  const height = await rpc.call<number>('getblockcount');
  if (height < 101) await mine(101 - height);

  let round = 0;
  const samples = async () => {
    for (let i = 0; i < 3; i++, round++) {
      const to = await wallet.call<string>('getnewaddress', ['', SAMPLE_TYPES[round % SAMPLE_TYPES.length]]);
      const amount = btc(BigInt(10_000 + ((round * 7919) % 990_000)));
      if (round % 4 === 3)
        await wallet.call('send', [[{ [to]: amount }, { data: Buffer.from(`blockwire quick start sample ${round}`).toString('hex') }]]);
      else await wallet.call('sendtoaddress', [to, amount]);
    }
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      try {
        await samples();
        await mine(1);
      } catch (err) {
        if (!stopped) log.warn({ err }, 'bitcoind: sample payments or mining failed (will try again)');
      }
      if (!stopped) timer = setTimeout(tick, opts.mineEvery * 1000);
    })();
  };
  if (opts.mineEvery > 0) timer = setTimeout(tick, opts.mineEvery * 1000);

  return {
    node,
    rpc,
    wallet,
    tip: async () => {
      const info = await rpc.call<{ blocks: number; bestblockhash: string }>('getblockchaininfo');
      return { height: info.blocks, hash: info.bestblockhash };
    },
    blockHash: (h) => rpc.call<string>('getblockhash', [h]),
    mine,
    fund: async (addresses, sats) => {
      for (const a of addresses) await wallet.call('sendtoaddress', [a, btc(sats)]);
      await mine(1);
    },
    exampleAddress: async () => {
      const received = await wallet.call<{ address: string }[]>('listreceivedbyaddress', [1]);
      return received[0]?.address ?? (await wallet.call<string>('getnewaddress'));
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
      await node.stop();
    },
  };
}
