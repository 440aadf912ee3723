/**
 * Addresses: the addresses an output script is indexed under, and the script an address stands for, with Core's checks (key_io.cpp
 * DecodeDestination) and exact error messages: wrong network, bad checksum, mixed case, wrong
 * bech32 variant, bad program size.
 * @module
 */
import { p2tr } from '@scure/btc-signer';
import { base58CheckDecode, base58CheckEncode } from './base58.js';
import { decodeBech32, encodeSegwit, wordsToBytes } from './bech32.js';
import { hash160 } from './hash.js';
import { getNetwork, type Network, NETWORKS, type NetworkName } from './network.js';
import { classifyScript, decodeOutputScript, p2pkhScript, p2shScript, witnessScript } from './script.js';

/** An address that does not decode for the network asked; `message` is fit to show to users. */
export class AddressError extends TypeError {
  override name = 'AddressError';
}

function base58Address(version: number, hash: Uint8Array): string {
  const payload = new Uint8Array(21);
  payload[0] = version;
  payload.set(hash, 1);
  return base58CheckEncode(payload);
}

/** P2PKH address of a 20-byte key hash. */
export function p2pkhAddress(keyHash: Uint8Array, network: NetworkName | Network): string {
  return base58Address(getNetwork(network).pubKeyHash, keyHash);
}

/** Segwit address (bech32 for version 0, bech32m from version 1) of a witness program. */
export function segwitAddress(version: number, program: Uint8Array, network: NetworkName | Network): string {
  return encodeSegwit(getNetwork(network).bech32, version, program);
}

/** P2PKH address of a public key (33 or 65 bytes): where P2PK outputs are indexed. */
export function pubkeyToP2pkhAddress(pubkey: Uint8Array, network: NetworkName | Network): string {
  return p2pkhAddress(hash160(pubkey), network);
}

/** P2WPKH address of a compressed public key. */
export function pubkeyToP2wpkhAddress(pubkey: Uint8Array, network: NetworkName | Network): string {
  if (pubkey.length !== 33) throw new TypeError('P2WPKH needs a 33-byte compressed public key');
  return segwitAddress(0, hash160(pubkey), network);
}

/**
 * P2TR key-path address of a public key (BIP86: the key tweaked with an empty script tree);
 * takes a 32-byte x-only key or a 33-byte compressed key.
 */
export function pubkeyToP2trAddress(pubkey: Uint8Array, network: NetworkName | Network): string {
  if (pubkey.length !== 32 && pubkey.length !== 33) throw new TypeError('P2TR needs a 32-byte x-only or 33-byte compressed public key');
  const xonly = pubkey.length === 33 ? pubkey.subarray(1) : pubkey;
  return segwitAddress(1, p2tr(xonly).tweakedPubkey, network);
}

/**
 * The addresses an output is indexed under: one for P2PKH, P2SH, segwit (any version, as Core
 * shows them) and P2PK (its key's P2PKH address); one per key (P2PKH) for bare multisig; none
 * for OP_RETURN and nonstandard scripts.
 */
export function outputAddresses(script: Uint8Array, network: NetworkName | Network): string[] {
  const net = getNetwork(network);
  const s = script;
  // Fast paths for the common templates, without building a decoded object.
  switch (classifyScript(s)) {
    case 'pubkeyhash':
      return [base58Address(net.pubKeyHash, s.subarray(3, 23))];
    case 'scripthash':
      return [base58Address(net.scriptHash, s.subarray(2, 22))];
    case 'witness_v0_keyhash':
    case 'witness_v0_scripthash':
    case 'witness_v1_taproot':
    case 'anchor':
    case 'witness_unknown':
      return [encodeSegwit(net.bech32, s[0] === 0 ? 0 : s[0]! - 0x50, s.subarray(2))];
    case 'pubkey':
      return [base58Address(net.pubKeyHash, hash160(s.subarray(1, s.length - 1)))];
    case 'multisig': {
      const d = decodeOutputScript(s);
      return d.type === 'multisig' ? d.pubkeys.map((k) => base58Address(net.pubKeyHash, hash160(k))) : [];
    }
    default:
      return [];
  }
}

/** A decoded address: its kind and the output script it pays to. */
export interface DecodedAddress {
  readonly type:
    'pubkeyhash' | 'scripthash' | 'witness_v0_keyhash' | 'witness_v0_scripthash' | 'witness_v1_taproot' | 'anchor' | 'witness_unknown';
  readonly script: Uint8Array;
}

