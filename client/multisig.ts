/**
 * m-of-n multisig accounts: the `OP_CHECKMULTISIG` script from public keys, wrapped as P2SH
 * (legacy, redeem script ≤ 520 bytes so n ≤ 15), P2WSH or P2SH-P2WSH (n ≤ 20), and its address.
 * Spending one is the builder's job (`fromMultisig`); signatures are collected all at once or one
 * signer at a time through PSBT (psbt.ts).
 * @module
 */
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { getNetwork, type Network, type NetworkName } from './network.js';

/** How the multisig script is wrapped. */
export type MultisigType = 'p2sh' | 'p2wsh' | 'p2sh-p2wsh';

/** Every multisig wrapping. */
export const MULTISIG_TYPES: readonly MultisigType[] = Object.freeze(['p2sh', 'p2wsh', 'p2sh-p2wsh']);

/** An m-of-n multisig account. */
export type MultisigAccount = {
  readonly m: number;
  readonly n: number;
  /** The public keys, in script order. */
  readonly publicKeys: readonly Uint8Array[];
  readonly type: MultisigType;
  readonly network: Network;
  /** The address paying the account. */
  readonly address: string;
  /** The output script (scriptPubKey) of the address. */
  readonly script: Uint8Array;
  /** `m <keys> n OP_CHECKMULTISIG`. */
  readonly multisigScript: Uint8Array;
  /** P2SH redeem script (the multisig script for p2sh, the P2WSH program for p2sh-p2wsh). */
  readonly redeemScript?: Uint8Array;
  /** P2WSH witness script (the multisig script) for p2wsh and p2sh-p2wsh. */
  readonly witnessScript?: Uint8Array;
};

/** Options of `createMultisig`. */
export type MultisigOptions = {
  /** Signatures required. */
  m: number;
  /** Compressed public keys (33 bytes, or hex). */
  publicKeys: readonly (Uint8Array | string)[];
  /** Wrapping (default `p2wsh`). */
  type?: MultisigType;
  network?: NetworkName | Network;
  /** Sort the keys as BIP67 does, so every party derives the same address from any key order (default false: keep the order given). */
  sortKeys?: boolean;
};

/**
 * Builds an m-of-n multisig account.
 * @throws RangeError for a bad m or n, TypeError for a bad or repeated key.
 */
export function createMultisig(opts: MultisigOptions): MultisigAccount {
  const type = opts.type ?? 'p2wsh';
  const network = getNetwork(opts.network ?? 'main');
  let keys = opts.publicKeys.map((k) => (typeof k === 'string' ? hex.decode(k) : k));
  const n = keys.length;
  const { m } = opts;
  const maxN = type === 'p2sh' ? 15 : 20;
  if (!Number.isInteger(m) || m < 1) throw new RangeError(`m must be an integer ≥ 1, got ${m}`);
  if (n < m) throw new RangeError(`A ${m}-of-n multisig needs at least ${m} public keys, got ${n}`);
  if (n > maxN) throw new RangeError(`A ${type} multisig holds at most ${maxN} keys, got ${n}`);
  const seen = new Set<string>();
  for (const k of keys) {
    if (k.length !== 33 || (k[0] !== 2 && k[0] !== 3))
      throw new TypeError('Multisig public keys must be compressed (33 bytes, 02/03 prefix)');
    const h = hex.encode(k);
    if (seen.has(h)) throw new TypeError(`Public key ${h} appears twice`);
    seen.add(h);
  }
  if (opts.sortKeys) keys = [...keys].sort((a, b) => (hex.encode(a) < hex.encode(b) ? -1 : 1));
  const ms = btc.p2ms(m, keys);
  let pay: { script: Uint8Array; address?: string; redeemScript?: Uint8Array; witnessScript?: Uint8Array };
  if (type === 'p2sh') pay = btc.p2sh(ms, network);
  else if (type === 'p2wsh') pay = btc.p2wsh(ms, network);
  else if (type === 'p2sh-p2wsh') pay = btc.p2sh(btc.p2wsh(ms, network), network);
  else throw new TypeError(`Unknown multisig type "${String(type)}": expected one of ${MULTISIG_TYPES.join(', ')}`);
  return Object.freeze({
    m,
    n,
    publicKeys: Object.freeze(keys),
    type,
    network,
    address: pay.address!,
    script: pay.script,
    multisigScript: ms.script,
    ...(pay.redeemScript ? { redeemScript: pay.redeemScript } : {}),
    ...(pay.witnessScript ? { witnessScript: pay.witnessScript } : {}),
  });
}
