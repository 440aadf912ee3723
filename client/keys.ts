/**
 * Keys and addresses: random private keys, WIF (compressed and uncompressed, per network), public
 * keys, and the four single-key address types (P2PKH, P2SH-P2WPKH, P2WPKH, P2TR with a BIP86
 * key-path-only tweak). Addresses decode to output scripts, future witness versions included, as
 * Bitcoin Core's key_io does. Private keys stay in the caller's memory: nothing here does I/O.
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58check as base58checkFactory, bech32m, hex } from '@scure/base';
import { sha256 } from '@noble/hashes/sha2.js';
import * as btc from '@scure/btc-signer';
import { getNetwork, type Network, type NetworkName } from './network.js';

const base58check = base58checkFactory(sha256);

/** The single-key address types the SDK derives and spends. */
export type AddressType = 'p2pkh' | 'p2sh-p2wpkh' | 'p2wpkh' | 'p2tr';

/** Every single-key address type. */
export const ADDRESS_TYPES: readonly AddressType[] = Object.freeze(['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr']);

/** A decoded WIF private key. */
export type DecodedWif = {
  /** The 32-byte secret. */
  privateKey: Uint8Array;
  /** True when the key's public key is used in compressed form (the 0x01 suffix). */
  compressed: boolean;
  /** The WIF version byte (0x80 mainnet, 0xef for test, testnet4, signet and regtest). */
  version: number;
};

/** A new private key from the platform's cryptographic random source. */
export function randomPrivateKey(): Uint8Array {
  return secp256k1.utils.randomSecretKey();
}

function assertPrivateKey(privateKey: Uint8Array): void {
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32) throw new TypeError('Private key must be 32 bytes');
  if (!secp256k1.utils.isValidSecretKey(privateKey)) throw new RangeError('Private key is not in the range 1..n-1 of secp256k1');
}

/**
 * Encodes a private key in wallet-import format for `network`.
 * @param compressed - mark the key as using a compressed public key (default true, as every
 *   wallet since 2012 does; segwit and taproot require it).
 */
export function encodeWif(privateKey: Uint8Array, network: NetworkName | Network = 'main', compressed = true): string {
  assertPrivateKey(privateKey);
  const net = getNetwork(network);
  const body = new Uint8Array(compressed ? 34 : 33);
  body[0] = net.wif;
  body.set(privateKey, 1);
  if (compressed) body[33] = 0x01;
  return base58check.encode(body);
}

/**
 * Decodes a WIF private key. With `network`, a key for another network is refused.
 * @throws TypeError when the string is not a valid WIF key (for that network).
 */
export function decodeWif(wif: string, network?: NetworkName | Network): DecodedWif {
  if (typeof wif !== 'string') throw new TypeError('WIF must be a string');
  let data: Uint8Array;
  try {
    data = base58check.decode(wif);
  } catch {
    throw new TypeError('Invalid WIF: bad Base58Check encoding');
  }
  const version = data[0]!;
  let compressed: boolean;
  if (data.length === 33) compressed = false;
  else if (data.length === 34 && data[33] === 0x01) compressed = true;
  else throw new TypeError('Invalid WIF: wrong length or compression flag');
  if (version !== 0x80 && version !== 0xef) throw new TypeError(`Invalid WIF: unknown version byte 0x${version.toString(16)}`);
  if (network !== undefined && getNetwork(network).wif !== version) {
    throw new TypeError(`Invalid WIF: the key is for another network than ${getNetwork(network).name}`);
  }
  const privateKey = data.slice(1, 33);
  if (!secp256k1.utils.isValidSecretKey(privateKey)) throw new TypeError('Invalid WIF: key out of range');
  return { privateKey, compressed, version };
}

/** The secp256k1 public key of `privateKey` (33 bytes compressed, 65 uncompressed). */
export function getPublicKey(privateKey: Uint8Array, compressed = true): Uint8Array {
  assertPrivateKey(privateKey);
  return secp256k1.getPublicKey(privateKey, compressed);
}

/** The x-only (BIP340) form of a public key: its 32-byte X coordinate. */
export function xOnly(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length === 32) return publicKey;
  if (publicKey.length !== 33) throw new TypeError('Taproot needs a compressed (33-byte) or x-only (32-byte) public key');
  return publicKey.slice(1);
}

/** The payment (script, address, redeem script) of a public key as address `type`. */
export function keyPayment(
  publicKey: Uint8Array,
  type: AddressType,
  network: NetworkName | Network = 'main',
): {
  script: Uint8Array;
  address: string;
  redeemScript?: Uint8Array;
  tapInternalKey?: Uint8Array;
} {
  const net = getNetwork(network);
  if (type !== 'p2pkh' && publicKey.length !== 33 && !(type === 'p2tr' && publicKey.length === 32)) {
    throw new TypeError(`${type} needs a compressed public key; an uncompressed key has only a p2pkh address`);
  }
  switch (type) {
    case 'p2pkh': {
      const p = btc.p2pkh(publicKey, net);
      return { script: p.script, address: p.address! };
    }
    case 'p2wpkh': {
      const p = btc.p2wpkh(publicKey, net);
      return { script: p.script, address: p.address! };
    }
    case 'p2sh-p2wpkh': {
      const p = btc.p2sh(btc.p2wpkh(publicKey, net), net);
      return { script: p.script, address: p.address!, redeemScript: p.redeemScript! };
    }
    case 'p2tr': {
      const internal = xOnly(publicKey);
      const p = btc.p2tr(internal, undefined, net);
      return { script: p.script, address: p.address!, tapInternalKey: internal };
    }
    default:
      throw new TypeError(`Unknown address type "${String(type)}": expected one of ${ADDRESS_TYPES.join(', ')}`);
  }
}

