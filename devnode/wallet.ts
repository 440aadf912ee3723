/**
 * The devnode's built-in wallet (not Core's wallet): keys derived from a seed, destinations of
 * every type Blockwire indexes (P2PKH, P2SH-P2WPKH, P2WPKH, P2TR key path, bare P2PK, P2SH and
 * P2WSH 2-of-3 multisig, bare 1-of-2 multisig), coins found in the UTXO set and mempool,
 * transactions built and signed with @scure/btc-signer and broadcast through the node
 * (sendrawtransaction semantics), and RBF fee bumps.
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import * as btc from '@scure/btc-signer';
import { bytesToHex, hexToBytes, sha256 } from '../src/bitcoin/hash.js';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { regtestScript, scriptToAddress } from './address.js';
import { classifyScript } from '../src/bitcoin/script.js';
import { outpointKey, prevTxidOf } from './chain.js';
import { REGTEST } from './consensus.js';
import { broadcastTx } from './broadcast.js';
import type { Node } from './node.js';
import { POLICY } from './policy.js';
import { NETWORKS } from '../src/bitcoin/network.js';

export const ADDRESS_TYPES = [
  'p2pkh',
  'p2sh-p2wpkh',
  'p2wpkh',
  'p2tr',
  'p2pk',
  'p2sh-multisig',
  'p2wsh-multisig',
  'bare-multisig',
] as const;
export type AddressType = (typeof ADDRESS_TYPES)[number];

const REGTEST_NET = NETWORKS.regtest;

/** A wallet destination: its output script, and its address when it has one. */
export type Destination = { type: AddressType; script: string; address: string | null };

type Owned = {
  type: AddressType;
  keys: Uint8Array[];
  script: Uint8Array;
  redeemScript?: Uint8Array;
  witnessScript?: Uint8Array;
  tapInternalKey?: Uint8Array;
};

/** A spendable output of the wallet. */
export type WalletCoin = {
  txid: string;
  vout: number;
  value: bigint;
  script: Uint8Array;
  confirmations: number;
  coinbase: boolean;
  owned: Owned;
};

export type PaymentTarget = string | { script: string };

export type SendOptions = {
  /** sat/vB (default 2). */
  feeRate?: number;
  /** Signal BIP125 replaceability (default true). */
  rbf?: boolean;
  /** OP_RETURN payloads (hex), one output each. */
  data?: string[];
  /** More payments in the same transaction. */
  outputs?: { to: PaymentTarget; sats: bigint }[];
  /** Spend only these coins (`txid:vout`), even if a mempool transaction spends them (a conflict). */
  from?: string[];
  /** Where the change output goes among the outputs (default: last). */
  changePosition?: number;
  /** Use unconfirmed coins too (default true). */
  includeUnconfirmed?: boolean;
};

const TYPE_OFFSET: Record<AddressType, number> = {
  p2pkh: 0,
  'p2sh-p2wpkh': 10_000,
  p2wpkh: 20_000,
  p2tr: 30_000,
  p2pk: 40_000,
  'p2sh-multisig': 50_000,
  'p2wsh-multisig': 60_000,
  'bare-multisig': 70_000,
};

/** Insufficient funds (RPC -6). */
export class InsufficientFunds extends Error {
  constructor() {
    super('Insufficient funds');
    this.name = 'InsufficientFunds';
  }
}

export class Wallet {
  private readonly owned = new Map<string, Owned>();
  private readonly next = new Map<AddressType, number>();

  constructor(
    private readonly node: Node,
    private readonly seed: Uint8Array,
    counters: Partial<Record<AddressType, number>> = {},
  ) {
    for (const t of ADDRESS_TYPES) {
      const n = Math.max(counters[t] ?? 1, 1);
      this.next.set(t, n);
      for (let j = 0; j < n + 5; j++) this.derive(t, j);
    }
  }

  /** How many addresses of each type were handed out (persisted by the caller). */
  counters(): Record<AddressType, number> {
    return Object.fromEntries(this.next) as Record<AddressType, number>;
  }

