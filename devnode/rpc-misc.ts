/**
 * Node, network, ZMQ and control RPCs (getnetworkinfo, getzmqnotifications, uptime, stop,
 * setmocktime, help, …) and a minimal wallet interface over the built-in wallet (createwallet,
 * loadwallet, listwallets, getnewaddress, getbalance, sendtoaddress): every wallet name is
 * served by the same built-in wallet.
 * @module
 */
import type { DevnodeContext } from './context.js';
import { amount } from './core-json.js';
import { POLICY } from './policy.js';
import { absent, argAmount, argInt, argString, arity } from './rpc-params.js';
import { RPC_ERR, RpcError, type RpcMethod } from './rpc-server.js';
import { InsufficientFunds, type AddressType } from './wallet.js';
import { regtestScript } from './address.js';

const NETWORKS = ['ipv4', 'ipv6', 'onion', 'i2p', 'cjdns'].map((name) => ({
  name,
  limited: !name.startsWith('ipv'),
  reachable: name.startsWith('ipv'),
  proxy: '',
  proxy_randomize_credentials: false,
}));

const WALLET_TYPES: Record<string, AddressType> = {
  legacy: 'p2pkh',
  'p2sh-segwit': 'p2sh-p2wpkh',
  bech32: 'p2wpkh',
  bech32m: 'p2tr',
};

/** The node, network and control methods. */
export function miscMethods(ctx: DevnodeContext, methodNames: () => string[]): Record<string, RpcMethod> {
  const { node } = ctx;
  const wallets = new Set<string>();
  return {
    getnetworkinfo: {
      args: [],
      run: () => ({
        version: 300000,
        subversion: '/Satoshi:30.0.0(blockwire-devnode)/',
        protocolversion: 70016,
        localservices: '0000000000000c09',
        localservicesnames: ['NETWORK', 'WITNESS', 'NETWORK_LIMITED', 'P2P_V2'],
        localrelay: true,
        timeoffset: 0,
        networkactive: true,
        connections: 0,
        connections_in: 0,
        connections_out: 0,
        networks: NETWORKS,
        relayfee: amount(POLICY.minRelayFeePerKvB),
        incrementalfee: amount(POLICY.incrementalRelayFeePerKvB),
        localaddresses: [],
        warnings: [],
      }),
    },
    getzmqnotifications: {
      args: [],
      run: () =>
        ['pubhashblock', 'pubhashtx', 'pubrawblock', 'pubrawtx', 'pubsequence'].map((type) => ({
          type,
          address: ctx.zmqEndpoint(),
          hwm: 1000,
        })),
    },
    getconnectioncount: { args: [], run: () => 0 },
    getpeerinfo: { args: [], run: () => [] },
    ping: { args: [], run: () => null },
    uptime: { args: [], run: () => Math.floor(Date.now() / 1000) - ctx.startedAt },
    setmocktime: {
      args: ['timestamp'],
      run: ({ params }) => {
        arity('setmocktime', params, 1, 1, 'timestamp');
        const t = argInt(params[0]);
        if (t < 0) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Mocktime cannot be negative: ' + t + '.');
        node.setMockTime(t);
        return null;
      },
    },
    stop: {
      args: ['wait'],
      run: () => {
        ctx.requestStop();
        return 'Bitcoin Core stopping';
      },
    },
    help: {
      args: ['command'],
      run: ({ params }) => {
        if (!absent(params[0])) return `${argString(params[0])}\n\n(devnode: see Bitcoin Core's help for this command)`;
        return ['== Devnode (a Bitcoin Core 30 regtest stand-in) ==', ...methodNames().sort()].join('\n');
      },
    },
    createwallet: { args: ['wallet_name'], run: ({ params }) => (wallets.add(argString(params[0])), { name: argString(params[0]) }) },
    loadwallet: { args: ['filename'], run: ({ params }) => (wallets.add(argString(params[0])), { name: argString(params[0]) }) },
    listwallets: { args: [], run: () => [...wallets] },
    getnewaddress: {
      args: ['label', 'address_type'],
      run: ({ params }) => {
        const t = absent(params[1]) ? 'bech32' : argString(params[1]);
        const type = WALLET_TYPES[t];
        if (!type) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, `Unknown address type '${t}'`);
        return ctx.wallet.newDestination(type).address;
      },
    },
    getbalance: { args: ['dummy', 'minconf', 'include_watchonly', 'avoid_reuse'], run: () => amount(ctx.wallet.balance()) },
    sendtoaddress: {
      args: [
        'address',
        'amount',
        'comment',
        'comment_to',
        'subtractfeefromamount',
        'replaceable',
        'conf_target',
        'estimate_mode',
        'avoid_reuse',
        'fee_rate',
        'verbose',
      ],
      run: ({ params }) => {
        const address = argString(params[0]);
        if (!regtestScript(address)) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Invalid address');
        const sats = argAmount(params[1]);
        if (sats <= 0n) throw new RpcError(RPC_ERR.TYPE_ERROR, 'Invalid amount for send');
        const rbf = absent(params[5]) ? true : params[5] === true;
        const feeRate = absent(params[9]) ? undefined : Number(params[9]);
        try {
          return ctx.wallet.send(address, sats, { rbf, ...(feeRate ? { feeRate } : {}) });
        } catch (err) {
          if (err instanceof InsufficientFunds) throw new RpcError(RPC_ERR.WALLET_INSUFFICIENT_FUNDS, 'Insufficient funds');
          throw err;
        }
      },
    },
  };
}
