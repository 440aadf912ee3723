/**
 * A seeded builder of transactions that a real Bitcoin Core accepts in blocks, for bench/core:
 * Core verifies every script, so this chain cannot carry the corpus's random signature bytes,
 * and signing hundreds of thousands of inputs in JavaScript would take longer than the bench.
 * Every output is therefore spendable without a signature, in the address types Blockwire
 * indexes: P2WSH, P2SH and P2TR (script path, internal key BIP341's unspendable H) of the
 * script `<4-byte key number> OP_DROP OP_1` (one address per key number), plus OP_RETURN outputs.
 * Coinbases pay a bare `OP_1`. Shapes follow bench/corpus loosely (1→2 payments, 2→2, 1→1,
 * consolidations, batch payouts); 30 % of outputs go to an address seen before. Transactions may
 * spend outputs of earlier transactions of the same block.
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { encodeTx, type TxData } from '../src/bitcoin/encode.js';
import { bytesToHex, hash160, hexToBytes, hexToHash, sha256, sha256d, taggedHash } from '../src/bitcoin/hash.js';
import type { TxInputData, TxOutput } from '../src/bitcoin/tx.js';
import { Rng } from './corpus/rng.js';

/** BIP341's NUMS point H: a Taproot internal key nobody can spend with. */
const NUMS = hexToBytes('50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0');
/** The coinbase output of every block this chain mines: bare OP_1 (`raw(51)`). */
export const COINBASE_DESCRIPTOR = 'raw(51)#8lvh9jxk';

const BARE = 0;
const WSH = 1;
const SH = 2;
const TR = 3;
/** Cumulative output-type weights: P2WSH 50 %, P2SH 25 %, P2TR 25 %. */
const TYPE_CDF = [0.5, 0.75, 1];
/** Distinct P2TR outputs (each costs an elliptic-curve tweak); reused at random. */
const TR_KEYS = 2_000;
const MIN_OUTPUT = 10_000;

/** `<key as 4 bytes> OP_DROP OP_1`: true for anyone, one script (and address) per key. */
function keyScript(key: number): Uint8Array {
  const s = new Uint8Array([0x04, 0, 0, 0, 0, 0x75, 0x51]);
  new DataView(s.buffer).setUint32(1, key, true);
  return s;
}

interface TrKey {
  output: Uint8Array;
  script: Uint8Array;
  control: Uint8Array;
}

/** P2TR output, leaf script and control block of a key: Q = H + tagged(H, leaf)·G. */
function trKey(key: number): TrKey {
  const script = keyScript(key);
  const leaf = taggedHash('TapLeaf', new Uint8Array([0xc0, script.length]), script);
  const tweak = taggedHash('TapTweak', NUMS, leaf);
  const p = secp256k1.Point.fromBytes(Uint8Array.from([0x02, ...NUMS]));
  const q = p.add(secp256k1.Point.BASE.multiply(BigInt(`0x${bytesToHex(tweak)}`))).toBytes(true);
  return {
    output: Uint8Array.from([0x51, 0x20, ...q.subarray(1)]),
    script,
    control: Uint8Array.from([0xc0 | (q[0] === 0x03 ? 1 : 0), ...NUMS]),
  };
}

interface Coin {
  txid: Uint8Array;
  vout: number;
  type: number;
  key: number;
  value: number;
}

export interface BuiltTx {
  txid: string;
  hex: string;
  /** Block weight units: 3 × size without witness + full size. */
  weight: number;
}

export class CoreChainBuilder {
  private readonly rng: Rng;
  private readonly coins: Coin[] = [];
  private readonly tr: TrKey[] = [];
  private readonly recent: { type: number; key: number }[] = [];
  private nextKey = 1;
  /** Transactions built so far. */
  built = 0;

  constructor(seed: string) {
    this.rng = new Rng(seed);
  }

  /** A mature coinbase output (bare OP_1) the chain may spend. */
  addCoinbase(txid: string, value: number): void {
    this.coins.push({ txid: hexToHash(txid), vout: 0, type: BARE, key: 0, value });
  }

  unspent(): number {
    return this.coins.length;
  }

  private trAt(key: number): TrKey {
    while (this.tr.length <= key) this.tr.push(trKey(this.tr.length + 1_000_000_000));
    return this.tr[key]!;
  }

  private outputScript(type: number, key: number): Uint8Array {
    if (type === WSH) return Uint8Array.from([0x00, 0x20, ...sha256(keyScript(key))]);
    if (type === SH) return Uint8Array.from([0xa9, 0x14, ...hash160(keyScript(key)), 0x87]);
    return this.trAt(key).output;
  }

