/**
 * Output scripts as Esplora shows them: `scriptpubkey_asm` / `scriptsig_asm` in rust-bitcoin's
 * assembly (what Blockstream's electrs prints: `OP_DUP OP_HASH160 OP_PUSHBYTES_20 <hex> …`, pushes
 * named by their opcode and followed by their data in hex, OP_1..OP_16 as OP_PUSHNUM_n, a push
 * running past the end cut with `<push past end>`), `scriptpubkey_type` in electrs's names, the
 * address (none for P2PK and bare multisig: electrs names only what an address encodes), and the
 * redeem and witness scripts an input reveals.
 * @module
 */
import { classifyScript } from '../../src/bitcoin/script.js';
import { outputAddresses } from '../../src/bitcoin/address.js';
import type { NetworkName } from '../../src/config.js';

/** rust-bitcoin's names of the opcodes above the pushes (0x4f–0xff). */
const NAMES: Record<number, string> = {
  0x4f: 'OP_PUSHNUM_NEG1',
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
  0xb1: 'OP_CLTV',
  0xb2: 'OP_CSV',
  0xba: 'OP_CHECKSIGADD',
  0xff: 'OP_INVALIDOPCODE',
};

function opName(op: number): string {
  if (op === 0) return 'OP_0';
  if (op <= 0x4b) return `OP_PUSHBYTES_${op}`;
  if (op === 0x4c) return 'OP_PUSHDATA1';
  if (op === 0x4d) return 'OP_PUSHDATA2';
  if (op === 0x4e) return 'OP_PUSHDATA4';
  if (op >= 0x51 && op <= 0x60) return `OP_PUSHNUM_${op - 0x50}`;
  if (op >= 0xb3 && op <= 0xb9) return `OP_NOP${op - 0xb3 + 4}`;
  if (op >= 0xbb && op <= 0xfe) return `OP_RETURN_${op}`;
  return NAMES[op]!;
}

/** A script in rust-bitcoin's assembly, as electrs's `get_script_asm` prints it. */
export function scriptAsm(s: Uint8Array): string {
  const parts: string[] = [];
  let i = 0;
  while (i < s.length) {
    const op = s[i++]!;
    let len = op <= 0x4b ? op : 0;
    const width = op === 0x4c ? 1 : op === 0x4d ? 2 : op === 0x4e ? 4 : 0;
    if (width > 0) {
      if (i + width > s.length) {
        parts.push('<unexpected end>');
        break;
      }
      len = 0;
      for (let k = width - 1; k >= 0; k--) len = len * 256 + s[i + k]!;
      i += width;
    }
    parts.push(opName(op));
    if (len > 0) {
      if (i + len > s.length) {
        parts.push('<push past end>');
        break;
      }
      parts.push(Buffer.from(s.subarray(i, i + len)).toString('hex'));
      i += len;
    }
  }
  return parts.join(' ');
}

/** Opcodes rust-bitcoin classifies as ending the script (OP_RETURN and its kin) or illegal: a script starting with one can never be spent. */
function unspendableStart(op: number): boolean {
  return (
    [
      0x50, 0x62, 0x65, 0x66, 0x6a, 0x7e, 0x7f, 0x80, 0x81, 0x83, 0x84, 0x85, 0x86, 0x89, 0x8a, 0x8d, 0x8e, 0x95, 0x96, 0x97, 0x98, 0x99,
    ].includes(op) || op >= 0xba
  );
}

/** electrs's `scriptpubkey_type`. */
export function scriptType(s: Uint8Array): string {
  if (s.length === 0) return 'empty';
  if (s[0] === 0x6a) return 'op_return';
  switch (classifyScript(s)) {
    case 'pubkey':
      return 'p2pk';
    case 'pubkeyhash':
      return 'p2pkh';
    case 'scripthash':
      return 'p2sh';
    case 'witness_v0_keyhash':
      return 'v0_p2wpkh';
    case 'witness_v0_scripthash':
      return 'v0_p2wsh';
    case 'witness_v1_taproot':
      return 'v1_p2tr';
    default:
      return unspendableStart(s[0]!) ? 'provably_unspendable' : 'unknown';
  }
}

/** The address an output script encodes (none for P2PK, bare multisig, OP_RETURN, nonstandard). */
export function scriptAddress(s: Uint8Array, network: NetworkName): string | undefined {
  const type = classifyScript(s);
  return type === 'pubkey' || type === 'multisig' ? undefined : outputAddresses(s, network)[0];
}

/** The last push of a scriptSig (electrs's redeem script of a P2SH spend), or undefined when it ends with another opcode. */
function lastPush(s: Uint8Array): Uint8Array | undefined {
  let last: Uint8Array | undefined;
  let i = 0;
  while (i < s.length) {
    const op = s[i++]!;
    if (op > 0x4e) {
      last = undefined;
      continue;
    }
    let len = op;
    const width = op === 0x4c ? 1 : op === 0x4d ? 2 : op === 0x4e ? 4 : 0;
    if (width > 0) {
      if (i + width > s.length) return undefined;
      len = 0;
      for (let k = width - 1; k >= 0; k--) len = len * 256 + s[i + k]!;
      i += width;
    }
    if (i + len > s.length) return undefined;
    last = s.subarray(i, i + len);
    i += len;
  }
  return last;
}

/** The redeem script (P2SH) and witness script (P2WSH, also nested in P2SH) an input reveals, as electrs's `get_innerscripts`. */
export function innerScripts(
  prevoutScript: Uint8Array,
  scriptSig: Uint8Array,
  witness: readonly Uint8Array[],
): { redeem?: Uint8Array; witness?: Uint8Array } {
  const redeem = classifyScript(prevoutScript) === 'scripthash' ? lastPush(scriptSig) : undefined;
  const wsh =
    classifyScript(prevoutScript) === 'witness_v0_scripthash' ||
    (redeem !== undefined && classifyScript(redeem) === 'witness_v0_scripthash');
  const witnessScript = wsh && witness.length > 0 ? witness[witness.length - 1] : undefined;
  return { ...(redeem ? { redeem } : {}), ...(witnessScript ? { witness: witnessScript } : {}) };
}
