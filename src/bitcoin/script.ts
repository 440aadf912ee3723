/**
 * Output script classification, following Core's Solver (script/solver.cpp) rule for rule and in
 * the same order, with Core's type names: P2SH, witness programs (v0 key/script hash, v1 taproot,
 * P2A anchor, future versions), OP_RETURN data (push-only), P2PK, P2PKH, bare multisig (m-of-n,
 * n ≤ 20), else nonstandard. Also the script templates used to build outputs.
 * @module
 */

/** Core's output type names (`scriptPubKey.type` in its RPC results). */
export const OUTPUT_TYPES = [
  'pubkey',
  'pubkeyhash',
  'scripthash',
  'multisig',
  'nulldata',
  'witness_v0_keyhash',
  'witness_v0_scripthash',
  'witness_v1_taproot',
  'anchor',
  'witness_unknown',
  'nonstandard',
] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** A classified output script; byte fields are views into the script (nulldata with several pushes excepted). */
export type OutputScript =
  | { readonly type: 'pubkey'; readonly pubkey: Uint8Array }
  | { readonly type: 'pubkeyhash' | 'scripthash'; readonly hash: Uint8Array }
  | { readonly type: 'multisig'; readonly required: number; readonly pubkeys: readonly Uint8Array[] }
  | { readonly type: 'nulldata'; readonly data: Uint8Array }
  | {
      readonly type: 'witness_v0_keyhash' | 'witness_v0_scripthash' | 'witness_v1_taproot' | 'anchor' | 'witness_unknown';
      readonly version: number;
      readonly program: Uint8Array;
    }
  | { readonly type: 'nonstandard' };

/** Opcodes used here. */
export const OP = Object.freeze({
  OP_0: 0x00,
  OP_PUSHDATA1: 0x4c,
  OP_PUSHDATA2: 0x4d,
  OP_PUSHDATA4: 0x4e,
  OP_1NEGATE: 0x4f,
  OP_1: 0x51,
  OP_16: 0x60,
  OP_RETURN: 0x6a,
  OP_DUP: 0x76,
  OP_EQUAL: 0x87,
  OP_EQUALVERIFY: 0x88,
  OP_HASH160: 0xa9,
  OP_CHECKSIG: 0xac,
  OP_CHECKMULTISIG: 0xae,
});

/** Core's MAX_PUBKEYS_PER_MULTISIG. */
const MAX_MULTISIG_KEYS = 20;

/** One script operation as read by `readOp`: opcode, and pushed data as [start, end) in the script. */
interface Op {
  code: number;
  start: number;
  end: number;
}

/**
 * Reads the operation at `p` into `op` (Core's GetScriptOp); returns the next position, or -1
 * when a push runs past the end of the script.
 */
function readOp(s: Uint8Array, p: number, op: Op): number {
  const n = s.length;
  const code = s[p]!;
  p += 1;
  let len = 0;
  if (code <= OP.OP_PUSHDATA4) {
    if (code < OP.OP_PUSHDATA1) len = code;
    else if (code === OP.OP_PUSHDATA1) {
      if (p + 1 > n) return -1;
      len = s[p]!;
      p += 1;
    } else if (code === OP.OP_PUSHDATA2) {
      if (p + 2 > n) return -1;
      len = s[p]! | (s[p + 1]! << 8);
      p += 2;
    } else {
      if (p + 4 > n) return -1;
      len = (s[p]! | (s[p + 1]! << 8) | (s[p + 2]! << 16) | (s[p + 3]! << 24)) >>> 0;
      p += 4;
    }
    if (p + len > n) return -1;
  }
  op.code = code;
  op.start = p;
  op.end = p + len;
  return p + len;
}

/** One parsed operation: `data` is set for pushes (opcodes 0..OP_PUSHDATA4). */
export type ScriptOp = { op: number; data?: Uint8Array };

/** Core's CScript::GetOp loop over a whole script; `error` is true when it ends inside a push. */
export function parseScript(script: Uint8Array): { ops: ScriptOp[]; error: boolean } {
  const ops: ScriptOp[] = [];
  const op: Op = { code: 0, start: 0, end: 0 };
  for (let p = 0; p < script.length;) {
    p = readOp(script, p, op);
    if (p < 0) return { ops, error: true };
    ops.push(op.code <= OP.OP_PUSHDATA4 ? { op: op.code, data: script.subarray(op.start, op.end) } : { op: op.code });
  }
  return { ops, error: false };
}