  /** A payment destination: 30 % an address seen before, else a new one of a drawn type. */
  private destination(): { type: number; key: number } {
    const rng = this.rng;
    if (this.recent.length > 100 && rng.float() < 0.3) return this.recent[rng.int(this.recent.length)]!;
    const r = rng.float();
    let type = WSH;
    for (let t = 0; t < TYPE_CDF.length; t++) {
      if (r < TYPE_CDF[t]!) {
        type = t + 1;
        break;
      }
    }
    const d = { type, key: type === TR ? rng.int(TR_KEYS) : this.nextKey++ };
    if (this.recent.length < 50_000) this.recent.push(d);
    else this.recent[rng.int(this.recent.length)] = d;
    return d;
  }

  private input(c: Coin): TxInputData {
    const base = { prevTxid: c.txid, vout: c.vout, sequence: 0xfffffffd };
    if (c.type === BARE) return { ...base, scriptSig: new Uint8Array(0) };
    const script = c.type === TR ? this.trAt(c.key).script : keyScript(c.key);
    if (c.type === SH) return { ...base, scriptSig: Uint8Array.from([script.length, ...script]) };
    if (c.type === WSH) return { ...base, scriptSig: new Uint8Array(0), witness: [script] };
    return { ...base, scriptSig: new Uint8Array(0), witness: [script, this.trAt(c.key).control] };
  }

  private take(): Coin {
    const i = this.rng.int(this.coins.length);
    const c = this.coins[i]!;
    this.coins[i] = this.coins[this.coins.length - 1]!;
    this.coins.pop();
    return c;
  }

  /** Splits every unspent coinbase into `outputs` coins (one transaction each). */
  fanOut(outputs: number): BuiltTx[] {
    const bases = this.coins.filter((c) => c.type === BARE);
    this.coins.splice(0, this.coins.length, ...this.coins.filter((c) => c.type !== BARE));
    return bases.map((c) => this.finish([c], outputs, false));
  }

  /** One transaction of a drawn shape; null when no coin is left. */
  next(): BuiltTx | null {
    if (this.coins.length === 0) return null;
    const rng = this.rng;
    const r = rng.float();
    let nIn = 1;
    let nOut = 2;
    let data = false;
    if (r < 0.15) nIn = 2;
    else if (r < 0.25) nOut = 1;
    else if (r < 0.3) {
      nOut = 1;
      data = true;
    } else if (r < 0.34) {
      nIn = rng.range(3, 12);
      nOut = 1;
    } else if (r < 0.37) nOut = rng.range(10, 30);
    else if (r < 0.45) nOut = 3;
    const ins: Coin[] = [];
    for (let i = 0; i < nIn && this.coins.length > 0; i++) ins.push(this.take());
    return this.finish(ins, nOut, data);
  }

  private finish(ins: Coin[], nOut: number, data: boolean): BuiltTx {
    const rng = this.rng;
    const sum = ins.reduce((s, c) => s + c.value, 0);
    const vbytes = 12 + ins.length * 70 + nOut * 40 + (data ? 32 : 0);
    const fee = Math.min((1 + Math.floor(rng.float() ** 3 * 20)) * vbytes, Math.floor(sum / 4));
    let spend = sum - fee;
    while (nOut > 1 && spend / nOut < MIN_OUTPUT) nOut--;
    const dests = Array.from({ length: nOut }, () => this.destination());
    const values: number[] = [];
    for (let v = 0; v < nOut - 1; v++) {
      const share = Math.max(MIN_OUTPUT, Math.floor((spend / (nOut - v)) * (0.3 + rng.float() * 1.4)));
      const value = Math.min(share, spend - MIN_OUTPUT * (nOut - 1 - v));
      values.push(value);
      spend -= value;
    }
    values.push(spend);
    const outputs: TxOutput[] = dests.map((d, v) => ({ value: BigInt(values[v]!), script: this.outputScript(d.type, d.key) }));
    if (data) {
      const payload = new Uint8Array(22);
      payload[0] = 0x6a;
      payload[1] = 20;
      rng.fill(payload, 2, 20);
      outputs.push({ value: 0n, script: payload });
    }
    const tx: TxData = { version: 2, inputs: ins.map((c) => this.input(c)), outputs, locktime: 0 };
    const base = encodeTx(tx, { witness: false });
    const full = encodeTx(tx);
    const txid = sha256d(base);
    dests.forEach((d, v) => this.coins.push({ txid, vout: v, type: d.type, key: d.key, value: values[v]! }));
    this.built++;
    return { txid: bytesToHex(Uint8Array.from(txid).reverse()), hex: bytesToHex(full), weight: base.length * 3 + full.length };
  }
}