/** The address of a public key as `type` on `network`. */
export function addressFromPublicKey(publicKey: Uint8Array, type: AddressType, network: NetworkName | Network = 'main'): string {
  return keyPayment(publicKey, type, network).address;
}

/** What an address decodes to. */
export type DecodedAddress = {
  /** `pkh`, `sh`, `wpkh`, `wsh`, `tr`, `p2a`, or `witness` for a future witness version. */
  type: string;
  /** The output script (scriptPubKey) that pays the address. */
  script: Uint8Array;
};

/**
 * Decodes `address` for `network` into its output script. Future witness versions (2–16, and
 * version 1 programs other than 32 bytes) decode as Core decodes them: `OP_n <program>`.
 * @throws TypeError for anything that is not a valid address of that network.
 */
export function decodeAddress(address: string, network: NetworkName | Network = 'main'): DecodedAddress {
  const net = getNetwork(network);
  if (typeof address !== 'string') throw new TypeError('Address must be a string');
  try {
    const decoded = btc.Address(net).decode(address);
    return { type: decoded.type, script: btc.OutScript.encode(decoded) };
  } catch (err) {
    // Witness v1+ programs scure has no template for (future versions, or a 32-byte v1 program
    // that is not a valid x coordinate) are still valid addresses for Core.
    const future = decodeWitnessV1Plus(address, net);
    if (future) return future;
    throw new TypeError(`Invalid ${net.name} address "${address}": ${err instanceof Error ? err.message : String(err)}`);
  }
}

function decodeWitnessV1Plus(address: string, net: Network): DecodedAddress | undefined {
  let res: ReturnType<typeof bech32m.decode>;
  try {
    res = bech32m.decode(address as `${string}1${string}`);
  } catch {
    return undefined;
  }
  const [version, ...words] = res.words;
  if (res.prefix !== net.bech32 || version === undefined || version < 1 || version > 16) return undefined;
  const program = bech32m.fromWords(words);
  if (program.length < 2 || program.length > 40) return undefined;
  return { type: version === 1 && program.length === 32 ? 'tr' : 'witness', script: btc.Script.encode([version, program]) };
}

/** The output script paying `address` on `network`. */
export function addressToScript(address: string, network: NetworkName | Network = 'main'): Uint8Array {
  return decodeAddress(address, network).script;
}

/** True when `address` is a valid address of `network`. */
export function isValidAddress(address: string, network: NetworkName | Network = 'main'): boolean {
  try {
    decodeAddress(address, network);
    return true;
  } catch {
    return false;
  }
}

/**
 * The address an output script pays on `network`, or undefined when it has none (OP_RETURN,
 * bare multisig, P2PK, non-standard).
 */
export function scriptToAddress(script: Uint8Array | string, network: NetworkName | Network = 'main'): string | undefined {
  const net = getNetwork(network);
  const bytes = typeof script === 'string' ? hex.decode(script) : script;
  try {
    const out = btc.OutScript.decode(bytes);
    if (out.type === 'unknown' || out.type === 'ms' || out.type === 'pk' || out.type === 'tr_ns' || out.type === 'tr_ms') {
      return futureWitnessAddress(bytes, net);
    }
    return btc.Address(net).encode(out);
  } catch {
    return futureWitnessAddress(bytes, net);
  }
}

function futureWitnessAddress(script: Uint8Array, net: Network): string | undefined {
  // OP_1..OP_16 followed by one push of 2..40 bytes, and nothing else.
  const op = script[0]!;
  const len = script[1]!;
  if (script.length < 4 || op < 0x51 || op > 0x60 || len < 2 || len > 40 || script.length !== len + 2) return undefined;
  const version = op - 0x50;
  return bech32m.encode(net.bech32, [version, ...bech32m.toWords(script.subarray(2))]);
}

/**
 * A private key with its network: derives its public key, WIF and addresses. The secret stays in
 * this object; nothing sends it anywhere.
 */
export class Key {
  /** The 32-byte secret. */
  readonly privateKey: Uint8Array;
  /** Whether the public key is used compressed (false only for legacy uncompressed WIF keys). */
  readonly compressed: boolean;
  /** The key's network. */
  readonly network: Network;

  constructor(privateKey: Uint8Array, network: NetworkName | Network = 'main', compressed = true) {
    assertPrivateKey(privateKey);
    this.privateKey = privateKey;
    this.network = getNetwork(network);
    this.compressed = compressed;
  }

  /** A new random key on `network`. */
  static random(network: NetworkName | Network = 'main'): Key {
    return new Key(randomPrivateKey(), network);
  }

  /**
   * A key from its WIF. The WIF version fixes mainnet vs. the test networks; pass `network` to
   * pick which test network (`regtest` uses `bcrt1…` addresses), default `test`.
   */
  static fromWif(wif: string, network?: NetworkName | Network): Key {
    const d = decodeWif(wif, network);
    const net = network !== undefined ? getNetwork(network) : d.version === 0x80 ? 'main' : 'test';
    return new Key(d.privateKey, net, d.compressed);
  }

  /** The public key (compressed unless the key came from an uncompressed WIF). */
  get publicKey(): Uint8Array {
    return getPublicKey(this.privateKey, this.compressed);
  }

  /** The key in wallet-import format. */
  toWif(): string {
    return encodeWif(this.privateKey, this.network, this.compressed);
  }

  /** The key's address of `type` (default P2WPKH). */
  address(type: AddressType = 'p2wpkh'): string {
    return addressFromPublicKey(this.publicKey, type, this.network);
  }
}
