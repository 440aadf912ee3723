/**
 * Output scripts as Esplora shows them: `scriptpubkey_asm` / `scriptsig_asm` in rust-bitcoin's
 * assembly (what Blockstream's electrs prints: `OP_DUP OP_HASH160 OP_PUSHBYTES_20 <hex> …`, pushes
 * named by their opcode and followed by their data in hex, OP_1..OP_16 as OP_PUSHNUM_n, a push
 * running past the end cut with `<push past end>`), `scriptpubkey_type` in electrs's names, the
 * address (none for P2PK and bare multisig: electrs names only what an address encodes), and the
 * redeem and witness scripts an input reveals.
 * @module
 */
import { classifyScript, OPCODE_NAMES } from '../../src/bitcoin/script.js';
import { outputAddresses } from '../../src/bitcoin/address.js';
import type { NetworkName } from '../../src/config.js';

/** rust-bitcoin's names of the opcodes above the pushes: Core's, but for three (NOP4–10 and the OP_RETURN_ range are named in opName). */
const NAMES: Readonly<Record<number, string>> = { ...OPCODE_NAMES, 0x4f: 'OP_PUSHNUM_NEG1', 0xb1: 'OP_CLTV', 0xb2: 'OP_CSV' };

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