  /** Private key number `i` of the seed. */
  private key(i: number): Uint8Array {
    const buf = new Uint8Array(this.seed.length + 4);
    buf.set(this.seed, 0);
    new DataView(buf.buffer).setUint32(this.seed.length, i, true);
    let k = sha256(buf);
    while (!secp256k1.utils.isValidSecretKey(k)) k = sha256(k);
    return k;
  }

  private derive(type: AddressType, j: number): Owned {
    const base = TYPE_OFFSET[type];
    const multi = type.endsWith('multisig');
    const keys = multi ? [0, 1, 2].map((x) => this.key(base + 3 * j + x)) : [this.key(base + j)];
    const pubs = keys.map((k) => secp256k1.getPublicKey(k, true));
    let o: Owned;
    switch (type) {
      case 'p2pkh':
        o = { type, keys, script: btc.p2pkh(pubs[0]!, REGTEST_NET).script };
        break;
      case 'p2sh-p2wpkh': {
        const p = btc.p2sh(btc.p2wpkh(pubs[0]!, REGTEST_NET), REGTEST_NET);
        o = { type, keys, script: p.script, redeemScript: p.redeemScript! };
        break;
      }
      case 'p2wpkh':
        o = { type, keys, script: btc.p2wpkh(pubs[0]!, REGTEST_NET).script };
        break;
      case 'p2tr': {
        const p = btc.p2tr(pubs[0]!.subarray(1), undefined, REGTEST_NET);
        o = { type, keys, script: p.script, tapInternalKey: p.tapInternalKey };
        break;
      }
      case 'p2pk':
        o = { type, keys, script: btc.p2pk(pubs[0]!).script };
        break;
      case 'p2sh-multisig': {
        const p = btc.p2sh(btc.p2ms(2, pubs), REGTEST_NET);
        o = { type, keys, script: p.script, redeemScript: p.redeemScript! };
        break;
      }
      case 'p2wsh-multisig': {
        const p = btc.p2wsh(btc.p2ms(2, pubs), REGTEST_NET);
        o = { type, keys, script: p.script, witnessScript: p.witnessScript! };
        break;
      }
      case 'bare-multisig':
        o = { type, keys, script: btc.p2ms(1, pubs.slice(0, 2)).script };
        break;
    }
    this.owned.set(bytesToHex(o.script), o);
    return o;
  }

  /** Destination `j` of a type (0 = the default one). */
  destination(type: AddressType, j = 0): Destination {
    const o = this.derive(type, j);
    return { type, script: bytesToHex(o.script), address: scriptToAddress(o.script) };
  }

  /** The default address of a type; types without an address (P2PK, bare multisig) throw. */
  address(type: AddressType): string {
    const d = this.destination(type);
    if (d.address === null) throw new TypeError(`a ${type} output has no address; use destination('${type}').script`);
    return d.address;
  }

  /** A fresh destination of a type. */
  newDestination(type: AddressType): Destination {
    const j = this.next.get(type) ?? 1;
    this.next.set(type, j + 1);
    this.derive(type, j + 5);
    return this.destination(type, j);
  }

  /** True when the wallet can sign for this output script. */
  owns(script: Uint8Array | string): boolean {
    return this.owned.has(typeof script === 'string' ? script : bytesToHex(script));
  }

