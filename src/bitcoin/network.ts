/**
 * Network parameters, named as Bitcoin Core names its chains (`getblockchaininfo.chain`):
 * address prefixes (Base58Check version bytes, bech32 HRP), WIF prefix, the message start
 * ("magic") that frames blk*.dat records, and the genesis block hash (display order).
 * Source: Core's kernel/chainparams.cpp.
 * @module
 */

/** Chain names as Core prints them: main, test (testnet3), testnet4, signet, regtest. */
export const NETWORK_NAMES = ['main', 'test', 'testnet4', 'signet', 'regtest'] as const;
export type NetworkName = (typeof NETWORK_NAMES)[number];

/** The parameters of one network. */
export interface Network {
  readonly name: NetworkName;
  /** Bech32/bech32m human-readable part of segwit addresses. */
  readonly bech32: string;
  /** Base58Check version byte of P2PKH addresses. */
  readonly pubKeyHash: number;
  /** Base58Check version byte of P2SH addresses. */
  readonly scriptHash: number;
  /** Base58Check version byte of WIF private keys. */
  readonly wif: number;
  /** The 4 message-start bytes that open each blk*.dat record and P2P message. */
  readonly magic: Uint8Array;
  /** Genesis block hash, display order (as Core prints it). */
  readonly genesisHash: string;
}

function network(n: Omit<Network, 'magic'> & { magic: number[] }): Network {
  return Object.freeze({ ...n, magic: new Uint8Array(n.magic) });
}

/** Parameters of every network, by name. */
export const NETWORKS: Readonly<Record<NetworkName, Network>> = Object.freeze({
  main: network({
    name: 'main', bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80, magic: [0xf9, 0xbe, 0xb4, 0xd9],
    genesisHash: '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f',
  }),
  test: network({
    name: 'test', bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, magic: [0x0b, 0x11, 0x09, 0x07],
    genesisHash: '000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943',
  }),
  testnet4: network({
    name: 'testnet4', bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, magic: [0x1c, 0x16, 0x3f, 0x28],
    genesisHash: '00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043',
  }),
  signet: network({
    name: 'signet', bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, magic: [0x0a, 0x03, 0xcf, 0x40],
    genesisHash: '00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6',
  }),
  regtest: network({
    name: 'regtest', bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, magic: [0xfa, 0xbf, 0xb5, 0xda],
    genesisHash: '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206',
  }),
});

/** True when `name` is one of NETWORK_NAMES. */
export function isNetworkName(name: unknown): name is NetworkName {
  return typeof name === 'string' && (NETWORK_NAMES as readonly string[]).includes(name);
}

/**
 * The parameters of a network given by name (or passed through when already a Network).
 * @throws TypeError `unknown network 'x' (expected main, test, testnet4, signet or regtest)`.
 */
export function getNetwork(network: NetworkName | Network | string): Network {
  if (typeof network === 'object' && network !== null) return network;
  if (isNetworkName(network)) return NETWORKS[network];
  throw new TypeError(`unknown network '${String(network)}' (expected main, test, testnet4, signet or regtest)`);
}
