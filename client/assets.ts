/**
 * Open Assets over the Blockwire API: the coloring engine (walks colored outputs back through
 * `GET /transactions/{hash}`, with a cache), asset balances of an address, and issuing and
 * transferring assets (single key or multisig, signed at once or through PSBT).
 *
 * Cost of reading colors: coloring an output fetches its transaction; only when that transaction
 * carries a marker are its inputs' transactions fetched, recursively. The walk stops at
 * transactions without a marker, so it costs one lookup per transaction in the asset's transfer
 * history since issuance (plus one per fee-funding input along the way), each fetched at most
 * once per engine. Colors are cached by txid forever: a txid commits to its inputs and outputs,
 * so its coloring never changes (not even in a reorg).
 * @module
 */
import { hex } from '@scure/base';
import { BlockwireError } from './errors.js';
import { TransactionBuilder, type BuilderClient, type BuiltTransaction, type PartialTransaction } from './builder.js';
import { addressToScript, type AddressType } from './keys.js';
import {
  assetIdFromScript,
  colorTransaction,
  decodeAssetId,
  encodeAssetId,
  findMarkerCandidates,
  markerScript,
  type OutputColor,
} from './open-assets.js';
import type { Candidate } from './plan.js';
import { keySource, type KeyInput, type SpendSource } from './sources.js';
import type { Transaction, UnspentOutput } from './types.js';

/** Where the engine reads transactions (BlockwireClient has it). */
export type TransactionSource = { getTransaction(txid: string): Promise<Transaction> };

/** An output with its color. */
export type ColoredOutput = OutputColor & { value: bigint; script: string };

/** An unspent output with its color. */
export type ColoredUnspentOutput = UnspentOutput & Pick<OutputColor, 'assetId' | 'quantity'>;

/** Holdings of one asset at an address. */
export type AssetBalance = {
  /** Base58 asset ID. */
  assetId: string;
  /** The 20-byte asset ID hash, hex. */
  assetIdHash: string;
  quantity: bigint;
  outputs: ColoredUnspentOutput[];
};

/** Options of the coloring engine. */
export type ColoringEngineOptions = {
  source: TransactionSource;
  /** Transactions one call may fetch before giving up (default 10 000). */
  maxFetches?: number;
  /** Transactions whose colors are kept (default 100 000, least recently used evicted). */
  cacheSize?: number;
};

/** Colors outputs by walking their Open Assets history through the API. */
export class ColoringEngine {
  private readonly cache = new Map<string, ColoredOutput[]>();
  /** Lookups made and cache hits, for measuring a walk. */
  readonly stats = { fetched: 0, cacheHits: 0 };

  constructor(private readonly opts: ColoringEngineOptions) {}

  /** The color of output `vout` of `txid`. */
  async colorOutput(txid: string, vout: number): Promise<ColoredOutput> {
    const outs = await this.colorTransaction(txid);
    const o = outs[vout];
    if (!o) throw new RangeError(`Transaction ${txid} has no output ${vout}`);
    return o;
  }

  /** The colors of every output of `txid`. */
  async colorTransaction(txid: string): Promise<ColoredOutput[]> {
    const hit = this.cached(txid);
    if (hit) return hit;
    const budget = this.opts.maxFetches ?? 10_000;
    let fetches = 0;
    const fetched = new Map<string, Transaction>();
    const fetch = async (id: string) => {
      if (++fetches > budget) {
        throw new BlockwireError('ERR_ASSET_WALK_TOO_LONG', `Coloring ${txid} needs more than ${budget} transaction lookups`);
      }
      this.stats.fetched++;
      fetched.set(id, await this.opts.source.getTransaction(id));
    };
    // Depth-first, iterative: a transaction is colored once all its inputs' transactions are.
    const stack = [txid];
    while (stack.length) {
      const id = stack[stack.length - 1]!;
      if (this.cached(id)) {
        stack.pop();
        continue;
      }
      if (!fetched.has(id)) await fetch(id);
      const tx = fetched.get(id)!;
      const outputs = [...tx.outputs].sort((a, b) => a.index - b.index);
      if (tx.coinbase || tx.inputs.length === 0 || findMarkerCandidates(outputs).length === 0) {
        this.store(
          id,
          outputs.map((o) => ({ assetId: null, quantity: 0n, kind: 'uncolored', value: o.value, script: o.script })),
        );
        stack.pop();
        continue;
      }
      const missing = [...new Set(tx.inputs.map((i) => i.transaction_hash))].filter((p) => !this.cached(p));
      if (missing.length) {
        await Promise.all(missing.filter((p) => !fetched.has(p)).map(fetch));
        stack.push(...missing);
        continue;
      }
      const prev = tx.inputs.map((i) => {
        const o = this.cache.get(i.transaction_hash)![i.output_index];
        if (!o)
          throw new BlockwireError('ERR_BAD_TRANSACTION', `Input ${i.transaction_hash}:${i.output_index} of ${id} spends no such output`);
        return o;
      });
      const colors = colorTransaction({ coinbase: false, inputs: prev, firstInputScript: prev[0]!.script, outputs });
      this.store(
        id,
        colors.map((c, n) => ({ ...c, value: outputs[n]!.value, script: outputs[n]!.script })),
      );
      stack.pop();
    }
    return this.cached(txid)!;
  }