  /**
   * Spendable coins: mature, unspent in the chain and not spent by the mempool, plus mempool
   * outputs. `includeSpent` keeps coins a mempool transaction spends (to build a conflict).
   */
  coins(includeUnconfirmed = true, includeSpent = false): WalletCoin[] {
    const out: WalletCoin[] = [];
    const next = this.node.chain.height() + 1;
    for (const [key, coin] of this.node.chain.utxo) {
      const owned = this.owned.get(bytesToHex(coin.script));
      if (!owned) continue;
      if (coin.coinbase && next - coin.height < REGTEST.coinbaseMaturity) continue;
      const i = key.lastIndexOf(':');
      const txid = key.slice(0, i);
      const vout = Number(key.slice(i + 1));
      if (!includeSpent && this.node.mempool.spender(txid, vout)) continue;
      out.push({ txid, vout, value: coin.value, script: coin.script, confirmations: next - coin.height, coinbase: coin.coinbase, owned });
    }
    if (includeUnconfirmed) {
      for (const e of this.node.mempool.all()) {
        e.tx.outputs.forEach((o, vout) => {
          const owned = this.owned.get(bytesToHex(o.script));
          if (!owned || (!includeSpent && this.node.mempool.spender(e.txid, vout))) return;
          out.push({ txid: e.txid, vout, value: o.value, script: o.script, confirmations: 0, coinbase: false, owned });
        });
      }
    }
    return out;
  }

  /** Sum of spendable coins, in sats. */
  balance(): bigint {
    return this.coins().reduce((s, c) => s + c.value, 0n);
  }

  private targetScript(to: PaymentTarget): Uint8Array {
    if (typeof to === 'string') {
      const s = regtestScript(to);
      if (!s) throw new TypeError(`not a regtest address: ${to}`);
      return s;
    }
    return hexToBytes(to.script);
  }

  private sign(inputs: WalletCoin[], outputs: { script: Uint8Array; value: bigint }[], rbf: boolean): DecodedTx {
    const tx = new btc.Transaction({
      allowLegacyWitnessUtxo: true,
      allowUnknownOutputs: true,
      disableScriptCheck: true,
      lockTime: this.node.chain.height(),
    });
    for (const c of inputs) {
      tx.addInput({
        txid: hexToBytes(c.txid),
        index: c.vout,
        sequence: rbf ? 0xfffffffd : 0xfffffffe,
        witnessUtxo: { script: c.script, amount: c.value },
        ...(c.owned.redeemScript ? { redeemScript: c.owned.redeemScript } : {}),
        ...(c.owned.witnessScript ? { witnessScript: c.owned.witnessScript } : {}),
        ...(c.owned.tapInternalKey ? { tapInternalKey: c.owned.tapInternalKey } : {}),
      });
    }
    for (const o of outputs) tx.addOutput({ script: o.script, amount: o.value });
    inputs.forEach((c, i) => {
      const need = c.owned.type === 'p2sh-multisig' || c.owned.type === 'p2wsh-multisig' ? 2 : 1;
      for (const k of c.owned.keys.slice(0, need)) tx.signIdx(k, i);
    });
    tx.finalize();
    return decodeTx(tx.extract());
  }

  /** Builds and signs a payment (not broadcast). */
  createTx(to: PaymentTarget | null, sats: bigint, opts: SendOptions = {}): DecodedTx {
    const rate = opts.feeRate ?? 2;
    const payments: { script: Uint8Array; value: bigint }[] = [];
    if (to !== null) payments.push({ script: this.targetScript(to), value: sats });
    for (const o of opts.outputs ?? []) payments.push({ script: this.targetScript(o.to), value: o.sats });
    for (const d of opts.data ?? []) payments.push({ script: btc.Script.encode(['RETURN', hexToBytes(d)]), value: 0n });
    const target = payments.reduce((s, p) => s + p.value, 0n);
    let pool = this.coins(opts.includeUnconfirmed ?? true, opts.from !== undefined);
    if (opts.from) {
      const want = new Set(opts.from);
      pool = pool.filter((c) => want.has(`${c.txid}:${c.vout}`));
    }
    pool.sort((a, b) => (b.confirmations > 0 ? 1 : 0) - (a.confirmations > 0 ? 1 : 0) || Number(b.value - a.value));
    const inputs: WalletCoin[] = [];
    let sum = 0n;
    const estimate = (n: number) => BigInt(Math.ceil((11 + n * 110 + (payments.length + 1) * 45) * rate));
    for (const c of pool) {
      if (sum >= target + estimate(inputs.length) && inputs.length > 0) break;
      inputs.push(c);
      sum += c.value;
    }
    if (inputs.length === 0 || sum < target + estimate(inputs.length)) throw new InsufficientFunds();
    const change = this.destination(changeType(payments.map((p) => p.script)), 1);
    const changeScript = hexToBytes(change.script);
    const withChange = (value: bigint) => {
      const outs = [...payments];
      outs.splice(Math.min(opts.changePosition ?? outs.length, outs.length), 0, { script: changeScript, value });
      return outs;
    };
    const draft = this.sign(inputs, withChange(sum - target - estimate(inputs.length)), opts.rbf ?? true);
    const fee = BigInt(Math.ceil(draft.vsize * rate));
    const rest = sum - target - fee;
    if (rest < 0n) throw new InsufficientFunds();
    if (rest >= 1000n) return this.sign(inputs, withChange(rest), opts.rbf ?? true);
    return this.sign(inputs, payments, opts.rbf ?? true);
  }

