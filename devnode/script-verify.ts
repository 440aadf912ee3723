/**
 * Input script checking for the standard spend types: P2PK, P2PKH, bare multisig, P2SH (wrapping
 * multisig, P2PK, P2PKH, P2WPKH or P2WSH), P2WPKH, P2WSH (multisig, P2PK, P2PKH) and P2TR key path.
 * Each template is evaluated as Core's interpreter would under the standard flags, with Core's
 * ScriptErrorString messages. Signatures are checked with @noble/curves over the sighash of
 * @scure/btc-signer (legacy, BIP143, BIP341). Other scripts (P2TR script path, arbitrary redeem or
 * witness scripts) are reported as `unchecked`: the devnode accepts them without evaluation.
 * @module
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { Transaction } from '@scure/btc-signer';
import { equalBytes, hash160, sha256 } from '../src/bitcoin/hash.js';
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { decodeOutputScript } from '../src/bitcoin/script.js';
import { isValidSignatureEncoding, parseScript, witnessProgram } from './script.js';

/** The output an input spends. */
export type Prevout = { value: bigint; script: Uint8Array };

/** Core's ScriptErrorString texts used here. */
const SCRIPT_ERR = {
  EVAL_FALSE: 'Script evaluated without error but finished with a false/empty top stack element',
  EQUALVERIFY: 'Script failed an OP_EQUALVERIFY operation',
  INVALID_STACK_OPERATION: 'Operation not valid with the current stack size',
  CLEANSTACK: 'Stack size must be exactly one after execution',
  SIG_PUSHONLY: 'Only push operators allowed in signatures',
  SIG_DER: 'Non-canonical DER signature',
  SIG_HASHTYPE: 'Signature hash type missing or not understood',
  SIG_HIGH_S: 'Non-canonical signature: S value is unnecessarily high',
  PUBKEYTYPE: 'Public key is neither compressed or uncompressed',
  NULLFAIL: 'Signature must be zero for failed CHECK(MULTI)SIG operation',
  NULLDUMMY: 'Dummy CHECKMULTISIG argument must be zero',
  WITNESS_PROGRAM_WRONG_LENGTH: 'Witness program has incorrect length',
  WITNESS_PROGRAM_WITNESS_EMPTY: 'Witness program was passed an empty witness',
  WITNESS_PROGRAM_MISMATCH: 'Witness program hash mismatch',
  WITNESS_MALLEATED: 'Witness requires empty scriptSig',
  WITNESS_MALLEATED_P2SH: 'Witness requires only-redeemscript scriptSig',
  WITNESS_UNEXPECTED: 'Witness provided for non-witness script',
  WITNESS_PUBKEYTYPE: 'Using non-compressed keys in segwit',
  SCHNORR_SIG_SIZE: 'Invalid Schnorr signature size',
  SCHNORR_SIG_HASHTYPE: 'Invalid Schnorr signature hash type',
  SCHNORR_SIG: 'Invalid Schnorr signature',
} as const;

/** Outcome for one input: checked and valid, not checkable by the templates, or failed. */
export type InputVerdict = { ok: true; checked: boolean } | { ok: false; error: string };

class ScriptFailure extends Error {}

function fail(error: string): never {
  throw new ScriptFailure(error);
}

type SigVersion = 'base' | 'witness_v0';

type Context = {
  tx: DecodedTx;
  index: number;
  prevouts: readonly Prevout[];
  sighashTx: () => Transaction;
};

const HALF_ORDER = secp256k1.Point.CURVE().n >> 1n;

function pushes(script: Uint8Array): Uint8Array[] {
  const { ops, error } = parseScript(script);
  if (error) fail('Opcode missing or not understood');
  const stack: Uint8Array[] = [];
  for (const o of ops) {
    if (o.data !== undefined) stack.push(o.data);
    else if (o.op === 0x4f) stack.push(new Uint8Array([0x81]));
    else if (o.op >= 0x51 && o.op <= 0x60) stack.push(new Uint8Array([o.op - 0x50]));
    else fail(SCRIPT_ERR.SIG_PUSHONLY);
  }
  return stack;
}