  private cached(txid: string): ColoredOutput[] | undefined {
    const v = this.cache.get(txid);
    if (v) {
      this.stats.cacheHits++;
      this.cache.delete(txid);
      this.cache.set(txid, v);
    }
    return v;
  }

  private store(txid: string, outs: ColoredOutput[]): void {
    this.cache.set(txid, outs);
    const max = this.opts.cacheSize ?? 100_000;
    while (this.cache.size > max) this.cache.delete(this.cache.keys().next().value!);
  }
}

/** What the asset functions need from the client (BlockwireClient has it all). */
export type AssetClient = BuilderClient & TransactionSource;

/** Options shared by issue and transfer. */
export type AssetTxOptions = {
  /** Fee rate, sat/vB (default 2). */
  feeRate?: bigint | number;
  /** Bitcoin value of each colored output (default 600 sat, above the dust threshold). */
  assetOutputValue?: bigint;
};

/** Options of `issue`. */
export type IssueOptions = AssetTxOptions & {
  /** The issuing key (or a prepared source): the asset ID is the HASH160 of its address's script. */
  issuer: KeyInput | SpendSource;
  /** Address type of the issuing key (default p2wpkh). */
  type?: AddressType;
  quantity: bigint;
  /** Who receives the new units (default the issuer's address). */
  to?: string;
  /** Marker metadata (e.g. `u=<asset definition URL>`). */
  metadata?: Uint8Array | string;
};

/** Options of `transfer`. */
export type TransferOptions = AssetTxOptions & {
  /** The holder: a key (with `type`) or a source, such as a multisig source. */
  from: KeyInput | SpendSource;
  type?: AddressType;
  /** Base58 asset ID. */
  assetId: string;
  quantity: bigint;
  to: string;
  /** Where leftover units go (default the holder's address). */
  assetChangeAddress?: string;
  /** Where leftover bitcoin goes (default the holder's address). */
  changeAddress?: string;
};

function isSource(x: KeyInput | SpendSource): x is SpendSource {
  return typeof x === 'object' && x !== null && 'script' in x && 'fields' in x;
}

/** Open Assets operations for one client. */
export class OpenAssets {
  /** The coloring engine (its cache persists across calls). */
  readonly engine: ColoringEngine;

  constructor(
    private readonly client: AssetClient,
    opts: { engine?: ColoringEngine } = {},
  ) {
    this.engine = opts.engine ?? new ColoringEngine({ source: client });
  }

  /** The unspent outputs of `address` with their colors. */
  async coloredUnspentOutputs(address: string): Promise<ColoredUnspentOutput[]> {
    const utxos = await this.client.listUnspentOutputs(address);
    const out: ColoredUnspentOutput[] = [];
    for (const u of utxos) {
      const c = await this.engine.colorOutput(u.txid, u.vout);
      out.push({ ...u, assetId: c.assetId, quantity: c.quantity });
    }
    return out;
  }

  /** The asset balances of `address` (unspent colored outputs, mempool included). */
  async getBalances(address: string): Promise<AssetBalance[]> {
    const by = new Map<string, AssetBalance>();
    for (const u of await this.coloredUnspentOutputs(address)) {
      if (u.assetId === null) continue;
      const b = by.get(u.assetId) ?? {
        assetId: encodeAssetId(u.assetId, this.client.network),
        assetIdHash: u.assetId,
        quantity: 0n,
        outputs: [],
      };
      b.quantity += u.quantity;
      b.outputs.push(u);
      by.set(u.assetId, b);
    }
    return [...by.values()];
  }

