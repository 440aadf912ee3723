/**
 * Addresses at the API boundary: a path parameter → the canonical output script it stands for
 * (checked for encoding, checksum and network before any database access), and an output
 * script → the addresses the API shows for it (DESIGN.md "Addresses": P2PK under its key's P2PKH
 * address, bare multisig under each key's P2PKH address) plus the OP_RETURN payload.
 * Base58Check (P2PKH, P2SH), bech32 (segwit v0) and bech32m (v1+, BIP350) for every network.
 * @module
 */
import { base58check, bech32, bech32m } from '@scure/base';
import { hash160, sha256 } from '../bitcoin/hash.js';
import type { NetworkName } from '../config.js';

type NetParams = { hrp: string; pkh: number; sh: number };

const PARAMS: Record<NetworkName, NetParams> = {
  main: { hrp: 'bc', pkh: 0x00, sh: 0x05 },
  test: { hrp: 'tb', pkh: 0x6f, sh: 0xc4 },
  testnet4: { hrp: 'tb', pkh: 0x6f, sh: 0xc4 },
  signet: { hrp: 'tb', pkh: 0x6f, sh: 0xc4 },
  regtest: { hrp: 'bcrt', pkh: 0x6f, sh: 0xc4 },
};

const b58 = base58check(sha256);

const OP_0 = 0x00;
const OP_1 = 0x51;
const OP_16 = 0x60;
const OP_RETURN = 0x6a;
const OP_DUP = 0x76;
const OP_EQUAL = 0x87;
const OP_EQUALVERIFY = 0x88;
const OP_HASH160 = 0xa9;
const OP_CHECKSIG = 0xac;
const OP_CHECKMULTISIG = 0xae;

export type AddressProblem = 'invalid' | 'wrong_network';

function p2pkhScript(hash: Uint8Array): Uint8Array {
  return Uint8Array.from([OP_DUP, OP_HASH160, 20, ...hash, OP_EQUALVERIFY, OP_CHECKSIG]);
}

function p2shScript(hash: Uint8Array): Uint8Array {
  return Uint8Array.from([OP_HASH160, 20, ...hash, OP_EQUAL]);
}

function witnessScript(version: number, program: Uint8Array): Uint8Array {
  return Uint8Array.from([version === 0 ? OP_0 : OP_1 + version - 1, program.length, ...program]);
}

function decodeSegwit(address: string): { hrp: string; script: Uint8Array } | undefined {
  const lower = address.toLowerCase();
  if (address !== lower && address !== address.toUpperCase()) return undefined;
  for (const codec of [bech32, bech32m]) {
    let d;
    try {
      d = codec.decode(lower as `${string}1${string}`, 90);
    } catch {
      continue;
    }
    const [version, ...rest] = d.words;
    if (version === undefined || version > 16) return undefined;
    // BIP350: v0 uses bech32, v1+ bech32m.
    if ((version === 0) !== (codec === bech32)) return undefined;
    let program: Uint8Array;
    try {
      program = bech32.fromWords(rest);
    } catch {
      return undefined;
    }
    if (program.length < 2 || program.length > 40) return undefined;
    if (version === 0 && program.length !== 20 && program.length !== 32) return undefined;
    return { hrp: d.prefix, script: witnessScript(version, program) };
  }
  return undefined;
}

/**
 * The output script of `address` on `network`, or the reason it is refused: `invalid` (not an
 * address: encoding, checksum, length) or `wrong_network` (a valid address of another network).
 */
export function addressToScript(address: string, network: NetworkName): { script: Uint8Array } | { problem: AddressProblem } {
  const want = PARAMS[network];
  if (address.length < 14 || address.length > 90) return { problem: 'invalid' };
  const sep = address.lastIndexOf('1');
  if (sep > 0 && /^[a-z]+$/i.test(address.slice(0, sep))) {
    const seg = decodeSegwit(address);
    if (seg) {
      if (seg.hrp === want.hrp) return { script: seg.script };
      return Object.values(PARAMS).some((p) => p.hrp === seg.hrp) ? { problem: 'wrong_network' } : { problem: 'invalid' };
    }
  }
  let payload: Uint8Array;
  try {
    payload = b58.decode(address);
  } catch {
    return { problem: 'invalid' };
  }
  if (payload.length !== 21) return { problem: 'invalid' };
  const version = payload[0]!;
  const hash = payload.subarray(1);
  if (version === want.pkh) return { script: p2pkhScript(hash) };
  if (version === want.sh) return { script: p2shScript(hash) };
  return Object.values(PARAMS).some((p) => p.pkh === version || p.sh === version) ? { problem: 'wrong_network' } : { problem: 'invalid' };
}