/** CPubKey::ValidSize: 33 bytes with header 02/03, or 65 bytes with header 04/06/07. */
function validPubkeySize(s: Uint8Array, start: number, end: number): boolean {
  const len = end - start;
  if (len === 33) return s[start] === 2 || s[start] === 3;
  if (len === 65) return s[start] === 4 || s[start] === 6 || s[start] === 7;
  return false;
}

/** CScript::IsWitnessProgram: OP_0..OP_16 followed by one direct push of 2–40 bytes. */
function witnessVersion(s: Uint8Array): number {
  const n = s.length;
  if (n < 4 || n > 42) return -1;
  const v = s[0]!;
  if (v !== OP.OP_0 && (v < OP.OP_1 || v > OP.OP_16)) return -1;
  if (s[1]! + 2 !== n) return -1;
  return v === OP.OP_0 ? 0 : v - 0x50;
}

function isP2pkh(s: Uint8Array): boolean {
  return (
    s.length === 25 &&
    s[0] === OP.OP_DUP &&
    s[1] === OP.OP_HASH160 &&
    s[2] === 20 &&
    s[23] === OP.OP_EQUALVERIFY &&
    s[24] === OP.OP_CHECKSIG
  );
}

function isP2sh(s: Uint8Array): boolean {
  return s.length === 23 && s[0] === OP.OP_HASH160 && s[1] === 20 && s[22] === OP.OP_EQUAL;
}

/** MatchPayToPubkey: <33- or 65-byte key> OP_CHECKSIG. */
function isP2pk(s: Uint8Array): boolean {
  const n = s.length;
  return (n === 67 || n === 35) && s[0] === n - 2 && s[n - 1] === OP.OP_CHECKSIG && validPubkeySize(s, 1, n - 1);
}

/** True when every operation from `p` is a push (opcode ≤ OP_16) and none is truncated. */
function isPushOnly(s: Uint8Array, p: number, op: Op): boolean {
  while (p < s.length) {
    p = readOp(s, p, op);
    if (p < 0 || op.code > OP.OP_16) return false;
  }
  return true;
}

/** Core's GetScriptNumber for multisig counts: OP_1..OP_16 or a minimal push of a minimal number. */
function scriptNumber(s: Uint8Array, op: Op, min: number, max: number): number {
  const code = op.code;
  let v: number;
  if (code >= OP.OP_1 && code <= OP.OP_16) v = code - 0x50;
  else if (code > OP.OP_0 && code <= OP.OP_PUSHDATA4) {
    const len = op.end - op.start;
    // CheckMinimalPush: a 1-byte value 1..16 or 0x81 must use OP_N; short data a direct push.
    if (code !== len || len > 4) return -1;
    const last = s[op.end - 1]!;
    if (len === 1 && (last <= 16 || last === 0x81)) return -1;
    // Minimal CScriptNum: no needless trailing zero byte.
    if ((last & 0x7f) === 0 && (len === 1 || (s[op.end - 2]! & 0x80) === 0)) return -1;
    v = 0;
    for (let i = op.end - 1; i >= op.start; i--) v = v * 256 + (i === op.end - 1 ? s[i]! & 0x7f : s[i]!);
    if (last & 0x80) v = -v;
  } else return -1;
  return v < min || v > max ? -1 : v;
}

/** MatchMultisig; returns [required, key ranges...] or null. */
function matchMultisig(s: Uint8Array, op: Op): { required: number; keys: number[] } | null {
  const n = s.length;
  if (n < 1 || s[n - 1] !== OP.OP_CHECKMULTISIG) return null;
  let p = readOp(s, 0, op);
  if (p < 0) return null;
  const required = scriptNumber(s, op, 1, MAX_MULTISIG_KEYS);
  if (required < 0) return null;
  const keys: number[] = [];
  for (;;) {
    if (p >= n) return null;
    p = readOp(s, p, op);
    if (p < 0) return null;
    if (!validPubkeySize(s, op.start, op.end) || op.code > OP.OP_PUSHDATA4) break;
    keys.push(op.start, op.end);
  }
  const count = scriptNumber(s, op, required, MAX_MULTISIG_KEYS);
  if (count < 0 || count !== keys.length / 2) return null;
  return p + 1 === n ? { required, keys } : null;
}