function isCompressedOrUncompressed(key: Uint8Array): boolean {
  if (key.length === 33) return key[0] === 2 || key[0] === 3;
  if (key.length === 65) return key[0] === 4;
  return false;
}

function derS(sig: Uint8Array): bigint {
  const lenR = sig[3]!;
  const lenS = sig[5 + lenR]!;
  let s = 0n;
  for (let i = 0; i < lenS; i++) s = (s << 8n) | BigInt(sig[6 + lenR + i]!);
  return s;
}

/** Core's CheckSignatureEncoding + CheckPubKeyEncoding under the standard flags, then ECDSA. */
function checkEcdsa(ctx: Context, sig: Uint8Array, key: Uint8Array, scriptCode: Uint8Array, version: SigVersion): boolean {
  if (sig.length === 0) return false;
  if (!isValidSignatureEncoding(sig)) fail(SCRIPT_ERR.SIG_DER);
  if (derS(sig.subarray(0, sig.length - 1)) > HALF_ORDER) fail(SCRIPT_ERR.SIG_HIGH_S);
  const hashType = sig[sig.length - 1]!;
  const base = hashType & ~0x80;
  if (base < 1 || base > 3) fail(SCRIPT_ERR.SIG_HASHTYPE);
  if (!isCompressedOrUncompressed(key)) fail(SCRIPT_ERR.PUBKEYTYPE);
  if (version === 'witness_v0' && key.length !== 33) fail(SCRIPT_ERR.WITNESS_PUBKEYTYPE);
  const tx = ctx.sighashTx();
  const msg =
    version === 'base'
      ? (tx as unknown as { preimageLegacy(i: number, s: Uint8Array, h: number): Uint8Array }).preimageLegacy(
          ctx.index,
          scriptCode,
          hashType,
        )
      : tx.preimageWitnessV0(ctx.index, scriptCode, hashType, ctx.prevouts[ctx.index]!.value);
  let ok = false;
  try {
    ok = secp256k1.verify(sig.subarray(0, sig.length - 1), msg, key, { prehash: false, lowS: false, format: 'der' });
  } catch {
    ok = false;
  }
  if (!ok) fail(SCRIPT_ERR.NULLFAIL);
  return true;
}

/** `<key> OP_CHECKSIG`: the stack holds one signature. */
function runPubkey(ctx: Context, stack: Uint8Array[], key: Uint8Array, scriptCode: Uint8Array, version: SigVersion): void {
  if (stack.length < 1) fail(SCRIPT_ERR.INVALID_STACK_OPERATION);
  if (stack.length > 1) fail(SCRIPT_ERR.CLEANSTACK);
  if (!checkEcdsa(ctx, stack[0]!, key, scriptCode, version)) fail(SCRIPT_ERR.EVAL_FALSE);
}

/** `OP_DUP OP_HASH160 <h> OP_EQUALVERIFY OP_CHECKSIG`: the stack holds signature and key. */
function runPubkeyHash(ctx: Context, stack: Uint8Array[], hash: Uint8Array, scriptCode: Uint8Array, version: SigVersion): void {
  if (stack.length < 2) fail(SCRIPT_ERR.INVALID_STACK_OPERATION);
  if (stack.length > 2) fail(SCRIPT_ERR.CLEANSTACK);
  if (!equalBytes(hash160(stack[1]!), hash)) fail(SCRIPT_ERR.EQUALVERIFY);
  if (!checkEcdsa(ctx, stack[0]!, stack[1]!, scriptCode, version)) fail(SCRIPT_ERR.EVAL_FALSE);
}