function encodeP2pkh(hash: Uint8Array, p: NetParams): string {
  return b58.encode(Uint8Array.from([p.pkh, ...hash]));
}

function isPubkey(k: Uint8Array): boolean {
  return (k.length === 33 && (k[0] === 2 || k[0] === 3)) || (k.length === 65 && k[0] === 4);
}

/** Data pushes of a script, or undefined when it holds a non-push opcode or is truncated. */
function pushes(script: Uint8Array, from: number): Uint8Array[] | undefined {
  const out: Uint8Array[] = [];
  let i = from;
  while (i < script.length) {
    const op = script[i++]!;
    let len: number;
    if (op === OP_0) len = 0;
    else if (op < 0x4c) len = op;
    else if (op === 0x4c) len = script[i++] ?? -1;
    else if (op === 0x4d) {
      len = i + 2 <= script.length ? script[i]! | (script[i + 1]! << 8) : -1;
      i += 2;
    } else if (op === 0x4e) {
      len = i + 4 <= script.length ? (script[i]! | (script[i + 1]! << 8) | (script[i + 2]! << 16)) + script[i + 3]! * 2 ** 24 : -1;
      i += 4;
    } else if (op === 0x4f || (op >= OP_1 && op <= OP_16)) {
      out.push(Uint8Array.of(op === 0x4f ? 0x81 : op - OP_1 + 1));
      continue;
    } else return undefined;
    if (len < 0 || i + len > script.length) return undefined;
    out.push(script.subarray(i, i + len));
    i += len;
  }
  return out;
}

export type OutputView = { addresses: string[]; data?: Uint8Array };

/**
 * What the API shows for an output script: its addresses (empty for OP_RETURN and
 * non-standard scripts) and, for OP_RETURN, the payload (the script's pushes, concatenated).
 */
export function describeOutput(script: Uint8Array, network: NetworkName): OutputView {
  const p = PARAMS[network];
  const n = script.length;
  if (n === 25 && script[0] === OP_DUP && script[1] === OP_HASH160 && script[2] === 20 && script[23] === OP_EQUALVERIFY && script[24] === OP_CHECKSIG) {
    return { addresses: [encodeP2pkh(script.subarray(3, 23), p)] };
  }
  if (n === 23 && script[0] === OP_HASH160 && script[1] === 20 && script[22] === OP_EQUAL) {
    return { addresses: [b58.encode(Uint8Array.from([p.sh, ...script.subarray(2, 22)]))] };
  }
  if (n >= 4 && n <= 42 && (script[0] === OP_0 || (script[0]! >= OP_1 && script[0]! <= OP_16)) && script[1] === n - 2) {
    const version = script[0] === OP_0 ? 0 : script[0]! - OP_1 + 1;
    const program = script.subarray(2);
    if (version !== 0 || program.length === 20 || program.length === 32) {
      const words = [version, ...bech32.toWords(program)];
      return { addresses: [version === 0 ? bech32.encode(p.hrp, words, 90) : bech32m.encode(p.hrp, words, 90)] };
    }
  }
  if (n > 0 && script[0] === OP_RETURN) {
    const data = pushes(script, 1);
    return { addresses: [], data: data ? Buffer.concat(data) : script.subarray(1) };
  }
  if ((n === 35 || n === 67) && script[0] === n - 2 && script[n - 1] === OP_CHECKSIG && isPubkey(script.subarray(1, n - 1))) {
    return { addresses: [encodeP2pkh(hash160(script.subarray(1, n - 1)), p)] };
  }
  if (n >= 37 && script[n - 1] === OP_CHECKMULTISIG && script[0]! >= OP_1 && script[0]! <= OP_16 && script[n - 2]! >= OP_1 && script[n - 2]! <= OP_16) {
    const keys = pushes(script.subarray(1, n - 2), 0);
    const m = script[0]! - OP_1 + 1;
    const total = script[n - 2]! - OP_1 + 1;
    if (keys && keys.length === total && m <= total && keys.every(isPubkey)) {
      return { addresses: [...new Set(keys.map((k) => encodeP2pkh(hash160(k), p)))] };
    }
  }
  return { addresses: [] };
}