  /** Pays `sats` to `to` and broadcasts; returns the txid. */
  send(to: PaymentTarget | null, sats: bigint, opts: SendOptions = {}): string {
    return broadcastTx(this.node, this.createTx(to, sats, opts));
  }

  /** Replaces a wallet transaction in the mempool by one paying more fee (from its change). */
  bumpFee(txid: string, opts: { feeRate?: number } = {}): string {
    const entry = this.node.mempool.get(txid);
    if (!entry) throw new Error(`Transaction ${txid} is not in the mempool`);
    const tx = entry.tx;
    const inputs: WalletCoin[] = tx.inputs.map((input, i) => {
      const ptxid = prevTxidOf(tx, i);
      const coin =
        this.node.mempool.coin(ptxid, input.vout, this.node.chain.height() + 1) ?? this.node.chain.utxo.get(outpointKey(ptxid, input.vout));
      const owned = coin && this.owned.get(bytesToHex(coin.script));
      if (!coin || !owned) throw new Error("Transaction contains inputs that don't belong to this wallet");
      return { txid: ptxid, vout: input.vout, value: coin.value, script: coin.script, confirmations: 0, coinbase: coin.coinbase, owned };
    });
    const outputs = tx.outputs.map((o) => ({ script: o.script, value: o.value }));
    const changeIdx = outputs.findIndex((o) => this.owns(o.script));
    if (changeIdx < 0) throw new Error('Transaction has no change output to reduce');
    const oldRate = Number(entry.fee) / entry.vsize;
    const rate = opts.feeRate ?? oldRate + 1;
    const newFee = BigInt(
      Math.max(
        Math.ceil(entry.vsize * rate),
        Number(entry.fee) + Math.ceil((entry.vsize * Number(POLICY.incrementalRelayFeePerKvB)) / 1000) + 1,
      ),
    );
    outputs[changeIdx]!.value -= newFee - entry.fee;
    if (outputs[changeIdx]!.value < 546n) throw new Error('Change output too small to bump the fee');
    const replacement = this.sign(inputs, outputs, true);
    return broadcastTx(this.node, replacement);
  }
}

/**
 * The change type, as Core's wallet tends to pick it: matching the payment (legacy change for a
 * legacy payment, P2SH-P2WPKH when a payment goes to P2SH, P2WPKH for segwit v0, P2TR for
 * taproot and for data-only transactions).
 */
function changeType(scripts: Uint8Array[]): AddressType {
  const types = scripts.map(classifyScript);
  if (types.includes('scripthash')) return 'p2sh-p2wpkh';
  switch (types.find((t) => t !== 'nulldata')) {
    case 'pubkeyhash':
    case 'pubkey':
    case 'multisig':
      return 'p2pkh';
    case 'witness_v0_keyhash':
    case 'witness_v0_scripthash':
      return 'p2wpkh';
    default:
      return 'p2tr';
  }
}

/** A random 32-byte seed. */
export function randomSeed(): Uint8Array {
  return secp256k1.utils.randomSecretKey();
}