  /** Keeps only uncolored candidates (colored ones must not pay fees: their units would be destroyed). */
  private uncoloredOnly = async (cs: Candidate[]): Promise<Candidate[]> => {
    const keep: Candidate[] = [];
    for (const c of cs) if ((await this.engine.colorOutput(c.txid, c.vout)).assetId === null) keep.push(c);
    return keep;
  };

  private source(x: KeyInput | SpendSource, type: AddressType | undefined): SpendSource {
    return isSource(x) ? x : keySource(x, type ?? 'p2wpkh', this.client.network);
  }

  /**
   * Builds (and signs) a transaction issuing `quantity` units of the issuer's asset:
   * outputs `[to (colored), marker, change]`. Not sent: call `tx.send()`.
   */
  async issue(opts: IssueOptions): Promise<{ assetId: string; tx: BuiltTransaction }> {
    if (opts.quantity <= 0n) throw new RangeError('Issue a positive quantity');
    const issuer = this.source(opts.issuer, opts.type);
    const metadata = typeof opts.metadata === 'string' ? new TextEncoder().encode(opts.metadata) : (opts.metadata ?? new Uint8Array());
    const tx = await new TransactionBuilder(this.client, {
      feeRate: opts.feeRate,
      shuffleOutputs: false,
      changeAddress: issuer.address,
      candidateFilter: this.uncoloredOnly,
    })
      .fromSource(issuer)
      .addOutput({ script: addressToScript(opts.to ?? issuer.address, this.client.network), amount: opts.assetOutputValue ?? 600n })
      .addOutput({ script: markerScript({ quantities: [opts.quantity], metadata }), amount: 0n, data: metadata })
      .build();
    // Every input comes from the issuer's address, so the first one defines the asset ID.
    return { assetId: encodeAssetId(assetIdFromScript(issuer.script), this.client.network), tx };
  }

  /** Builds and signs a transfer (the holder's keys must be enough to sign). Not sent: call `tx.send()`. */
  async transfer(opts: TransferOptions): Promise<BuiltTransaction> {
    return (await this.transferBuilder(opts)).build();
  }

  /** Builds a transfer as a PSBT, signed with the keys at hand, for the other multisig cosigners. */
  async transferPsbt(opts: TransferOptions): Promise<PartialTransaction> {
    return (await this.transferBuilder(opts)).buildPsbt();
  }

  private async transferBuilder(opts: TransferOptions): Promise<TransactionBuilder> {
    if (opts.quantity <= 0n) throw new RangeError('Transfer a positive quantity');
    const from = this.source(opts.from, opts.type);
    const assetHash = hex.encode(decodeAssetId(opts.assetId, this.client.network));
    const held = (await this.coloredUnspentOutputs(from.address))
      .filter((u) => u.assetId === assetHash && !this.client.reservations.isReserved(`${u.txid}:${u.vout}`))
      .sort((a, b) => (a.quantity === b.quantity ? 0 : a.quantity > b.quantity ? -1 : 1));
    const picked: ColoredUnspentOutput[] = [];
    let units = 0n;
    for (const u of held) {
      if (units >= opts.quantity) break;
      picked.push(u);
      units += u.quantity;
    }
    if (units < opts.quantity) {
      throw new BlockwireError(
        'ERR_INSUFFICIENT_ASSET',
        `${from.address} holds ${units} unreserved units of ${opts.assetId}; ${opts.quantity} requested`,
      );
    }
    const value = opts.assetOutputValue ?? 600n;
    const change = units - opts.quantity;
    const quantities = change > 0n ? [opts.quantity, change] : [opts.quantity];
    const b = new TransactionBuilder(this.client, {
      feeRate: opts.feeRate,
      shuffleOutputs: false,
      changeAddress: opts.changeAddress ?? from.address,
      candidateFilter: this.uncoloredOnly,
    }).fromSource(from);
    // Colored inputs first, in order: order-based coloring hands their units to the outputs after the marker.
    for (const u of picked) b.spend(u, from);
    b.addOutput({ script: markerScript({ quantities, metadata: new Uint8Array() }), amount: 0n, data: new Uint8Array() });
    b.addOutput({ script: addressToScript(opts.to, this.client.network), amount: value });
    if (change > 0n) b.addOutput({ script: addressToScript(opts.assetChangeAddress ?? from.address, this.client.network), amount: value });
    return b;
  }
}
