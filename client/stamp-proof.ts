/**
 * Checks a stamp offline, trusting nothing the server says but a block header: the document's
 * SHA-256 → the OP_RETURN output of the stamp's transaction → that transaction's txid → the
 * Merkle root its branch leads to → the root in the block header → the header's hash (and its
 * proof of work). What the caller must still know from a source of its own is that this header
 * belongs to the chain it trusts: pass it (`header`) or its hash (`blockHash`), e.g. from its own
 * node's `getblockheader`, an Electrum server's headers it checked, or a header chain it keeps.
 * @module
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { BlockwireError } from './errors.js';
import type { StampProof, StampStatus } from './types.js';

/** Why a stamp failed verification (`StampProofError.reason`). */
export type StampProofFailure =
  | 'unconfirmed' // no proof yet: the stamp's transaction is in no block
  | 'malformed' // a field is not what the format says (hex, lengths, a transaction that does not parse)
  | 'hash' // the transaction's output `vout` is not an OP_RETURN carrying exactly the document hash
  | 'txid' // the transaction's bytes do not hash to the txid the stamp names
  | 'merkle' // the branch does not lead to the Merkle root of the header
  | 'header' // the header does not hash to the block hash given, or is not the trusted one
  | 'work'; // the header's hash is above the target its own bits set

/** A stamp whose proof does not hold. */
export class StampProofError extends BlockwireError {
  readonly reason: StampProofFailure;
  constructor(reason: StampProofFailure, message: string) {
    super('ERR_STAMP_PROOF', message);
    this.name = 'StampProofError';
    this.reason = reason;
  }
}

/** What a verified stamp proves: this hash is in output `vout` of `txid`, which block `blockHash` (header `header`) holds. */
export type VerifiedStamp = {
  hash: string;
  txid: string;
  vout: number;
  blockHash: string;
  /** The height the server gave: the header does not carry it (check it against your chain). */
  blockHeight: number;
  merkleRoot: string;
  /** The header's time (seconds since 1970): the block was made after the document existed. */
  time: number;
  header: string;
};

export type VerifyStampOptions = {
  /** The block header the caller trusts (80 bytes, hex or bytes): the proof's header must be it. */
  header?: string | Uint8Array;
  /** The block hash the caller trusts (display hex): the proof's header must hash to it. */
  blockHash?: string;
};

const HEX64 = /^[0-9a-fA-F]{64}$/;
const sha256d = (b: Uint8Array) => sha256(sha256(b));
/** Display hex (the byte order users see) of an internal-order hash, and back. */
const display = (h: Uint8Array) => hex.encode(Uint8Array.from(h).reverse());
const internal = (s: string) => hex.decode(s.toLowerCase()).reverse();

const fail = (reason: StampProofFailure, message: string): never => {
  throw new StampProofError(reason, message);
};

