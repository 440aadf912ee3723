/**
 * Private keys in Wallet Import Format (Base58Check: network WIF byte, 32-byte key, 0x01 when
 * the public key is compressed) and the public key of a private key (@noble/curves secp256k1).
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58CheckDecode, base58CheckEncode } from './base58.js';
import { getNetwork, type Network, type NetworkName } from './network.js';

/** A decoded WIF key. */
export interface WifKey {
  readonly privateKey: Uint8Array;
  /** True when the key's public key is used compressed (33 bytes). */
  readonly compressed: boolean;
}

function checkPrivateKey(privateKey: Uint8Array): void {
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32) throw new TypeError('private key must be 32 bytes');
  if (!secp256k1.utils.isValidSecretKey(privateKey)) throw new RangeError('private key must be in [1, n-1] of secp256k1');
}

/** WIF of a 32-byte private key for `network`. */
export function encodeWif(privateKey: Uint8Array, network: NetworkName | Network, compressed = true): string {
  checkPrivateKey(privateKey);
  const payload = new Uint8Array(compressed ? 34 : 33);
  payload[0] = getNetwork(network).wif;
  payload.set(privateKey, 1);
  if (compressed) payload[33] = 1;
  return base58CheckEncode(payload);
}

/**
 * Decodes a WIF private key for `network`.
 * @throws TypeError `Invalid WIF: …` naming the problem (encoding, checksum, network, length,
 * compression flag, key range).
 */
export function decodeWif(wif: string, network: NetworkName | Network): WifKey {
  const net = getNetwork(network);
  if (typeof wif !== 'string') throw new TypeError('Invalid WIF: not a string');
  const payload = base58CheckDecode(wif);
  if (payload === 'encoding') throw new TypeError('Invalid WIF: not Base58');
  if (payload === 'checksum') throw new TypeError('Invalid WIF: bad checksum');
  if (payload.length !== 33 && payload.length !== 34) throw new TypeError(`Invalid WIF: ${payload.length} bytes, expected 33 or 34`);
  if (payload[0] !== net.wif) {
    throw new TypeError(
      `Invalid WIF: version 0x${payload[0]!.toString(16).padStart(2, '0')} is not ${net.name}'s (0x${net.wif.toString(16).padStart(2, '0')})`,
    );
  }
  if (payload.length === 34 && payload[33] !== 1) throw new TypeError('Invalid WIF: compression flag must be 0x01');
  const privateKey = payload.slice(1, 33);
  if (!secp256k1.utils.isValidSecretKey(privateKey)) throw new TypeError('Invalid WIF: private key out of range');
  return { privateKey, compressed: payload.length === 34 };
}

/** The secp256k1 public key of a private key: 33 bytes compressed (default) or 65 uncompressed. */
export function publicKeyOf(privateKey: Uint8Array, compressed = true): Uint8Array {
  checkPrivateKey(privateKey);
  return secp256k1.getPublicKey(privateKey, compressed);
}
