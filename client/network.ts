/**
 * The network table: every Bitcoin network by the name Bitcoin Core gives it
 * (`getblockchaininfo.chain`), with its address prefixes (Base58Check version bytes, bech32 HRP),
 * WIF prefix, Open Assets asset-ID version byte, the message start ("magic") that frames blk*.dat
 * records and P2P messages, and its genesis block hash. Source: Core's kernel/chainparams.cpp.
 * `test`, `testnet4` and `signet` share their encodings; `regtest` differs only in its bech32
 * prefix (`bcrt`). The server uses this same table (src/bitcoin/network.ts re-exports it), so the
 * SDK and the server cannot disagree on an address.
 * @module
 */
import type { NETWORK } from '@scure/btc-signer';

/** Chain names as Core prints them: main, test (testnet3), testnet4, signet, regtest. */
export const NETWORK_NAMES = Object.freeze(['main', 'test', 'testnet4', 'signet', 'regtest'] as const);
/** A network name as Bitcoin Core spells it in `-chain=` (and `main` for mainnet). */
export type NetworkName = (typeof NETWORK_NAMES)[number];

/** The parameters of one network, in the shape @scure/btc-signer takes (plus the fields below). */
export type Network = typeof NETWORK & {
  /** The network's name. */
  readonly name: NetworkName;
  /** Base58 version byte of an Open Assets asset ID (23 on mainnet, 115 elsewhere). */
  readonly assetId: number;
  /** The 4 message-start bytes that open each blk*.dat record and P2P message. */
  readonly magic: Uint8Array;
  /** Genesis block hash, display order (as Core prints it). */
  readonly genesisHash: string;
};

const testLike = { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, assetId: 115 } as const;
const network = (n: Omit<Network, 'magic'> & { magic: number[] }): Network => Object.freeze({ ...n, magic: new Uint8Array(n.magic) });

/** Every network, by name. */
export const NETWORKS: Readonly<Record<NetworkName, Network>> = Object.freeze({
  main: network({
    name: 'main',
    bech32: 'bc',
    pubKeyHash: 0x00,
    scriptHash: 0x05,
    wif: 0x80,
    assetId: 23,
    magic: [0xf9, 0xbe, 0xb4, 0xd9],
    genesisHash: '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f',
  }),
  test: network({
    name: 'test',
    ...testLike,
    magic: [0x0b, 0x11, 0x09, 0x07],
    genesisHash: '000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943',
  }),
  testnet4: network({
    name: 'testnet4',
    ...testLike,
    magic: [0x1c, 0x16, 0x3f, 0x28],
    genesisHash: '00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043',
  }),
  signet: network({
    name: 'signet',
    ...testLike,
    magic: [0x0a, 0x03, 0xcf, 0x40],
    genesisHash: '00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6',
  }),
  regtest: network({
    name: 'regtest',
    ...testLike,
    bech32: 'bcrt',
    magic: [0xfa, 0xbf, 0xb5, 0xda],
    genesisHash: '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206',
  }),
});

/** True when `name` is one of NETWORK_NAMES. */
export function isNetworkName(name: unknown): name is NetworkName {
  return typeof name === 'string' && (NETWORK_NAMES as readonly string[]).includes(name);
}

/**
 * The network called `name` (a `Network` object is returned as is).
 * @throws TypeError `unknown network 'x' (expected main, test, testnet4, signet or regtest)`.
 */
export function getNetwork(name: NetworkName | Network | string): Network {
  if (typeof name === 'object' && name !== null) return name;
  if (isNetworkName(name)) return NETWORKS[name];
  throw new TypeError(`unknown network '${String(name)}' (expected main, test, testnet4, signet or regtest)`);
}