const KNOWN_HRPS = new Set(Object.values(NETWORKS).map((n) => n.bech32));

function hexByte(v: number): string {
  return '0x' + v.toString(16).padStart(2, '0');
}

function sizeWord(n: number): string {
  return n === 1 ? '1 byte' : `${n} bytes`;
}

function decodeBase58Address(address: string, net: Network): DecodedAddress {
  const payload = base58CheckDecode(address);
  if (payload === 'encoding') throw new AddressError('Invalid or unsupported Segwit (Bech32) or Base58 encoding.');
  if (payload === 'checksum') throw new AddressError('Invalid checksum or length of Base58 address (P2PKH or P2SH)');
  const version = payload[0];
  if (version === net.pubKeyHash || version === net.scriptHash) {
    if (payload.length !== 21) throw new AddressError('Invalid length for Base58 address (P2PKH or P2SH)');
    const hash = payload.subarray(1);
    return version === net.pubKeyHash
      ? { type: 'pubkeyhash', script: p2pkhScript(hash) }
      : { type: 'scripthash', script: p2shScript(hash) };
  }
  const others = Object.values(NETWORKS).filter((n) => payload.length === 21 && (n.pubKeyHash === version || n.scriptHash === version));
  if (others.length > 0) {
    throw new AddressError(
      `Address is for another network: Base58 version ${hexByte(version!)} belongs to ${others.map((n) => n.name).join('/')}, not ${net.name} (expected ${hexByte(net.pubKeyHash)} or ${hexByte(net.scriptHash)})`,
    );
  }
  throw new AddressError('Invalid or unsupported Base58-encoded address.');
}

function decodeSegwitAddress(address: string, net: Network): DecodedAddress {
  const dec = decodeBech32(address);
  if (typeof dec === 'string') throw new AddressError(dec);
  if (dec.words.length === 0) throw new AddressError('Empty Bech32 data section');
  if (dec.hrp !== net.bech32) {
    throw new AddressError(`Invalid or unsupported prefix for Segwit (Bech32) address (expected ${net.bech32}, got ${dec.hrp}).`);
  }
  const version = dec.words[0]!;
  if (version === 0 && dec.variant !== 'bech32') throw new AddressError('Version 0 witness address must use Bech32 checksum');
  if (version !== 0 && dec.variant !== 'bech32m') throw new AddressError('Version 1+ witness address must use Bech32m checksum');
  const program = wordsToBytes(dec.words.subarray(1));
  if (program === null) throw new AddressError('Invalid padding in Bech32 data section');
  if (version === 0) {
    if (program.length === 20) return { type: 'witness_v0_keyhash', script: witnessScript(0, program) };
    if (program.length === 32) return { type: 'witness_v0_scripthash', script: witnessScript(0, program) };
    throw new AddressError(`Invalid Bech32 v0 address program size (${sizeWord(program.length)}), per BIP141`);
  }
  if (version > 16) throw new AddressError('Invalid Bech32 address witness version');
  if (program.length < 2 || program.length > 40)
    throw new AddressError(`Invalid Bech32 address program size (${sizeWord(program.length)})`);
  const script = witnessScript(version, program);
  return { type: classifyScript(script) as DecodedAddress['type'], script };
}

/**
 * Decodes an address for `network` as Core's DecodeDestination does.
 * @throws AddressError with a message fit for users (Core's wording where Core has one).
 */
export function decodeAddress(address: string, network: NetworkName | Network): DecodedAddress {
  const net = getNetwork(network);
  if (typeof address !== 'string' || address.length === 0) throw new AddressError('Invalid address: empty');
  // Core treats a string that starts with the network's HRP as bech32; we also route the other
  // networks' HRPs there so that a wrong-network segwit address says so.
  const lower = address.toLowerCase();
  const sep = lower.lastIndexOf('1');
  const isBech32 = lower.startsWith(net.bech32) || (sep > 0 && KNOWN_HRPS.has(lower.slice(0, sep)));
  return isBech32 ? decodeSegwitAddress(address, net) : decodeBase58Address(address, net);
}

/** The output script an address pays to on `network`. @throws AddressError */
export function addressToScript(address: string, network: NetworkName | Network): Uint8Array {
  return decodeAddress(address, network).script;
}
