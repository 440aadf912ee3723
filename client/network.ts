/**
 * Bitcoin networks the SDK knows: address prefixes, WIF version and the Open Assets asset-ID
 * version byte. `test`, `testnet4` and `signet` share their encodings (Core's chainparams);
 * `regtest` differs only in its bech32 prefix (`bcrt`).
 * @module
 */
import type { NETWORK } from '@scure/btc-signer';

/** A network name as Bitcoin Core spells it in `-chain=` (and `main` for mainnet). */
export type NetworkName = 'main' | 'test' | 'testnet4' | 'signet' | 'regtest';

/** Encoding parameters of one network, in the shape @scure/btc-signer takes. */
export type Network = typeof NETWORK & {
  /** The network's name. */
  readonly name: NetworkName;
  /** Base58 version byte of an Open Assets asset ID (23 on mainnet, 115 elsewhere). */
  readonly assetId: number;
};

const main: Network = Object.freeze({ name: 'main', bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80, assetId: 23 });
const testLike = { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef, assetId: 115 } as const;

/** Every network, by name. */
export const NETWORKS: Readonly<Record<NetworkName, Network>> = Object.freeze({
  main,
  test: Object.freeze({ name: 'test', ...testLike }),
  testnet4: Object.freeze({ name: 'testnet4', ...testLike }),
  signet: Object.freeze({ name: 'signet', ...testLike }),
  regtest: Object.freeze({ name: 'regtest', ...testLike, bech32: 'bcrt' }),
});

/** Every network name, mainnet first. */
export const NETWORK_NAMES: readonly NetworkName[] = Object.freeze(Object.keys(NETWORKS) as NetworkName[]);

/**
 * The network called `name` (a `Network` object is returned as is).
 * @throws TypeError for an unknown name.
 */
export function getNetwork(name: NetworkName | Network): Network {
  if (typeof name === 'object' && name !== null) return name;
  const n = (NETWORKS as Record<string, Network | undefined>)[name];
  if (!n) throw new TypeError(`Unknown network "${String(name)}": expected one of ${NETWORK_NAMES.join(', ')}`);
  return n;
}
