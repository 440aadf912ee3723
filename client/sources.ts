/**
 * Spend sources: an address whose outputs a builder may spend, with the PSBT fields its inputs
 * need (redeem script, witness script, taproot internal key) and the private keys that sign
 * them. A single-key source signs alone; a multisig source takes any of its cosigners' keys.
 * @module
 */
import { hex } from '@scure/base';
import { Key, decodeWif, keyPayment, type AddressType } from './keys.js';
import type { MultisigAccount } from './multisig.js';
import { getNetwork, type Network, type NetworkName } from './network.js';

/** A private key as the SDK accepts it: a `Key`, a WIF string, or 32 raw bytes. */
export type KeyInput = Key | string | Uint8Array;

/** The PSBT fields an input spending the source needs besides the outpoint and prevout. */
export type InputFields = { redeemScript?: Uint8Array; witnessScript?: Uint8Array; tapInternalKey?: Uint8Array };

/** An address the builder may spend from. */
export type SpendSource = {
  readonly address: string;
  /** The address's output script. */
  readonly script: Uint8Array;
  readonly fields: InputFields;
  /** Keys that sign its inputs (empty for watch-only; multisig cosigners may add theirs later via PSBT). */
  readonly keys: readonly Uint8Array[];
  /** Signatures an input needs. */
  readonly required: number;
  readonly multisig?: MultisigAccount;
};

/**
 * The 32-byte secret of a key for signing on `network`.
 * @throws TypeError for a WIF of another network or an uncompressed key (scure signs with compressed keys only).
 */
export function signingKey(k: KeyInput, network: NetworkName | Network): Uint8Array {
  const net = getNetwork(network);
  if (k instanceof Uint8Array) {
    if (k.length !== 32) throw new TypeError('Private key must be 32 bytes');
    return k;
  }
  const key = typeof k === 'string' ? decodeWif(k, net) : k;
  if (!key.compressed) throw new TypeError('Signing needs a compressed key; this uncompressed WIF key can only be decoded');
  if (key instanceof Key && key.network.wif !== net.wif) throw new TypeError(`The key is for another network than ${net.name}`);
  return key.privateKey;
}

/** A single-key source: the key's address of `type`. */
export function keySource(k: KeyInput, type: AddressType, network: NetworkName | Network): SpendSource {
  const net = getNetwork(network);
  const priv = signingKey(k, net);
  const pay = keyPayment(new Key(priv, net).publicKey, type, net);
  const fields: InputFields = {};
  if (pay.redeemScript) fields.redeemScript = pay.redeemScript;
  if (pay.tapInternalKey) fields.tapInternalKey = pay.tapInternalKey;
  return Object.freeze({ address: pay.address, script: pay.script, fields, keys: [priv], required: 1 });
}

/** A multisig source; `keys` are the cosigners' keys held here (any number, none for PSBT-only). */
export function multisigSource(account: MultisigAccount, keys: readonly KeyInput[] = []): SpendSource {
  const fields: InputFields = {};
  if (account.redeemScript) fields.redeemScript = account.redeemScript;
  if (account.witnessScript) fields.witnessScript = account.witnessScript;
  const privs = keys.map((k) => signingKey(k, account.network));
  const members = new Set(account.publicKeys.map((p) => hex.encode(p)));
  for (const p of privs) {
    if (!members.has(hex.encode(new Key(p, account.network).publicKey)))
      throw new TypeError('A signing key is not one of the multisig public keys');
  }
  return Object.freeze({ address: account.address, script: account.script, fields, keys: privs, required: account.m, multisig: account });
}