function bytesOf(what: string, s: unknown): Uint8Array {
  if (typeof s !== 'string' || s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return fail('malformed', `${what} is not hex`);
  return hex.decode(s.toLowerCase());
}

/** The 256-bit target a header's compact `bits` encode (negative or overflowing encodings: none). */
function targetOf(bits: number): bigint | null {
  const exponent = bits >>> 24;
  const mantissa = bits & 0x007fffff;
  if (bits & 0x00800000 || mantissa === 0) return null;
  const target = exponent <= 3 ? BigInt(mantissa >>> (8 * (3 - exponent))) : BigInt(mantissa) << BigInt(8 * (exponent - 3));
  return target >> 256n === 0n ? target : null;
}

/** Root of a Merkle branch (internal byte order) from `leaf` at `pos`, as Bitcoin Core pairs nodes. */
function rootFromBranch(leaf: Uint8Array, branch: readonly Uint8Array[], pos: number): Uint8Array {
  let h = leaf;
  for (let i = 0; i < branch.length; i++) {
    const pair = new Uint8Array(64);
    if ((pos >>> i) & 1) {
      pair.set(branch[i]!, 0);
      pair.set(h, 32);
    } else {
      pair.set(h, 0);
      pair.set(branch[i]!, 32);
    }
    h = sha256d(pair);
  }
  return h;
}

/**
 * Verifies `stamp` (the answer of `getStamp`) for the document whose SHA-256 is `documentHash`
 * (64 hex), offline. Returns what it proves; throws StampProofError (its `reason`) when any link
 * fails, `unconfirmed` when the stamp has no proof yet. Without `header` or `blockHash` it checks
 * the chain of hashes and the header's own proof of work only: compare the returned `blockHash`
 * with your chain before relying on it.
 */
export function verifyStampProof(stamp: StampStatus, documentHash: string, opts: VerifyStampOptions = {}): VerifiedStamp {
  if (!HEX64.test(documentHash)) fail('malformed', 'the document hash must be 64 hex characters (its SHA-256)');
  const proof: StampProof | null | undefined = stamp.proof;
  if (!proof) return fail('unconfirmed', 'the stamp is not confirmed yet: no inclusion proof');

  // 1. document hash → the OP_RETURN output of the transaction
  let tx: btc.Transaction;
  const raw = bytesOf('tx_hex', stamp.tx_hex);
  try {
    tx = btc.Transaction.fromRaw(raw, { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true });
  } catch (err) {
    return fail('malformed', `tx_hex is not a transaction: ${(err as Error).message}`);
  }
  if (!Number.isInteger(stamp.vout) || stamp.vout < 0 || stamp.vout >= tx.outputsLength)
    fail('hash', `the transaction has no output ${stamp.vout}`);
  const script = tx.getOutput(stamp.vout).script;
  let ops: readonly unknown[] = [];
  try {
    if (script) ops = btc.Script.decode(script);
  } catch {
    ops = [];
  }
  const data = ops.length === 2 && ops[0] === 'RETURN' && ops[1] instanceof Uint8Array ? ops[1] : undefined;
  if (!data || hex.encode(data) !== documentHash.toLowerCase())
    fail('hash', `output ${stamp.vout} is not an OP_RETURN carrying the document hash`);

  // 2. transaction → txid (double SHA-256 of its bytes without witness). A 64-byte "transaction"
  // could be an inner node of a Merkle tree posing as a leaf; a parsed stamp is longer.
  const stripped = tx.toBytes(true, false);
  if (stripped.length === 64) fail('malformed', 'a 64-byte transaction cannot be told from a Merkle node');
  const txid = sha256d(stripped);
  if (typeof stamp.tx !== 'string' || !HEX64.test(stamp.tx) || display(txid) !== stamp.tx.toLowerCase())
    fail('txid', "the transaction does not hash to the stamp's txid");

  // 3. txid → Merkle root through the branch
  if (!Array.isArray(proof.merkle) || !proof.merkle.every((h) => typeof h === 'string' && HEX64.test(h)))
    fail('malformed', 'merkle must be a list of 64-hex hashes');
  if (!Number.isInteger(proof.pos) || proof.pos < 0 || proof.merkle.length > 32 || proof.pos >= 2 ** proof.merkle.length)
    fail('malformed', 'pos is outside the tree the branch describes');
  const root = rootFromBranch(txid, proof.merkle.map(internal), proof.pos);

  // 4. root → header → block hash (and the header's proof of work)
  const header = bytesOf('header', proof.header);
  if (header.length !== 80) fail('malformed', 'the header must be 80 bytes');
  if (hex.encode(header.subarray(36, 68)) !== hex.encode(root)) fail('merkle', "the branch does not lead to the header's Merkle root");
  const blockHash = sha256d(header);
  if (typeof proof.block_hash !== 'string' || display(blockHash) !== proof.block_hash.toLowerCase())
    fail('header', "the header does not hash to the proof's block hash");
  const view = new DataView(header.buffer, header.byteOffset, 80);
  const target = targetOf(view.getUint32(72, true));
  if (target === null || BigInt(`0x${display(blockHash)}`) > target)
    fail('work', "the header's hash does not meet the target its bits set");
  if (opts.header !== undefined) {
    const trusted = typeof opts.header === 'string' ? bytesOf('the trusted header', opts.header) : opts.header;
    if (hex.encode(trusted) !== hex.encode(header)) fail('header', "the proof's header is not the trusted header");
  }
  if (opts.blockHash !== undefined && display(blockHash) !== opts.blockHash.toLowerCase())
    fail('header', "the proof's header is not the trusted block");

  return {
    hash: documentHash.toLowerCase(),
    txid: display(txid),
    vout: stamp.vout,
    blockHash: display(blockHash),
    blockHeight: proof.block_height,
    merkleRoot: display(root),
    time: view.getUint32(68, true),
    header: hex.encode(header),
  };
}
