/**
 * A seeded generator of a synthetic, mainnet-shaped regtest chain written as Bitcoin Core block
 * files (blocks/blk*.dat with xor.dat, 128 MiB each) plus corpus.json (devnode/corpus-manifest.ts).
 * Each block has valid structure: BIP34 height, witness commitment, Merkle root, proof of work
 * at regtest difficulty, weight ≤ 4 MWU. Transactions follow today's mix (P2WPKH, P2TR, P2SH-P2WPKH,
 * P2PKH, P2WSH 2-of-3, OP_RETURN; payments, consolidations, batch payouts) and spend earlier
 * outputs with witness and scriptSig sizes of real signatures (the bytes are random: nobody
 * verifies them). A few hot addresses appear in ~1 % of transactions each; some reorgs leave
 * stale blocks in the files. Not checked: coinbase maturity (block 1's coinbase is split into
 * spendable outputs at once, so even a tiny corpus is full of transactions).
 * Run: `node --import tsx bench/corpus/generate.ts --out DIR [--blocks N] [--txs-per-block N] [--seed S]`.
 * @module
 */
import { createHash, hash as nodeHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { p2pkhAddress, segwitAddress } from '../../src/bitcoin/address.js';
import { xorBlockData } from '../../src/bitcoin/blk.js';
import { encodeTx } from '../../src/bitcoin/encode.js';
import { bytesToHex, hashToHex } from '../../src/bitcoin/hash.js';
import { merkleRoot } from '../../src/bitcoin/merkle.js';
import { NETWORKS } from '../../src/bitcoin/network.js';
import { writeCompactSize } from '../../src/bitcoin/wire.js';
import {
  blockSubsidy,
  genesisBytes,
  GENESIS_HASH,
  grindHeader,
  REGTEST,
  scriptNumPush,
  witnessCommitmentScript,
} from '../../devnode/consensus.js';
import { MANIFEST_FILE, type CorpusBlock, type CorpusEvent, type CorpusManifest } from '../../devnode/corpus-manifest.js';
import { Rng } from './rng.js';

/** Bumped whenever the output of the generator changes for the same parameters. */
export const GENERATOR_VERSION = 1;

export interface CorpusParams {
  /** Main-chain blocks after genesis. */
  blocks: number;
  /** Mean transactions per block (each block draws from ⅔× to 4⁄3× of it). */
  txsPerBlock: number;
  /** The last `tailBlocks` blocks hold exactly `tailTxs` transactions (bench/live's blocks). */
  tailBlocks: number;
  tailTxs: number;
  seed: string;
  /** Stale branches per 1,000 blocks (at least one when blocks ≥ 20). */
  reorgsPerThousand: number;
  /** Share of transactions paying each hot address. */
  hotShare: number;
}

export const DEFAULT_PARAMS: CorpusParams = {
  blocks: 20_000,
  txsPerBlock: 3_000,
  tailBlocks: 0,
  tailTxs: 4_000,
  seed: 'blockwire',
  reorgsPerThousand: 0.5,
  hotShare: 0.012,
};

/** The cache key of a parameter set. */
export function corpusKey(p: CorpusParams): string {
  const text = JSON.stringify({ v: GENERATOR_VERSION, ...p });
  return `b${p.blocks}-t${p.txsPerBlock}-${createHash('sha256').update(text).digest('hex').slice(0, 10)}`;
}

// Output types.
const WPKH = 0;
const TR = 1;
const PKH = 2;
const SH = 3; // P2SH-P2WPKH
const WSH = 4; // P2WSH 2-of-3
const SCRIPT_LEN = [22, 34, 25, 23, 34];
/** Cumulative output-type weights (P2WPKH 48 %, P2TR 22 %, P2PKH 12 %, P2SH 12 %, P2WSH 6 %). */
const TYPE_CDF = [0.48, 0.7, 0.82, 0.94, 1];
/** Input virtual sizes by spent type, for fees. */
const IN_VBYTES = [68, 58, 148, 91, 104];

const MAX_WEIGHT = REGTEST.maxBlockWeight - 8_000;
const FILE_LIMIT = 128 << 20;
const TX_BUF = 1 << 20;

/** Unspent outputs the generator may spend (swap-remove arrays). */
class Pool {
  cap = 1 << 16;
  size = 0;
  txid = new Uint8Array(this.cap * 32);
  vout = new Uint32Array(this.cap);
  type = new Uint8Array(this.cap);
  value = new Float64Array(this.cap);

  add(txid: Uint8Array, txidOff: number, vout: number, type: number, value: number): void {
    if (this.size === this.cap) this.grow();
    const i = this.size++;
    this.txid.set(txid.subarray(txidOff, txidOff + 32), i * 32);
    this.vout[i] = vout;
    this.type[i] = type;
    this.value[i] = value;
  }

  remove(i: number): void {
    const last = --this.size;
    if (i !== last) {
      this.txid.copyWithin(i * 32, last * 32, last * 32 + 32);
      this.vout[i] = this.vout[last]!;
      this.type[i] = this.type[last]!;
      this.value[i] = this.value[last]!;
    }
  }

  private grow(): void {
    this.cap *= 2;
    const t = new Uint8Array(this.cap * 32);
    t.set(this.txid);
    this.txid = t;
    const v = new Uint32Array(this.cap);
    v.set(this.vout);
    this.vout = v;
    const y = new Uint8Array(this.cap);
    y.set(this.type);
    this.type = y;
    const x = new Float64Array(this.cap);
    x.set(this.value);
    this.value = x;
  }
}

/** One generated block, before it goes to a file. */
interface GenBlock {
  height: number;
  bytes: Uint8Array;
  hash: Uint8Array;
  prev: Uint8Array;
  txs: number;
  stale: boolean;
}

/** A block with what a stale twin needs: its transactions' ends in the body, ids, body offset. */
interface AssembledBlock extends GenBlock {
  bodyEnds: number[];
  ids: Uint8Array;
  bodyOffset: number;
}

/** Writes length-prefixed records into blk?????.dat files, obfuscated with the xor key. */
export class BlkWriter {
  private fd = -1;
  private fileNo = -1;
  private pos = 0;
  private readonly head = new Uint8Array(8);
  constructor(
    private readonly dir: string,
    private readonly key: Uint8Array,
  ) {}

  write(block: Uint8Array): { file: number; offset: number } {
    if (this.fd < 0 || this.pos + 8 + block.length > FILE_LIMIT) this.next();
    this.head.set(NETWORKS.regtest.magic, 0);
    new DataView(this.head.buffer).setUint32(4, block.length, true);
    const head = this.head.slice();
    xorBlockData(head, this.key, this.pos);
    const offset = this.pos + 8;
    const body = block.slice();
    xorBlockData(body, this.key, offset);
    writeSync(this.fd, head);
    writeSync(this.fd, body);
    this.pos = offset + block.length;
    return { file: this.fileNo, offset };
  }

  private next(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fileNo++;
    this.fd = openSync(join(this.dir, `blk${String(this.fileNo).padStart(5, '0')}.dat`), 'w');
    this.pos = 0;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** The chain generator: state that carries from block to block. */
export class CorpusGenerator {
  readonly rng: Rng;
  private readonly pool = new Pool();
  /** Recently used output programs, for address reuse: type and 32 bytes each. */
  private readonly ring = new Uint8Array(100_000 * 32);
  private readonly ringType = new Uint8Array(100_000);
  private ringLen = 0;
  private ringPos = 0;
  readonly hot: { type: number; program: Uint8Array }[];
  private readonly txBuf = new Uint8Array(TX_BUF);
  private readonly scratch = new Uint8Array(TX_BUF);
  private body = new Uint8Array(4 << 20);
  private readonly pick = {
    idx: new Int32Array(128),
    type: new Uint8Array(128),
    value: new Float64Array(128),
    txid: new Uint8Array(128 * 32),
    vout: new Uint32Array(128),
  };
  private time = 1_700_000_000;

  constructor(readonly params: CorpusParams) {
    this.rng = new Rng(params.seed);
    const prog = (n: number) => {
      const b = new Uint8Array(32);
      this.rng.fill(b, 0, n);
      return b;
    };
    this.hot = [
      { type: WPKH, program: prog(20) },
      { type: TR, program: prog(32) },
      { type: PKH, program: prog(20) },
    ];
  }

  /** The output script of a type and program. */
  static script(type: number, program: Uint8Array): Uint8Array {
    const s = new Uint8Array(SCRIPT_LEN[type]!);
    writeScript(s, 0, type, program, 0);
    return s;
  }

  /** The regtest address of a hot output. */
  static address(type: number, program: Uint8Array): string {
    if (type === WPKH) return segwitAddress(0, program.subarray(0, 20), 'regtest');
    if (type === TR) return segwitAddress(1, program.subarray(0, 32), 'regtest');
    return p2pkhAddress(program.subarray(0, 20), 'regtest');
  }

  private outType(): number {
    const r = this.rng.float();
    let t = 0;
    while (r >= TYPE_CDF[t]!) t++;
    return t;
  }

  /** Type of the script the last writeRandomScript wrote (a reused address keeps its own). */
  private lastType = 0;

  /**
   * Writes the length and a random (or, 30 % of the time, a reused) payment output script of
   * `type` at `p`; returns the new p and sets `lastType`.
   */
  private writeRandomScript(out: Uint8Array, p: number, type: number): number {
    const rng = this.rng;
    let slot: number;
    if (this.ringLen > 1000 && rng.float() < 0.3) {
      slot = rng.int(this.ringLen);
      type = this.ringType[slot]!;
    } else {
      slot = this.ringPos;
      rng.fill(this.ring, slot * 32, 32);
      this.ringType[slot] = type;
      this.ringPos = (slot + 1) % this.ringType.length;
      if (this.ringLen < this.ringType.length) this.ringLen++;
    }
    this.lastType = type;
    out[p] = SCRIPT_LEN[type]!;
    return writeScript(out, p + 1, type, this.ring, slot * 32);
  }

  private static writeValue(out: Uint8Array, p: number, v: number): void {
    const lo = v % 4294967296;
    const hi = Math.floor(v / 4294967296);
    out[p] = lo & 0xff;
    out[p + 1] = (lo >>> 8) & 0xff;
    out[p + 2] = (lo >>> 16) & 0xff;
    out[p + 3] = lo >>> 24;
    out[p + 4] = hi & 0xff;
    out[p + 5] = (hi >>> 8) & 0xff;
    out[p + 6] = (hi >>> 16) & 0xff;
    out[p + 7] = hi >>> 24;
  }

  /** Picks `n` unspent outputs (half from the most recent 5 %, half anywhere), removing them. */
  private pickInputs(n: number): number {
    const pool = this.pool;
    const rng = this.rng;
    const k = Math.min(n, pool.size);
    for (let j = 0; j < k; j++) {
      const size = pool.size;
      const recent = Math.max(1, Math.floor(size / 20));
      const i = rng.float() < 0.5 ? size - 1 - rng.int(recent) : rng.int(size);
      this.pick.txid.set(pool.txid.subarray(i * 32, i * 32 + 32), j * 32);
      this.pick.vout[j] = pool.vout[i]!;
      this.pick.type[j] = pool.type[i]!;
      this.pick.value[j] = pool.value[i]!;
      pool.remove(i);
    }
    return k;
  }

  /**
   * Writes one transaction at `out[p]`, registers its outputs in the pool, and returns its end,
   * txid, wtxid and fee (txid/wtxid into `ids` at `idOff` / `idOff + 32`); -1 when no input is left.
   */
  private writeTx(
    out: Uint8Array,
    p: number,
    ids: Uint8Array,
    idOff: number,
    height: number,
  ): { end: number; fee: number; weight: number; outputs: number } | null {
    const rng = this.rng;
    // Shape: inputs and payment outputs.
    const r = rng.float();
    let nIn = 1;
    let nOut = 2;
    let opReturn = false;
    if (r < 0.55) {
      nIn = 1;
      nOut = 2;
    } else if (r < 0.7) {
      nIn = 2;
      nOut = 2;
    } else if (r < 0.78) {
      nIn = 1;
      nOut = 1;
    } else if (r < 0.83) {
      nIn = rng.range(3, 5);
      nOut = 2;
    } else if (r < 0.85) {
      nIn = rng.range(10, 60);
      nOut = 1;
    } else if (r < 0.88) {
      nIn = rng.range(1, 2);
      nOut = rng.range(10, 50);
    } else if (r < 0.93) {
      nIn = 1;
      nOut = 1;
      opReturn = true;
    } else {
      nIn = 1;
      nOut = 3;
    }
    nIn = this.pickInputs(nIn);
    if (nIn === 0) return null;
    const pk = this.pick;
    let sum = 0;
    let segwit = false;
    let vbytes = 11 + (opReturn ? 50 : 0);
    for (let j = 0; j < nIn; j++) {
      sum += pk.value[j]!;
      if (pk.type[j] !== PKH) segwit = true;
      vbytes += IN_VBYTES[pk.type[j]!]!;
    }
    // Output types first (their sizes set the fee).
    const types = new Uint8Array(nOut);
    const hotIdx = new Int8Array(nOut).fill(-1);
    for (let v = 0; v < nOut; v++) {
      types[v] = v === nOut - 1 && nOut > 1 ? pk.type[0]! : this.outType(); // change keeps the input's type
      vbytes += 9 + SCRIPT_LEN[types[v]!]!;
    }
    for (let h = 0; h < this.hot.length; h++) {
      if (rng.float() < this.params.hotShare) {
        const v = rng.int(nOut);
        hotIdx[v] = h;
        types[v] = this.hot[h]!.type;
      }
    }
    const rate = 1 + Math.floor(rng.float() ** 3 * 40);
    let fee = rate * vbytes;
    if (fee > sum / 4) fee = Math.floor(sum / 4);
    const spend = sum - fee;
    while (nOut > 1 && spend / nOut < 546) nOut--;
    // Values: random shares, the last output (change) takes the remainder.
    const values = new Float64Array(nOut);
    let left = spend;
    for (let v = 0; v < nOut - 1; v++) {
      const share = Math.floor(left * (0.05 + rng.float() * (1.6 / nOut)));
      values[v] = Math.min(share, left - 546 * (nOut - 1 - v));
      if (values[v]! < 0) values[v] = 0;
      left -= values[v]!;
    }
    values[nOut - 1] = left;

    // Serialize (segwit form when any input has a witness).
    const start = p;
    out[p] = 2;
    out[p + 1] = 0;
    out[p + 2] = 0;
    out[p + 3] = 0;
    p += 4;
    if (segwit) {
      out[p++] = 0;
      out[p++] = 1;
    }
    const bodyStart = p;
    p = writeCompactSize(out, p, nIn);
    const sigLens = new Uint8Array(nIn);
    for (let j = 0; j < nIn; j++) {
      out.set(pk.txid.subarray(j * 32, j * 32 + 32), p);
      const vo = pk.vout[j]!;
      out[p + 32] = vo & 0xff;
      out[p + 33] = (vo >>> 8) & 0xff;
      out[p + 34] = (vo >>> 16) & 0xff;
      out[p + 35] = vo >>> 24;
      p += 36;
      const t = pk.type[j]!;
      const sigLen = rng.float() < 0.5 ? 72 : 71;
      sigLens[j] = sigLen;
      if (t === PKH) {
        out[p++] = 1 + sigLen + 1 + 33;
        out[p++] = sigLen;
        p = writeSig(rng, out, p, sigLen);
        out[p++] = 33;
        p = writePubkey(rng, out, p);
      } else if (t === SH) {
        out[p++] = 23;
        out[p++] = 22;
        out[p++] = 0;
        out[p++] = 20;
        rng.fill(out, p, 20);
        p += 20;
      } else out[p++] = 0;
      const seq = rng.float() < 0.7 ? 0xfffffffd : 0xffffffff;
      out[p] = seq & 0xff;
      out[p + 1] = (seq >>> 8) & 0xff;
      out[p + 2] = (seq >>> 16) & 0xff;
      out[p + 3] = seq >>> 24;
      p += 4;
    }
    const txidOut = ids.subarray(idOff, idOff + 32);
    p = writeCompactSize(out, p, nOut + (opReturn ? 1 : 0));
    for (let v = 0; v < nOut; v++) {
      CorpusGenerator.writeValue(out, p, values[v]!);
      p += 8;
      const h = hotIdx[v]!;
      if (h >= 0) {
        out[p++] = SCRIPT_LEN[types[v]!]!;
        p = writeScript(out, p, types[v]!, this.hot[h]!.program, 0);
      } else {
        p = this.writeRandomScript(out, p, types[v]!);
        types[v] = this.lastType;
      }
    }
    if (opReturn) {
      const n = rng.range(20, 80);
      CorpusGenerator.writeValue(out, p, 0);
      p += 8;
      out[p++] = n + 2;
      out[p++] = 0x6a;
      out[p++] = n;
      rng.fill(out, p, n);
      p += n;
    }
    const bodyEnd = p;
    if (segwit) {
      for (let j = 0; j < nIn; j++) {
        const t = pk.type[j]!;
        const sigLen = sigLens[j]!;
        if (t === WPKH || t === SH) {
          out[p++] = 2;
          out[p++] = sigLen;
          p = writeSig(rng, out, p, sigLen);
          out[p++] = 33;
          p = writePubkey(rng, out, p);
        } else if (t === TR) {
          out[p++] = 1;
          out[p++] = 64;
          rng.fill(out, p, 64);
          p += 64;
        } else if (t === WSH) {
          out[p++] = 4;
          out[p++] = 0;
          out[p++] = sigLen;
          p = writeSig(rng, out, p, sigLen);
          out[p++] = 72;
          p = writeSig(rng, out, p, 72);
          out[p++] = 105;
          out[p++] = 0x52;
          for (let k = 0; k < 3; k++) {
            out[p++] = 33;
            p = writePubkey(rng, out, p);
          }
          out[p++] = 0x53;
          out[p++] = 0xae;
        } else out[p++] = 0;
      }
    }
    const lock = rng.float() < 0.4 ? Math.max(0, height - 1) : 0;
    out[p] = lock & 0xff;
    out[p + 1] = (lock >>> 8) & 0xff;
    out[p + 2] = (lock >>> 16) & 0xff;
    out[p + 3] = lock >>> 24;
    p += 4;

    // txid over the non-witness serialization; wtxid over all of it.
    const s = this.scratch;
    s.set(out.subarray(start, start + 4), 0);
    s.set(out.subarray(bodyStart, bodyEnd), 4);
    const bodyLen = bodyEnd - bodyStart;
    s.set(out.subarray(p - 4, p), 4 + bodyLen);
    const stripped = 8 + bodyLen;
    txidOut.set(sha256d(s.subarray(0, stripped)));
    ids.set(segwit ? sha256d(out.subarray(start, p)) : txidOut, idOff + 32);
    for (let v = 0; v < nOut; v++) this.pool.add(ids, idOff, v, types[v]!, values[v]!);
    return { end: p, fee, weight: stripped * 3 + (p - start), outputs: nOut };
  }

  /** Builds the coinbase: BIP34 height, `outputs` payouts splitting `value`, the witness commitment. */
  private coinbase(
    height: number,
    value: number,
    outputs: number,
    witnessRoot: Uint8Array,
    tag: number,
  ): { raw: Uint8Array; txid: Uint8Array } {
    const extra = new Uint8Array(8);
    new DataView(extra.buffer).setUint32(0, tag, true);
    this.rng.fill(extra, 4, 4);
    const scriptSig = new Uint8Array([...scriptNumPush(height), 0x08, ...extra]);
    const outs: { value: bigint; script: Uint8Array }[] = [];
    for (let i = 0; i < outputs; i++) {
      const type = i % 2 === 0 ? WPKH : TR;
      const prog = new Uint8Array(32);
      this.rng.fill(prog, 0, 32);
      outs.push({ value: BigInt(coinbaseShare(value, outputs, i)), script: CorpusGenerator.script(type, prog) });
    }
    outs.push({ value: 0n, script: witnessCommitmentScript(witnessRoot) });
    const tx = {
      version: 2,
      inputs: [{ prevTxid: new Uint8Array(32), vout: 0xffffffff, scriptSig, sequence: 0xfffffffe, witness: [new Uint8Array(32)] }],
      outputs: outs,
      locktime: Math.max(0, height - 1),
    };
    return { raw: encodeTx(tx), txid: sha256d(encodeTx(tx, { witness: false })) };
  }

  /**
   * The next block at `height` on `prev` with about `txCount` transactions (a coinbase only for 0).
   * `prefixOf` builds a stale twin instead: the same parent, another coinbase, and only the first
   * `stalePrefix` transactions of that block (their outputs are not added to the pool again).
   */
  makeBlock(height: number, prev: Uint8Array, txCount: number, coinbaseOutputs = 1): AssembledBlock {
    const ids = new Uint8Array(Math.max(txCount, 1) * 64 + 64);
    let p = 0;
    let n = 0;
    let fees = 0;
    let weight = 4 * 200; // header, counts and the coinbase, roughly
    const ends: number[] = [];
    while (n < txCount) {
      if (this.body.length - p < TX_BUF) {
        const b = new Uint8Array(this.body.length * 2);
        b.set(this.body.subarray(0, p));
        this.body = b;
      }
      const r = this.writeTx(this.body, p, ids, (n + 1) * 64, height);
      if (r === null) break;
      if (weight + r.weight > MAX_WEIGHT) {
        // Too heavy: drop it (its outputs, the pool's newest entries, leave it again; its inputs
        // stay spent, which is harmless here).
        this.pool.size -= r.outputs;
        break;
      }
      weight += r.weight;
      fees += r.fee;
      p = r.end;
      ends.push(p);
      n++;
    }
    return this.assemble(height, prev, this.body.subarray(0, p), ids, n, fees, coinbaseOutputs, 0, ends);
  }

  /** A stale twin of `block` (same parent, fresh coinbase, the first `prefix` transactions). */
  staleTwin(block: AssembledBlock, prefix: number, prev: Uint8Array, tag: number): GenBlock {
    const k = Math.min(prefix, block.bodyEnds.length);
    const bodyLen = k === 0 ? 0 : block.bodyEnds[k - 1]!;
    const body = block.bytes.subarray(block.bodyOffset, block.bodyOffset + bodyLen);
    return this.assemble(block.height, prev, body, block.ids, k, 0, 1, tag, block.bodyEnds.slice(0, k), true);
  }

  private assemble(
    height: number,
    prev: Uint8Array,
    body: Uint8Array,
    ids: Uint8Array,
    n: number,
    fees: number,
    cbOutputs: number,
    tag: number,
    ends: number[],
    stale = false,
  ): AssembledBlock {
    const wtxids: Uint8Array[] = [new Uint8Array(32)];
    const txids: Uint8Array[] = [];
    for (let i = 1; i <= n; i++) {
      txids.push(ids.subarray(i * 64, i * 64 + 32));
      wtxids.push(ids.subarray(i * 64 + 32, i * 64 + 64));
    }
    const { raw: cb, txid: cbTxid } = this.coinbase(height, Number(blockSubsidy(height)) + fees, cbOutputs, merkleRoot(wtxids), tag);
    const cbValue = Number(blockSubsidy(height)) + fees;
    if (!stale)
      for (let v = 0; v < cbOutputs; v++) this.pool.add(cbTxid, 0, v, v % 2 === 0 ? WPKH : TR, coinbaseShare(cbValue, cbOutputs, v));
    const ownIds = new Uint8Array(ids.length);
    ownIds.set(ids);
    ownIds.set(cbTxid, 0);
    const root = merkleRoot([cbTxid, ...txids]);
    this.time += stale ? 1 : 600;
    const { header, hash } = grindHeader({
      version: REGTEST.blockVersion,
      prevHash: prev,
      merkleRoot: root,
      time: this.time,
      bits: REGTEST.bits,
      nonce: 0,
    });
    const countLen = n + 1 < 0xfd ? 1 : n + 1 <= 0xffff ? 3 : 5;
    const bytes = new Uint8Array(80 + countLen + cb.length + body.length);
    bytes.set(header, 0);
    let p = writeCompactSize(bytes, 80, n + 1);
    bytes.set(cb, p);
    p += cb.length;
    const bodyOffset = p;
    bytes.set(body, p);
    return { height, bytes, hash, prev, txs: n + 1, stale, bodyEnds: ends, ids: ownIds, bodyOffset };
  }
}

/** Output `i` of a coinbase splitting `value` into `n` outputs (the last takes the remainder). */
function coinbaseShare(value: number, n: number, i: number): number {
  const each = Math.floor(value / n);
  return i === n - 1 ? value - each * (n - 1) : each;
}

function sha256d(b: Uint8Array): Uint8Array {
  return nodeHash('sha256', nodeHash('sha256', b, 'buffer'), 'buffer') as unknown as Uint8Array;
}

function writeScript(out: Uint8Array, p: number, type: number, prog: Uint8Array, off: number): number {
  if (type === WPKH) {
    out[p] = 0x00;
    out[p + 1] = 0x14;
    out.set(prog.subarray(off, off + 20), p + 2);
    return p + 22;
  }
  if (type === TR || type === WSH) {
    out[p] = type === TR ? 0x51 : 0x00;
    out[p + 1] = 0x20;
    out.set(prog.subarray(off, off + 32), p + 2);
    return p + 34;
  }
  if (type === PKH) {
    out[p] = 0x76;
    out[p + 1] = 0xa9;
    out[p + 2] = 0x14;
    out.set(prog.subarray(off, off + 20), p + 3);
    out[p + 23] = 0x88;
    out[p + 24] = 0xac;
    return p + 25;
  }
  out[p] = 0xa9;
  out[p + 1] = 0x14;
  out.set(prog.subarray(off, off + 20), p + 2);
  out[p + 22] = 0x87;
  return p + 23;
}

/** A DER-looking signature of `len` bytes with SIGHASH_ALL. */
function writeSig(rng: Rng, out: Uint8Array, p: number, len: number): number {
  out[p] = 0x30;
  out[p + 1] = len - 3;
  rng.fill(out, p + 2, len - 3);
  out[p + len - 1] = 0x01;
  return p + len;
}

function writePubkey(rng: Rng, out: Uint8Array, p: number): number {
  out[p] = 0x02 + (rng.u32() & 1);
  rng.fill(out, p + 1, 32);
  return p + 33;
}

export interface GenerateOptions {
  out: string;
  params: CorpusParams;
  log?: (line: string) => void;
}

/** Generates a corpus into `out` (replacing what is there) and returns its manifest. */
export function generateCorpus(opts: GenerateOptions): CorpusManifest {
  const t0 = performance.now();
  const p = opts.params;
  const log = opts.log ?? (() => {});
  const tmp = `${opts.out}.partial`;
  rmSync(tmp, { recursive: true, force: true });
  const blocksDir = join(tmp, 'blocks');
  mkdirSync(blocksDir, { recursive: true });
  const gen = new CorpusGenerator(p);
  const key = new Uint8Array(8);
  gen.rng.fill(key, 0, 8);
  writeFileSync(join(blocksDir, 'xor.dat'), key);
  const writer = new BlkWriter(blocksDir, key);
  const records: CorpusBlock[] = [];
  const events: CorpusEvent[] = [];
  let txs = 0;
  let rawBytes = 0;
  let reorgs = 0;
  let staleBlocks = 0;
  const emit = (b: GenBlock) => {
    const at = writer.write(b.bytes);
    records.push({
      height: b.height,
      hash: hashToHex(b.hash),
      prev: hashToHex(b.prev),
      file: at.file,
      offset: at.offset,
      length: b.bytes.length,
      txs: b.txs,
      ...(b.stale ? { stale: true } : {}),
    });
    if (!b.stale) {
      txs += b.txs;
      rawBytes += b.bytes.length;
    } else staleBlocks++;
    return records.length - 1;
  };

  // Genesis: Core's regtest genesis block.
  const genesis = genesisBytes();
  const gi = emit({
    height: 0,
    bytes: genesis,
    hash: Uint8Array.from(Buffer.from(GENESIS_HASH, 'hex').reverse()),
    prev: new Uint8Array(32),
    txs: 1,
    stale: false,
  });
  events.push(['C', gi]);
  const prev = records[gi]!.hash;
  let prevBytes: Uint8Array = Uint8Array.from(Buffer.from(prev, 'hex').reverse());

  // Where stale branches start (never in the tail, never before height 10).
  const reorgCount = p.blocks >= 20 ? Math.max(1, Math.round((p.blocks * p.reorgsPerThousand) / 1000)) : 0;
  const forks = new Map<number, number>();
  const span = Math.max(1, p.blocks - p.tailBlocks - 20);
  for (let i = 0; i < reorgCount; i++) {
    const h = 10 + Math.floor(((i + 0.5) * span) / reorgCount);
    forks.set(h, 1 + (gen.rng.float() < 0.25 ? 1 : 0) + (gen.rng.float() < 0.1 ? 1 : 0));
  }

  let lastLog = performance.now();
  let h = 1;
  while (h <= p.blocks) {
    const count = (height: number) => {
      if (height > p.blocks - p.tailBlocks) return p.tailTxs - 1;
      return Math.max(0, Math.round(p.txsPerBlock * (2 / 3 + (gen.rng.float() * 2) / 3)) - 1);
    };
    const depth = forks.get(h);
    if (depth !== undefined && h + depth <= p.blocks) {
      // Main blocks h..h+depth, and a stale branch of `depth` blocks forking at h-1.
      const main: ReturnType<CorpusGenerator['makeBlock']>[] = [];
      let mp: Uint8Array = prevBytes;
      for (let k = 0; k <= depth; k++) {
        const b = gen.makeBlock(h + k, mp, count(h + k), h + k === 1 ? 2 * p.txsPerBlock : 1);
        main.push(b);
        mp = b.hash;
      }
      const staleIdx: number[] = [];
      let sp: Uint8Array = prevBytes;
      for (let k = 0; k < depth; k++) {
        const twin = gen.staleTwin(main[k]!, k === 0 ? Math.floor((main[k]!.txs - 1) / 2) : 0, sp, 0x5ea1e000 + k);
        sp = twin.hash;
        staleIdx.push(emit(twin));
      }
      for (const i of staleIdx) events.push(['C', i]);
      for (let k = staleIdx.length - 1; k >= 0; k--) events.push(['D', staleIdx[k]!]);
      for (const b of main) events.push(['C', emit(b)]);
      reorgs++;
      prevBytes = mp;
      h += depth + 1;
    } else {
      const b = gen.makeBlock(h, prevBytes, count(h), h === 1 ? 2 * p.txsPerBlock : 1);
      events.push(['C', emit(b)]);
      prevBytes = b.hash;
      h++;
    }
    const now = performance.now();
    if (now - lastLog > 5000) {
      log(
        `corpus: block ${h - 1}/${p.blocks}, ${txs} txs, ${(rawBytes / 1e6).toFixed(0)} MB, ${(((h - 1) * 1000) / (now - t0)).toFixed(1)} blocks/s`,
      );
      lastLog = now;
    }
  }
  writer.close();
  const tip = records.filter((r) => !r.stale).at(-1)!;
  const manifest: CorpusManifest = {
    format: 1,
    network: 'regtest',
    params: { ...p },
    key: corpusKey(p),
    blocks: records,
    events,
    tip: { height: tip.height, hash: tip.hash },
    txs,
    rawBytes,
    reorgs,
    staleBlocks,
    hot: gen.hot.map((x) => ({
      address: CorpusGenerator.address(x.type, x.program),
      script: bytesToHex(CorpusGenerator.script(x.type, x.program)),
    })),
    xor: bytesToHex(key),
    generatedMs: Math.round(performance.now() - t0),
  };
  writeFileSync(join(tmp, MANIFEST_FILE), JSON.stringify(manifest));
  rmSync(opts.out, { recursive: true, force: true });
  renameSync(tmp, opts.out);
  log(
    `corpus: ${p.blocks} blocks, ${txs} txs, ${(rawBytes / 1e6).toFixed(0)} MB in ${(manifest.generatedMs / 1000).toFixed(1)} s -> ${opts.out}`,
  );
  return manifest;
}

/** The corpus for `params` under `cacheDir`, generated when missing. */
export function ensureCorpus(cacheDir: string, params: CorpusParams, log?: (line: string) => void): { dir: string; generated: boolean } {
  const dir = join(cacheDir, corpusKey(params));
  if (existsSync(join(dir, MANIFEST_FILE))) return { dir, generated: false };
  mkdirSync(cacheDir, { recursive: true });
  generateCorpus({ out: dir, params, ...(log ? { log } : {}) });
  return { dir, generated: true };
}

/** Parameters from command-line flags over the defaults. */
export function paramsFrom(
  values: {
    blocks?: string | undefined;
    'txs-per-block'?: string | undefined;
    seed?: string | undefined;
    'tail-blocks'?: string | undefined;
  },
  base: CorpusParams = DEFAULT_PARAMS,
): CorpusParams {
  return {
    ...base,
    ...(values.blocks !== undefined ? { blocks: Number(values.blocks) } : {}),
    ...(values['txs-per-block'] !== undefined ? { txsPerBlock: Number(values['txs-per-block']) } : {}),
    ...(values.seed !== undefined ? { seed: values.seed } : {}),
    ...(values['tail-blocks'] !== undefined ? { tailBlocks: Number(values['tail-blocks']) } : {}),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      blocks: { type: 'string' },
      'txs-per-block': { type: 'string' },
      seed: { type: 'string' },
      'tail-blocks': { type: 'string' },
    },
  });
  if (!values.out) {
    process.stderr.write('usage: generate.ts --out DIR [--blocks N] [--txs-per-block N] [--seed S] [--tail-blocks N]\n');
    process.exit(2);
  }
  generateCorpus({ out: values.out, params: paramsFrom(values), log: (l) => process.stdout.write(`${l}\n`) });
}
