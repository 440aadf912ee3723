/**
 * Regtest addresses as Core's ExtractDestination/EncodeDestination and DecodeDestination see
 * them: P2PKH, P2SH (Base58Check 0x6f/0xc4), segwit v0 (bech32) and v1+ (bech32m, `bcrt`).
 * P2PK and bare multisig have no address in Core's JSON.
 * @module
 */
import { concatBytes } from '@noble/hashes/utils.js';
import { base58check, bech32, bech32m } from '@scure/base';
import { sha256 } from '../bitcoin/hash.js';
import { solve, witnessProgram } from './script.js';

const b58 = base58check(sha256);
const HRP = 'bcrt';
const P2PKH_VERSION = 0x6f;
const P2SH_VERSION = 0xc4;

function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  return concatBytes(...parts.map((p) => (p instanceof Uint8Array ? p : new Uint8Array(p))));
}

function encodeSegwit(version: number, program: Uint8Array): string {
  const words = [version, ...bech32.toWords(program)];
  return version === 0 ? bech32.encode(HRP, words, 1023) : bech32m.encode(HRP, words, 1023);
}

/** The regtest address of an output script, or null when Core shows none. */
export function scriptToAddress(script: Uint8Array): string | null {
  const { type, solutions } = solve(script);
  switch (type) {
    case 'pubkeyhash':
      return b58.encode(concat([P2PKH_VERSION], solutions[0]!));
    case 'scripthash':
      return b58.encode(concat([P2SH_VERSION], solutions[0]!));
    case 'witness_v0_keyhash':
    case 'witness_v0_scripthash':
    case 'witness_v1_taproot':
    case 'witness_unknown':
    case 'anchor': {
      const wp = witnessProgram(script)!;
      return encodeSegwit(wp.version, wp.program);
    }
    default:
      return null;
  }
}

/** The output script of a regtest address, or null when it is not one (Core's IsValidDestination). */
export function addressToScript(address: string): Uint8Array | null {
  if (/^bcrt1/i.test(address)) {
    for (const codec of [bech32, bech32m] as const) {
      let decoded: { prefix: string; words: number[] };
      try {
        decoded = codec.decode(address as `${string}1${string}`, 1023);
      } catch {
        continue;
      }
      if (decoded.prefix.toLowerCase() !== HRP) return null;
      const [version, ...rest] = decoded.words;
      if (version === undefined || version > 16) return null;
      if ((version === 0) !== (codec === bech32)) return null;
      let program: Uint8Array;
      try {
        program = bech32.fromWords(rest);
      } catch {
        return null;
      }
      if (program.length < 2 || program.length > 40) return null;
      if (version === 0 && program.length !== 20 && program.length !== 32) return null;
      return concat([version === 0 ? 0 : 0x50 + version, program.length], program);
    }
    return null;
  }
  let raw: Uint8Array;
  try {
    raw = b58.decode(address);
  } catch {
    return null;
  }
  if (raw.length !== 21) return null;
  const hash = raw.subarray(1);
  if (raw[0] === P2PKH_VERSION) return concat([0x76, 0xa9, 20], hash, [0x88, 0xac]);
  if (raw[0] === P2SH_VERSION) return concat([0xa9, 20], hash, [0x87]);
  return null;
}