/** `m <keys> n OP_CHECKMULTISIG`: dummy, then signatures in key order (Core's algorithm). */
function runMultisig(ctx: Context, stack: Uint8Array[], m: number, keys: Uint8Array[], scriptCode: Uint8Array, version: SigVersion): void {
  if (stack.length < m + 1) fail(SCRIPT_ERR.INVALID_STACK_OPERATION);
  if (stack.length > m + 1) fail(SCRIPT_ERR.CLEANSTACK);
  if (stack[0]!.length !== 0) fail(SCRIPT_ERR.NULLDUMMY);
  const sigs = stack.slice(1);
  let isig = 0;
  let ikey = 0;
  let ok = true;
  while (ok && isig < sigs.length) {
    const sig = sigs[isig]!;
    const key = keys[ikey]!;
    let good = false;
    try {
      good = checkEcdsa(ctx, sig, key, scriptCode, version);
    } catch (err) {
      // A wrong key for this signature is not yet a failure: try the next key (NULLFAIL at the end).
      if (!(err instanceof ScriptFailure) || err.message !== SCRIPT_ERR.NULLFAIL) throw err;
    }
    if (good) isig++;
    ikey++;
    if (sigs.length - isig > keys.length - ikey) ok = false;
  }
  if (!ok) {
    if (sigs.some((s) => s.length > 0)) fail(SCRIPT_ERR.NULLFAIL);
    fail(SCRIPT_ERR.EVAL_FALSE);
  }
}

/** Runs a known template script against `stack`; false when the template is not one we check. */
function runTemplate(ctx: Context, script: Uint8Array, stack: Uint8Array[], version: SigVersion): boolean {
  const d = decodeOutputScript(script);
  switch (d.type) {
    case 'pubkey':
      runPubkey(ctx, stack, d.pubkey, script, version);
      return true;
    case 'pubkeyhash':
      runPubkeyHash(ctx, stack, d.hash, script, version);
      return true;
    case 'multisig':
      runMultisig(ctx, stack, d.required, [...d.pubkeys], script, version);
      return true;
    default:
      return false;
  }
}

function p2pkhScript(hash: Uint8Array): Uint8Array {
  const s = new Uint8Array(25);
  s.set([0x76, 0xa9, 20], 0);
  s.set(hash, 3);
  s.set([0x88, 0xac], 23);
  return s;
}

function verifyTaprootKeyPath(ctx: Context, witness: readonly Uint8Array[], program: Uint8Array): boolean {
  let items = witness;
  let annex: Uint8Array | undefined;
  if (items.length >= 2 && items[items.length - 1]![0] === 0x50) {
    annex = items[items.length - 1];
    items = items.slice(0, -1);
  }
  if (items.length !== 1) return false; // script path: not evaluated here
  const sig = items[0]!;
  if (sig.length !== 64 && sig.length !== 65) fail(SCRIPT_ERR.SCHNORR_SIG_SIZE);
  let hashType = 0;
  if (sig.length === 65) {
    hashType = sig[64]!;
    if (hashType === 0) fail(SCRIPT_ERR.SCHNORR_SIG_HASHTYPE);
  }
  if (!(hashType <= 3 || (hashType >= 0x81 && hashType <= 0x83))) fail(SCRIPT_ERR.SCHNORR_SIG_HASHTYPE);
  if ((hashType & 3) === 3 && ctx.index >= ctx.tx.outputs.length) fail(SCRIPT_ERR.SCHNORR_SIG_HASHTYPE);
  const msg = ctx.sighashTx().preimageWitnessV1(
    ctx.index,
    ctx.prevouts.map((p) => p.script),
    hashType,
    ctx.prevouts.map((p) => p.value),
    undefined,
    undefined,
    undefined,
    annex,
  );
  let ok = false;
  try {
    ok = schnorr.verify(sig.subarray(0, 64), msg, program);
  } catch {
    ok = false;
  }
  if (!ok) fail(SCRIPT_ERR.SCHNORR_SIG);
  return true;
}

