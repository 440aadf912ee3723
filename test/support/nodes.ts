/**
 * One contract, two nodes: `describeNodes` runs a suite once against a real regtest bitcoind and
 * once against the devnode (the stand-in), through one handle shape. The bitcoind run follows
 * `describeBitcoind` (fails under CI when bitcoind is missing, skips with a notice otherwise).
 */
import { describe } from 'vitest';
import { addressToScript } from '../../src/bitcoin/address.js';
import { encodeTx } from '../../src/bitcoin/encode.js';
import { bytesToHex } from '../../src/bitcoin/hash.js';
import { startDevnode, type Devnode, type DevnodeOptions } from '../../devnode/index.js';
import { describeBitcoind, rpcCall, startBitcoind, type Bitcoind, type BitcoindOptions } from './bitcoind.js';

export type NodeKind = 'bitcoind' | 'devnode';

/** What a contract test sees of either node. */
export type TestNode = {
  readonly kind: NodeKind;
  /** Credentials in the URL, as BITCOIND_RPC_URL takes it. */
  readonly rpcUrl: string;
  readonly restUrl: string;
  readonly zmqUrl: string;
  readonly rpc: { host: string; port: number; user: string; password: string };
  /** One JSON-RPC call; throws BitcoindRpcError with the node's code and message. */
  call<T = unknown>(method: string, params?: unknown[], wallet?: string): Promise<T>;
  /** Mines `n` blocks (to `address`, else to the node's wallet or an anyone-can-spend output). */
  mine(n?: number, address?: string): Promise<string[]>;
  tip(): Promise<{ height: number; hash: string }>;
  /** Pays `sats` to `address` from the funded wallet (sendtoaddress); returns the txid. */
  pay(address: string, sats: bigint): Promise<string>;
  /**
   * One transaction from the funded wallet paying each of `payments` (an address may come more
   * than once: one output each); returns the txid. Regtest addresses.
   */
  payMany(payments: readonly { address: string; sats: bigint }[]): Promise<string>;
  stop(): Promise<void>;
  /** The underlying handle, for what only one of them has (fault injection, restart…). */
  readonly bitcoind: Bitcoind | null;
  readonly devnode: Devnode | null;
};

export type NodeStartOptions = {
  /** A wallet with spendable coins: bitcoind's descriptor wallet `miner` with 101 blocks, the devnode's built-in wallet with 101 blocks. */
  funded?: boolean;
  bitcoind?: BitcoindOptions;
  devnode?: DevnodeOptions;
};

const btc = (sats: bigint) => Number(sats) / 1e8;

function fromBitcoind(b: Bitcoind): TestNode {
  return {
    kind: 'bitcoind',
    get rpcUrl() {
      return b.rpcUrl;
    },
    get restUrl() {
      return b.restUrl;
    },
    get zmqUrl() {
      return b.zmqUrl;
    },
    get rpc() {
      return b.rpc;
    },
    call: b.call,
    mine: b.mine,
    tip: b.tip,
    pay: (address, sats) => {
      if (!b.wallet) throw new Error('this bitcoind has no wallet: start it with funded: true');
      return b.call<string>('sendtoaddress', [address, btc(sats)], b.wallet);
    },
    payMany: async (payments) => {
      if (!b.wallet) throw new Error('this bitcoind has no wallet: start it with funded: true');
      // sendmany and createrawtransaction refuse an address twice: the outputs are encoded here.
      const outputs = payments.map((p) => ({ value: p.sats, script: addressToScript(p.address, 'regtest') }));
      const funded = await b.call<{ hex: string }>(
        'fundrawtransaction',
        [bytesToHex(encodeTx({ version: 2, inputs: [], outputs, locktime: 0 }))],
        b.wallet,
      );
      const signed = await b.call<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [funded.hex], b.wallet);
      return b.call<string>('sendrawtransaction', [signed.hex]);
    },
    stop: b.stop,
    bitcoind: b,
    devnode: null,
  };
}

function fromDevnode(d: Devnode): TestNode {
  return {
    kind: 'devnode',
    rpcUrl: d.rpcUrl,
    restUrl: d.restUrl,
    zmqUrl: d.zmqUrl,
    rpc: d.rpc,
    call: (method, params = [], wallet) => rpcCall(d.rpc, method, params, wallet),
    mine: (n = 1, address) => d.mine(n, address ? { address } : {}),
    tip: async () => d.tip(),
    pay: async (address, sats) => d.wallet.send(address, sats),
    payMany: async ([first, ...rest]) => {
      if (!first) throw new Error('payMany: no payment');
      return d.wallet.send(first.address, first.sats, { outputs: rest.map((p) => ({ to: p.address, sats: p.sats })) });
    },
    stop: () => d.stop(),
    bitcoind: null,
    devnode: d,
  };
}

export type NodeEntry = { name: NodeKind; start(opts?: NodeStartOptions): Promise<TestNode> };

/** The two nodes a contract runs against: real Bitcoin Core first, then the stand-in. */
export const nodes: readonly NodeEntry[] = [
  { name: 'bitcoind', start: async (o = {}) => fromBitcoind(await startBitcoind({ funded: o.funded, ...o.bitcoind })) },
  {
    name: 'devnode',
    start: async (o = {}) => fromDevnode(await startDevnode({ ...(o.funded ? { initialBlocks: 101 } : {}), ...o.devnode })),
  },
];

/**
 * `describe(name [node], …)` once per node in `nodes`; `fn` gets the entry and starts its node
 * itself (usually in beforeAll). The bitcoind run is skipped or failed as describeBitcoind says.
 */
export function describeNodes(name: string, fn: (node: NodeEntry) => void): void {
  for (const entry of nodes) {
    const title = `${name} [${entry.name}]`;
    if (entry.name === 'bitcoind') describeBitcoind(title, () => fn(entry));
    else describe(title, () => fn(entry));
  }
}
