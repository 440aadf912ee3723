/**
 * Script text and opcode walking as Core's interpreter-side helpers do: GetScriptOp iteration,
 * push-only checks, ScriptToAsmStr (with sighash decoding in scriptSigs), strict DER checks and
 * sigop counting. Output classification (Solver) and addresses come from src/bitcoin.
 * @module
 */
import { bytesToHex } from '../src/bitcoin/hash.js';
import { OP, parseScript } from '../src/bitcoin/script.js';

const OP_NAMES: Record<number, string> = {
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

/** Core's GetOpName. */
function opName(op: number): string {
  if (op === 0) return '0';
  if (op >= OP.OP_1 && op <= OP.OP_16) return String(op - 0x50);
  if (op >= 1 && op <= OP.OP_PUSHDATA4)
    return op === 0x4c ? 'OP_PUSHDATA1' : op === 0x4d ? 'OP_PUSHDATA2' : op === 0x4e ? 'OP_PUSHDATA4' : 'OP_UNKNOWN';
  return OP_NAMES[op] ?? 'OP_UNKNOWN';
}

export { parseScript, type ScriptOp } from '../src/bitcoin/script.js';

/** True when the script consists of pushes only (OP_RESERVED..OP_16 count as pushes, as in Core). */
export function isPushOnly(script: Uint8Array): boolean {
  const { ops, error } = parseScript(script);
  if (error) return false;
  return ops.every((o) => o.op <= OP.OP_16);
}

/** CScriptNum decoding of a small push (≤ 4 bytes, not minimality-checked). */
function scriptNum(data: Uint8Array): number {
  if (data.length === 0) return 0;
  let v = 0;
  for (let i = 0; i < data.length; i++) v += data[i]! * 2 ** (8 * i);
  const last = data[data.length - 1]!;
  if (last & 0x80) return -(v - 0x80 * 2 ** (8 * (data.length - 1)));
  return v;
}

/** Witness program (BIP141): version and program when `script` is one. */
export function witnessProgram(script: Uint8Array): { version: number; program: Uint8Array } | null {
  const n = script.length;
  if (n < 4 || n > 42) return null;
  const v = script[0]!;
  if (v !== 0 && (v < OP.OP_1 || v > OP.OP_16)) return null;
  if (script[1]! + 2 !== n) return null;
  return { version: v === 0 ? 0 : v - 0x50, program: script.subarray(2) };
}

const SIGHASH_NAMES: Record<number, string> = {
  0x01: 'ALL',
  0x81: 'ALL|ANYONECANPAY',
  0x02: 'NONE',
  0x82: 'NONE|ANYONECANPAY',
  0x03: 'SINGLE',
  0x83: 'SINGLE|ANYONECANPAY',
};

/** Core's IsValidSignatureEncoding (strict DER plus one hashtype byte). */
export function isValidSignatureEncoding(sig: Uint8Array): boolean {
  const n = sig.length;
  if (n < 9 || n > 73) return false;
  if (sig[0] !== 0x30) return false;
  if (sig[1] !== n - 3) return false;
  const lenR = sig[3]!;
  if (5 + lenR >= n) return false;
  const lenS = sig[5 + lenR]!;
  if (lenR + lenS + 7 !== n) return false;
  if (sig[2] !== 0x02) return false;
  if (lenR === 0) return false;
  if (sig[4]! & 0x80) return false;
  if (lenR > 1 && sig[4] === 0x00 && !(sig[5]! & 0x80)) return false;
  if (sig[lenR + 4] !== 0x02) return false;
  if (lenS === 0) return false;
  if (sig[lenR + 6]! & 0x80) return false;
  if (lenS > 1 && sig[lenR + 6] === 0x00 && !(sig[lenR + 7]! & 0x80)) return false;
  return true;
}

/** Core's ScriptToAsmStr; `sighashDecode` is true for scriptSigs. */
export function scriptToAsm(script: Uint8Array, sighashDecode = false): string {
  const { ops, error } = parseScript(script);
  const parts: string[] = [];
  const unspendable = script.length > 0 && script[0] === OP.OP_RETURN;
  for (const o of ops) {
    if (o.data !== undefined) {
      if (o.data.length <= 4) {
        parts.push(String(scriptNum(o.data)));
      } else if (sighashDecode && !unspendable && isValidSignatureEncoding(o.data) && SIGHASH_NAMES[o.data[o.data.length - 1]!]) {
        parts.push(`${bytesToHex(o.data.subarray(0, o.data.length - 1))}[${SIGHASH_NAMES[o.data[o.data.length - 1]!]}]`);
      } else {
        parts.push(bytesToHex(o.data));
      }
    } else {
      parts.push(opName(o.op));
    }
  }
  if (error) parts.push('[error]');
  return parts.join(' ');
}

/** Number of signature operations, legacy counting (Core's GetSigOpCount(fAccurate)). */
export function sigOpCount(script: Uint8Array, accurate: boolean): number {
  const { ops } = parseScript(script);
  let n = 0;
  let last = 0xff;
  for (const o of ops) {
    if (o.op === 0xac || o.op === 0xad) n += 1;
    else if (o.op === 0xae || o.op === 0xaf) n += accurate && last >= OP.OP_1 && last <= OP.OP_16 ? last - 0x50 : 20;
    last = o.op;
  }
  return n;
}