/** Classifies an output script (no allocation except for multisig candidates). */
export function classifyScript(script: Uint8Array): OutputType {
  const s = script;
  if (isP2sh(s)) return 'scripthash';
  const v = witnessVersion(s);
  if (v >= 0) {
    const len = s.length - 2;
    if (v === 0) return len === 20 ? 'witness_v0_keyhash' : len === 32 ? 'witness_v0_scripthash' : 'nonstandard';
    if (v === 1 && len === 32) return 'witness_v1_taproot';
    if (v === 1 && len === 2 && s[2] === 0x4e && s[3] === 0x73) return 'anchor';
    return 'witness_unknown';
  }
  if (s.length >= 1 && s[0] === OP.OP_RETURN) return isPushOnly(s, 1, { code: 0, start: 0, end: 0 }) ? 'nulldata' : 'nonstandard';
  if (isP2pk(s)) return 'pubkey';
  if (isP2pkh(s)) return 'pubkeyhash';
  if (s.length >= 1 && s[s.length - 1] === OP.OP_CHECKMULTISIG && matchMultisig(s, { code: 0, start: 0, end: 0 })) return 'multisig';
  return 'nonstandard';
}

/**
 * The payload of an OP_RETURN script: the data of every push after OP_RETURN, concatenated
 * (OP_1..OP_16 push the byte 1..16, OP_1NEGATE 0x81, OP_0 nothing). Null when the script is not
 * a push-only OP_RETURN (nulldata) script.
 */
export function nullData(script: Uint8Array): Uint8Array | null {
  const s = script;
  if (s.length < 1 || s[0] !== OP.OP_RETURN) return null;
  const op: Op = { code: 0, start: 0, end: 0 };
  const parts: Uint8Array[] = [];
  let total = 0;
  let p = 1;
  while (p < s.length) {
    p = readOp(s, p, op);
    if (p < 0 || op.code > OP.OP_16) return null;
    let part: Uint8Array;
    if (op.code <= OP.OP_PUSHDATA4) part = s.subarray(op.start, op.end);
    else if (op.code === OP.OP_1NEGATE) part = new Uint8Array([0x81]);
    else if (op.code >= OP.OP_1) part = new Uint8Array([op.code - 0x50]);
    else continue; // OP_RESERVED: counted as push-only by Core, pushes nothing here
    parts.push(part);
    total += part.length;
  }
  if (parts.length === 1) return parts[0]!;
  const data = new Uint8Array(total);
  let o = 0;
  for (const part of parts) {
    data.set(part, o);
    o += part.length;
  }
  return data;
}

/** Classifies an output script and extracts its hash, key(s), witness program or data. */
export function decodeOutputScript(script: Uint8Array): OutputScript {
  const s = script;
  const type = classifyScript(s);
  switch (type) {
    case 'scripthash':
      return { type, hash: s.subarray(2, 22) };
    case 'pubkeyhash':
      return { type, hash: s.subarray(3, 23) };
    case 'pubkey':
      return { type, pubkey: s.subarray(1, s.length - 1) };
    case 'witness_v0_keyhash':
    case 'witness_v0_scripthash':
    case 'witness_v1_taproot':
    case 'anchor':
    case 'witness_unknown':
      return { type, version: s[0] === 0 ? 0 : s[0]! - 0x50, program: s.subarray(2) };
    case 'nulldata':
      return { type, data: nullData(s)! };
    case 'multisig': {
      const m = matchMultisig(s, { code: 0, start: 0, end: 0 })!;
      const pubkeys: Uint8Array[] = [];
      for (let i = 0; i < m.keys.length; i += 2) pubkeys.push(s.subarray(m.keys[i]!, m.keys[i + 1]!));
      return { type, required: m.required, pubkeys };
    }
    default:
      return { type: 'nonstandard' };
  }
}

