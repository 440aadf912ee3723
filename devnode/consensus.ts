/**
 * Regtest consensus parameters and the block-level rules the devnode needs: the genesis block
 * (byte-identical to Core's), compact targets, proof of work, chain work, difficulty, subsidy,
 * median time past, the BIP34 coinbase height push, nonce grinding and the coinbase Core's miner
 * builds (version 2, locktime height-1, sequence 0xfffffffe, witness commitment).
 * @module
 */
import { bitsToDifficulty } from '../src/bitcoin/block.js';
import { hexToBytes, sha256d } from '../src/bitcoin/hash.js';
import { computeWitnessCommitment } from '../src/bitcoin/merkle.js';
import { encodeHeader, encodeTx } from '../src/bitcoin/encode.js';
import { writeU32le } from '../src/bitcoin/wire.js';

/** Core's regtest genesis block (CreateGenesisBlock(1296688602, 2, 0x207fffff, 1, 50 * COIN)). */
export const GENESIS_HEX =
  '0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000';
export const GENESIS_HASH = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';

export const REGTEST = {
  bits: 0x207fffff,
  halvingInterval: 150,
  coinbaseMaturity: 100,
  maxBlockWeight: 4_000_000,
  maxBlockSigopsCost: 80_000,
  maxMoney: 21_000_000n * 100_000_000n,
  /** Blocks Core's miner creates (BIP9 top bits, no signalling). */
  blockVersion: 0x20000000,
  /** Core's nMaxTipAge: a tip older than this keeps the node in initial block download. */
  maxTipAgeSeconds: 24 * 60 * 60,
  /** MAX_FUTURE_BLOCK_TIME. */
  maxFutureBlockTime: 2 * 60 * 60,
} as const;

/** The 256-bit target of compact `bits` (nBits), as a bigint. */
function bitsToTarget(bits: number): bigint {
  const exp = bits >>> 24;
  const mant = BigInt(bits & 0x007fffff);
  if (exp <= 3) return mant >> BigInt(8 * (3 - exp));
  return mant << BigInt(8 * (exp - 3));
}

/** The target as Core prints it (`target` field): 64 hex digits, most significant first. */
export function targetHex(bits: number): string {
  return bitsToTarget(bits).toString(16).padStart(64, '0');
}

/** Work of one block with these bits: 2^256 / (target + 1) (GetBlockProof). */
export function blockWork(bits: number): bigint {
  const target = bitsToTarget(bits);
  if (target === 0n) return 0n;
  return (1n << 256n) / (target + 1n);
}

/** `chainwork` text: 64 hex digits. */
export function chainworkHex(work: bigint): string {
  return work.toString(16).padStart(64, '0');
}

/** Core's GetDifficulty. */
export const difficulty = bitsToDifficulty;

/** True when the header hash (internal byte order) meets the target of `bits`. */
export function checkProofOfWork(hash: Uint8Array, bits: number): boolean {
  let v = 0n;
  for (let i = 31; i >= 0; i--) v = (v << 8n) | BigInt(hash[i]!);
  return v <= bitsToTarget(bits);
}

/** Block subsidy at `height` (50 BTC halving every 150 blocks on regtest). */
export function blockSubsidy(height: number): bigint {
  const halvings = Math.floor(height / REGTEST.halvingInterval);
  if (halvings >= 64) return 0n;
  return (50n * 100_000_000n) >> BigInt(halvings);
}

/** Median of the last 11 block times ending at `times` (GetMedianTimePast). */
export function medianTime(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A header's fields; hashes in internal byte order. */
export type HeaderFields = Parameters<typeof encodeHeader>[0];

/**
 * Grinds the nonce (and, past 2^32 tries, the time) until the header meets its target, as
 * `generatetoaddress` does. Regtest's target accepts about every second hash.
 */
export function grindHeader(h: HeaderFields): { header: Uint8Array; hash: Uint8Array; nonce: number } {
  const header = encodeHeader(h);
  for (let nonce = h.nonce; nonce <= 0xffffffff; nonce++) {
    writeU32le(header, 76, nonce);
    const hash = sha256d(header);
    if (checkProofOfWork(hash, h.bits)) return { header, hash, nonce };
  }
  throw new RangeError('no nonce meets the target');
}

/** `CScript() << n`: the minimal push of a script number (OP_0, OP_1..OP_16 or a data push). */
export function scriptNumPush(n: number): Uint8Array {
  if (n === 0) return new Uint8Array([0x00]);
  if (n >= 1 && n <= 16) return new Uint8Array([0x50 + n]);
  const bytes: number[] = [];
  let v = Math.abs(n);
  while (v > 0) {
    bytes.push(v & 0xff);
    v = Math.floor(v / 256);
  }
  if (bytes[bytes.length - 1]! & 0x80) bytes.push(n < 0 ? 0x80 : 0x00);
  else if (n < 0) bytes[bytes.length - 1]! |= 0x80;
  return new Uint8Array([bytes.length, ...bytes]);
}

/** The witness commitment output script for a witness merkle root (BIP141, zero reserved value). */
export function witnessCommitmentScript(witnessRoot: Uint8Array): Uint8Array {
  const commitment = computeWitnessCommitment(witnessRoot, new Uint8Array(32));
  const s = new Uint8Array(38);
  s.set([0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed], 0);
  s.set(commitment, 6);
  return s;
}

/**
 * The coinbase Core's CreateNewBlock makes: scriptSig `<height> OP_0`, sequence 0xfffffffe,
 * locktime height-1, one payout output and the witness commitment, the 32-byte zero witness.
 * `witnessRoot` is the witness merkle root of the block (coinbase wtxid as zero).
 */
export function buildCoinbase(height: number, payoutScript: Uint8Array, value: bigint, witnessRoot: Uint8Array): Uint8Array {
  const scriptSig = new Uint8Array([...scriptNumPush(height), 0x00]);
  return encodeTx({
    version: 2,
    inputs: [{ prevTxid: new Uint8Array(32), vout: 0xffffffff, scriptSig, sequence: 0xfffffffe, witness: [new Uint8Array(32)] }],
    outputs: [
      { value, script: payoutScript },
      { value: 0n, script: witnessCommitmentScript(witnessRoot) },
    ],
    locktime: Math.max(0, height - 1),
  });
}

/** Raw genesis bytes. */
export function genesisBytes(): Uint8Array {
  return hexToBytes(GENESIS_HEX);
}
