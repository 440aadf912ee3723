/**
 * Script text and opcode walking as Core's interpreter-side helpers do: GetScriptOp iteration,
 * push-only checks, ScriptToAsmStr (with sighash decoding in scriptSigs), strict DER checks and
 * sigop counting. Output classification (Solver) and addresses come from src/bitcoin.
 * @module
 */
import { bytesToHex } from '../src/bitcoin/hash.js';
import { OP, OPCODE_NAMES as OP_NAMES, parseScript } from '../src/bitcoin/script.js';

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