function checkLength(b: Uint8Array, lengths: readonly number[], what: string): void {
  if (!(b instanceof Uint8Array) || !lengths.includes(b.length)) {
    throw new TypeError(`${what} must be ${lengths.join(' or ')} bytes`);
  }
}

/** Encodes a push of `data` with the smallest push opcode (as CScript << data). */
export function pushData(data: Uint8Array): Uint8Array {
  const n = data.length;
  const head =
    n < OP.OP_PUSHDATA1
      ? [n]
      : n <= 0xff
        ? [OP.OP_PUSHDATA1, n]
        : n <= 0xffff
          ? [OP.OP_PUSHDATA2, n & 0xff, n >>> 8]
          : [OP.OP_PUSHDATA4, n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
  const out = new Uint8Array(head.length + n);
  out.set(head, 0);
  out.set(data, head.length);
  return out;
}

/** OP_DUP OP_HASH160 <20-byte key hash> OP_EQUALVERIFY OP_CHECKSIG. */
export function p2pkhScript(keyHash: Uint8Array): Uint8Array {
  checkLength(keyHash, [20], 'key hash');
  return new Uint8Array([OP.OP_DUP, OP.OP_HASH160, 20, ...keyHash, OP.OP_EQUALVERIFY, OP.OP_CHECKSIG]);
}

/** OP_HASH160 <20-byte script hash> OP_EQUAL. */
export function p2shScript(scriptHash: Uint8Array): Uint8Array {
  checkLength(scriptHash, [20], 'script hash');
  return new Uint8Array([OP.OP_HASH160, 20, ...scriptHash, OP.OP_EQUAL]);
}

/** <pubkey> OP_CHECKSIG. */
export function p2pkScript(pubkey: Uint8Array): Uint8Array {
  checkLength(pubkey, [33, 65], 'public key');
  return new Uint8Array([pubkey.length, ...pubkey, OP.OP_CHECKSIG]);
}

/** A witness program output: OP_version <program> (version 0–16, program 2–40 bytes). */
export function witnessScript(version: number, program: Uint8Array): Uint8Array {
  if (!Number.isInteger(version) || version < 0 || version > 16) throw new RangeError(`witness version must be 0..16, got ${version}`);
  if (!(program instanceof Uint8Array) || program.length < 2 || program.length > 40)
    throw new TypeError('witness program must be 2 to 40 bytes');
  if (version === 0 && program.length !== 20 && program.length !== 32) throw new TypeError('witness v0 program must be 20 or 32 bytes');
  return new Uint8Array([version === 0 ? OP.OP_0 : version + 0x50, program.length, ...program]);
}

/** OP_m <pubkey>... OP_n OP_CHECKMULTISIG (1 ≤ m ≤ n ≤ 16). */
export function multisigScript(required: number, pubkeys: readonly Uint8Array[]): Uint8Array {
  const n = pubkeys.length;
  if (!Number.isInteger(required) || required < 1 || required > n || n > 16) {
    throw new RangeError(`multisig needs 1 ≤ m ≤ n ≤ 16, got ${required}-of-${n}`);
  }
  pubkeys.forEach((k) => checkLength(k, [33, 65], 'public key'));
  const parts = [new Uint8Array([required + 0x50]), ...pubkeys.map(pushData), new Uint8Array([n + 0x50, OP.OP_CHECKMULTISIG])];
  return concatBytes(parts);
}

/** OP_RETURN followed by one push of `data` (several pushes when given several parts). */
export function nullDataScript(data: Uint8Array | readonly Uint8Array[]): Uint8Array {
  const parts = data instanceof Uint8Array ? [data] : data;
  return concatBytes([new Uint8Array([OP.OP_RETURN]), ...parts.map(pushData)]);
}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Bitcoin Core's names of the opcodes above the pushes (0x4f–0xff; its GetOpName): the devnode's
 * script asm, and the base of the Esplora dialect's rust-bitcoin names. Absent: undefined opcodes.
 */
export const OPCODE_NAMES: Readonly<Record<number, string>> = {
  0x4f: '-1',
  0x50: 'OP_RESERVED',
  0x61: 'OP_NOP',
  0x62: 'OP_VER',
  0x63: 'OP_IF',
  0x64: 'OP_NOTIF',
  0x65: 'OP_VERIF',
  0x66: 'OP_VERNOTIF',
  0x67: 'OP_ELSE',
  0x68: 'OP_ENDIF',
  0x69: 'OP_VERIFY',
  0x6a: 'OP_RETURN',
  0x6b: 'OP_TOALTSTACK',
  0x6c: 'OP_FROMALTSTACK',
  0x6d: 'OP_2DROP',
  0x6e: 'OP_2DUP',
  0x6f: 'OP_3DUP',
  0x70: 'OP_2OVER',
  0x71: 'OP_2ROT',
  0x72: 'OP_2SWAP',
  0x73: 'OP_IFDUP',
  0x74: 'OP_DEPTH',
  0x75: 'OP_DROP',
  0x76: 'OP_DUP',
  0x77: 'OP_NIP',
  0x78: 'OP_OVER',
  0x79: 'OP_PICK',
  0x7a: 'OP_ROLL',
  0x7b: 'OP_ROT',
  0x7c: 'OP_SWAP',
  0x7d: 'OP_TUCK',
  0x7e: 'OP_CAT',
  0x7f: 'OP_SUBSTR',
  0x80: 'OP_LEFT',
  0x81: 'OP_RIGHT',
  0x82: 'OP_SIZE',
  0x83: 'OP_INVERT',
  0x84: 'OP_AND',
  0x85: 'OP_OR',
  0x86: 'OP_XOR',
  0x87: 'OP_EQUAL',
  0x88: 'OP_EQUALVERIFY',
  0x89: 'OP_RESERVED1',
  0x8a: 'OP_RESERVED2',
  0x8b: 'OP_1ADD',
  0x8c: 'OP_1SUB',
  0x8d: 'OP_2MUL',
  0x8e: 'OP_2DIV',
  0x8f: 'OP_NEGATE',
  0x90: 'OP_ABS',
  0x91: 'OP_NOT',
  0x92: 'OP_0NOTEQUAL',
  0x93: 'OP_ADD',
  0x94: 'OP_SUB',
  0x95: 'OP_MUL',
  0x96: 'OP_DIV',
  0x97: 'OP_MOD',
  0x98: 'OP_LSHIFT',
  0x99: 'OP_RSHIFT',
  0x9a: 'OP_BOOLAND',
  0x9b: 'OP_BOOLOR',
  0x9c: 'OP_NUMEQUAL',
  0x9d: 'OP_NUMEQUALVERIFY',
  0x9e: 'OP_NUMNOTEQUAL',
  0x9f: 'OP_LESSTHAN',
  0xa0: 'OP_GREATERTHAN',
  0xa1: 'OP_LESSTHANOREQUAL',
  0xa2: 'OP_GREATERTHANOREQUAL',
  0xa3: 'OP_MIN',
  0xa4: 'OP_MAX',
  0xa5: 'OP_WITHIN',
  0xa6: 'OP_RIPEMD160',
  0xa7: 'OP_SHA1',
  0xa8: 'OP_SHA256',
  0xa9: 'OP_HASH160',
  0xaa: 'OP_HASH256',
  0xab: 'OP_CODESEPARATOR',
  0xac: 'OP_CHECKSIG',
  0xad: 'OP_CHECKSIGVERIFY',
  0xae: 'OP_CHECKMULTISIG',
  0xaf: 'OP_CHECKMULTISIGVERIFY',
  0xb0: 'OP_NOP1',
  0xb1: 'OP_CHECKLOCKTIMEVERIFY',
  0xb2: 'OP_CHECKSEQUENCEVERIFY',
  0xb3: 'OP_NOP4',
  0xb4: 'OP_NOP5',
  0xb5: 'OP_NOP6',
  0xb6: 'OP_NOP7',
  0xb7: 'OP_NOP8',
  0xb8: 'OP_NOP9',
  0xb9: 'OP_NOP10',
  0xba: 'OP_CHECKSIGADD',
  0xff: 'OP_INVALIDOPCODE',
};