/** Core's VerifyWitnessProgram for the versions and shapes we check; returns whether it checked. */
function verifyWitness(ctx: Context, version: number, program: Uint8Array, witness: readonly Uint8Array[]): boolean {
  if (version === 0) {
    if (program.length === 20) {
      if (witness.length !== 2) fail(SCRIPT_ERR.WITNESS_PROGRAM_MISMATCH);
      runPubkeyHash(ctx, [...witness], program, p2pkhScript(program), 'witness_v0');
      return true;
    }
    if (program.length === 32) {
      if (witness.length === 0) fail(SCRIPT_ERR.WITNESS_PROGRAM_WITNESS_EMPTY);
      const ws = witness[witness.length - 1]!;
      if (!equalBytes(sha256(ws), program)) fail(SCRIPT_ERR.WITNESS_PROGRAM_MISMATCH);
      return runTemplate(ctx, ws, witness.slice(0, -1), 'witness_v0');
    }
    fail(SCRIPT_ERR.WITNESS_PROGRAM_WRONG_LENGTH);
  }
  if (version === 1 && program.length === 32) {
    if (witness.length === 0) fail(SCRIPT_ERR.WITNESS_PROGRAM_WITNESS_EMPTY);
    return verifyTaprootKeyPath(ctx, witness, program);
  }
  return false; // anchors and future versions: anyone can spend under consensus
}

function verifyInputInner(ctx: Context): boolean {
  const input = ctx.tx.inputs[ctx.index]!;
  const spk = ctx.prevouts[ctx.index]!.script;
  const witness = input.witness;
  const wp = witnessProgram(spk);
  if (wp) {
    if (input.scriptSig.length !== 0) fail(SCRIPT_ERR.WITNESS_MALLEATED);
    return verifyWitness(ctx, wp.version, wp.program, witness);
  }
  const stack = pushes(input.scriptSig);
  const d = decodeOutputScript(spk);
  if (d.type === 'scripthash') {
    if (stack.length === 0) fail(SCRIPT_ERR.INVALID_STACK_OPERATION);
    const redeem = stack[stack.length - 1]!;
    if (!equalBytes(hash160(redeem), d.hash)) fail(SCRIPT_ERR.EVAL_FALSE);
    const inner = witnessProgram(redeem);
    if (inner) {
      if (stack.length !== 1) fail(SCRIPT_ERR.WITNESS_MALLEATED_P2SH);
      return verifyWitness(ctx, inner.version, inner.program, witness);
    }
    if (witness.length > 0) fail(SCRIPT_ERR.WITNESS_UNEXPECTED);
    return runTemplate(ctx, redeem, stack.slice(0, -1), 'base');
  }
  if (witness.length > 0) fail(SCRIPT_ERR.WITNESS_UNEXPECTED);
  return runTemplate(ctx, spk, stack, 'base');
}

/**
 * Checks every input of `tx` against the outputs it spends (`prevouts[i]` for input i).
 * Returns the first failure as `{ index, error }`, or null; `unchecked` lists inputs whose
 * scripts are outside the templates.
 */
export function verifyTxScripts(tx: DecodedTx, prevouts: readonly Prevout[]): { index: number; error: string } | null {
  return verifyTxScriptsDetailed(tx, prevouts).failure;
}

/** As verifyTxScripts, also listing the inputs that were not evaluated. */
export function verifyTxScriptsDetailed(
  tx: DecodedTx,
  prevouts: readonly Prevout[],
): { failure: { index: number; error: string } | null; unchecked: number[] } {
  let sighashTx: Transaction | undefined;
  const getTx = () => {
    sighashTx ??= Transaction.fromRaw(tx.bytes, {
      allowUnknownOutputs: true,
      allowUnknownInputs: true,
      allowUnknownVersion: true,
      disableScriptCheck: true,
    });
    return sighashTx;
  };
  const unchecked: number[] = [];
  for (let i = 0; i < tx.inputs.length; i++) {
    const ctx: Context = { tx, index: i, prevouts, sighashTx: getTx };
    try {
      if (!verifyInputInner(ctx)) unchecked.push(i);
    } catch (err) {
      if (err instanceof ScriptFailure) return { failure: { index: i, error: err.message }, unchecked };
      throw err;
    }
  }
  return { failure: null, unchecked };
}
