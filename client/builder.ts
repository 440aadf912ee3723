/**
 * TransactionBuilder: outputs to addresses and data (OP_RETURN) outputs, inputs selected
 * automatically from the unspent outputs of its sources (fetched from the API), fee and change,
 * dust threshold, output shuffling, client-side signing with WIF keys (P2PKH, P2SH-P2WPKH,
 * P2WPKH, P2TR) and multisig cosigners, a PSBT for one-signer-at-a-time flows, and sending.
 * Outputs it selects are reserved in the client's book until the transaction is sent (then kept
 * for a while) or the attempt fails (then released), so concurrent builders never share one.
 * @module
 */
import { hex, utf8 } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { ApiError, InsufficientFundsError } from './errors.js';
import { ADDRESS_TYPES, decodeAddress, type AddressType } from './keys.js';
import type { MultisigAccount } from './multisig.js';
import type { Network } from './network.js';
import { checkDust, planTransaction, type Candidate, type Plan, type PlannedOutput } from './plan.js';
import { assembleTransaction, finalizeTransaction, signWithKeys, toPsbt } from './psbt.js';
import { outpoint, type Reservation, type Reservations } from './reservations.js';
import type { SendOptions } from './send.js';
import { keySource, multisigSource, signingKey, type KeyInput, type SpendSource } from './sources.js';
import type { UnspentOutput } from './types.js';

/** What a builder needs from the client (BlockwireClient has it all). */
export type BuilderClient = {
  readonly network: Network;
  readonly reservations: Reservations;
  listUnspentOutputs(address: string, opts?: { minConf?: number }): Promise<UnspentOutput[]>;
  sendTransaction(tx: { hex: string }, opts?: SendOptions): Promise<string>;
  /** The server's fee rates by confirmation target (`GET /fee-estimates`): used when no `feeRate` is given. */
  getFeeEstimates?(): Promise<Record<string, number>>;
  /**
   * A transaction's serialization (`GET /transactions/{hash}/hex`): a legacy (non-segwit) input
   * carries its whole previous transaction as `non_witness_utxo`, as BIP174 asks and signers such
   * as Bitcoin Core and hardware wallets require (without this method: the prevout alone).
   */
  getTransactionHex?(hash: string): Promise<string>;
};

/** Options of a builder. */
export type BuilderOptions = {
  /**
   * Fee rate in sat/vB, an integer. Default: the server's estimate for `confirmationTarget`
   * (rounded up), or 2 when the client cannot ask for estimates.
   */
  feeRate?: bigint | number;
  /** Blocks to confirm within, for the default fee rate (default 6; 1–25, 144, 504 or 1008). */
  confirmationTarget?: number;
  /** Allow payment outputs below the dust threshold (default false). */
  allowDustyOutputs?: boolean;
  /** Dust threshold in sat (default 546). */
  dustThreshold?: bigint;
  /** Shuffle the outputs, change included (default true). */
  shuffleOutputs?: boolean;
  /** Where change goes (default: the first source's address). */
  changeAddress?: string;
  /** Only spend outputs with this many confirmations (default 0: mempool outputs too). */
  minConfirmations?: number;
  /** Signal BIP125 replaceability (default true). */
  rbf?: boolean;
  lockTime?: number;
  /** Narrows the candidate outputs before selection (Open Assets keeps colored outputs out of fee funding). */
  candidateFilter?: (candidates: Candidate[]) => Promise<Candidate[]> | Candidate[];
};

/** An input or output of a built transaction, as the caller sees it. */
export type BuiltInput = { txid: string; vout: number; value: bigint; address: string };
export type BuiltOutput = { index: number; amount: bigint; script: string; address?: string; data?: string };

/** A signed transaction whose inputs are reserved until it is sent or released. */
export type BuiltTransaction = {
  txid: string;
  hex: string;
  fee: bigint;
  vsize: number;
  inputs: BuiltInput[];
  outputs: BuiltOutput[];
  changeIndex: number | null;
  /** Broadcasts with `sendTransaction`; keeps the inputs reserved on success, releases them on a final failure. */
  send(opts?: SendOptions): Promise<string>;
  /** Gives the inputs back without sending. */
  release(): void;
};

/** An unsigned or partly signed transaction (base64 PSBT) whose inputs are reserved. */
export type PartialTransaction = {
  psbt: string;
  inputs: BuiltInput[];
  outputs: BuiltOutput[];
  fee: bigint;
  changeIndex: number | null;
  /** Call after broadcasting the finalized transaction: keeps the inputs reserved for the TTL. */
  commit(): void;
  /** Gives the inputs back (the multisig flow was abandoned). */
  release(): void;
};

type PlannedInput = { utxo: Candidate; required: boolean };

/** Builds, signs and sends transactions for one client. */
export class TransactionBuilder {
  private readonly outputs: PlannedOutput[] = [];
  private readonly sources: SpendSource[] = [];
  private readonly requiredInputs: PlannedInput[] = [];
  private readonly extraKeys: Uint8Array[] = [];

  constructor(
    private readonly client: BuilderClient,
    private readonly options: BuilderOptions = {},
  ) {}

  /** Pays `amount` sat to `address`. */
  to(address: string, amount: bigint | number): this {
    const sats = BigInt(amount);
    this.outputs.push({ script: decodeAddress(address, this.client.network).script, amount: sats, address });
    return this;
  }

  /** Adds an output with a raw script (advanced; OP_RETURN markers and the like). */
  addOutput(output: { script: Uint8Array; amount: bigint; data?: Uint8Array }): this {
    this.outputs.push({ ...output });
    return this;
  }

  /** Adds a data output: `OP_RETURN <payload>` with 0 sat (text as UTF-8, or hex with `'hex'`). */
  data(payload: Uint8Array | string, encoding: 'utf8' | 'hex' = 'utf8'): this {
    const bytes = typeof payload === 'string' ? (encoding === 'hex' ? hex.decode(payload) : utf8.decode(payload)) : payload;
    this.outputs.push({ script: btc.Script.encode(['RETURN', bytes]), amount: 0n, data: bytes });
    return this;
  }

  /**
   * Funds (and signs) from a key's addresses: each `type` given (default all four) is a source
   * whose unspent outputs may be selected.
   */
  from(key: KeyInput, types: AddressType | readonly AddressType[] = ADDRESS_TYPES): this {
    for (const t of typeof types === 'string' ? [types] : types) this.sources.push(keySource(key, t, this.client.network));
    return this;
  }

  /** Funds from a multisig account; `keys` are the cosigners' keys available here (none for a PSBT-only flow). */
  fromMultisig(account: MultisigAccount, keys: readonly KeyInput[] = []): this {
    this.sources.push(multisigSource(account, keys));
    return this;
  }

  /** Funds from a prepared source. */
  fromSource(source: SpendSource): this {
    this.sources.push(source);
    return this;
  }

  /** Spends this output first, whatever the selection does (in the order added). */
  spend(utxo: { txid: string; vout: number; value: bigint; confirmations?: number }, source: SpendSource): this {
    this.requiredInputs.push({ utxo: { ...utxo, confirmations: utxo.confirmations ?? 0, source }, required: true });
    return this;
  }

  /** More keys to sign with (multisig cosigners). */
  signWith(...keys: KeyInput[]): this {
    for (const k of keys) this.extraKeys.push(signingKey(k, this.client.network));
    return this;
  }

  /** Sends change to `address`. */
  changeTo(address: string): this {
    decodeAddress(address, this.client.network);
    this.options.changeAddress = address;
    return this;
  }

  /** Selects, reserves and signs; every input must end fully signed. */
  async build(): Promise<BuiltTransaction> {
    const { plan, reservation } = await this.planAndReserve();
    try {
      const tx = assembleTransaction(plan, this.options);
      await this.addPreviousTransactions(tx, plan);
      signWithKeys(tx, this.keysFor(plan));
      const final = finalizeTransaction(tx);
      let sent = false;
      return {
        ...final,
        ...describe(plan),
        send: async (opts) => {
          try {
            const txid = await this.client.sendTransaction(final, opts);
            sent = true;
            reservation.commit();
            return txid;
          } catch (err) {
            // A transaction the server refused for good leaves its inputs unspent. After a
            // retryable failure the transaction may still reach the node: keep them held.
            if (err instanceof ApiError && !err.retry) reservation.release();
            else reservation.commit();
            throw err;
          }
        },
        release: () => {
          if (!sent) reservation.release();
        },
      };
    } catch (err) {
      reservation.release();
      throw err;
    }
  }

  /** Builds, signs and broadcasts (with retry). Returns the built transaction. */
  async send(opts?: SendOptions): Promise<BuiltTransaction> {
    const built = await this.build();
    await built.send(opts);
    return built;
  }

  /**
   * Selects, reserves and signs with the keys at hand, without finalizing: a PSBT to pass to the
   * other signers (`signPsbt`, `combinePsbts`, `finalizePsbt`).
   */
  async buildPsbt(): Promise<PartialTransaction> {
    const { plan, reservation } = await this.planAndReserve();
    try {
      const tx = assembleTransaction(plan, this.options);
      await this.addPreviousTransactions(tx, plan);
      signWithKeys(tx, this.keysFor(plan));
      return { psbt: toPsbt(tx), fee: plan.fee, ...describe(plan), commit: reservation.commit, release: reservation.release };
    } catch (err) {
      reservation.release();
      throw err;
    }
  }

  /** Each legacy input's previous transaction as its `non_witness_utxo` (one read per distinct transaction). */
  private async addPreviousTransactions(tx: btc.Transaction, plan: Plan): Promise<void> {
    const legacy = plan.inputs.flatMap((c, i) => (isLegacy(c.source) ? [{ i, txid: c.txid }] : []));
    if (legacy.length === 0) return;
    // (a BuilderClient that cannot read transactions signs from the prevout alone, as scure allows)
    const read = this.client.getTransactionHex?.bind(this.client);
    if (!read) return;
    const txids = [...new Set(legacy.map((l) => l.txid))];
    const raw = new Map(await Promise.all(txids.map(async (t) => [t, hex.decode(await read(t))] as const)));
    for (const { i, txid } of legacy) tx.updateInput(i, { nonWitnessUtxo: raw.get(txid)! }, true);
  }

  private keysFor(plan: Plan): Uint8Array[] {
    const keys = new Map<string, Uint8Array>();
    for (const c of plan.inputs) for (const k of c.source.keys) keys.set(hex.encode(k), k);
    for (const k of this.extraKeys) keys.set(hex.encode(k), k);
    return [...keys.values()];
  }

  private async candidates(): Promise<Candidate[]> {
    const minConf = this.options.minConfirmations ?? 0;
    const lists = await Promise.all(
      this.sources.map(async (source) => {
        const utxos = await this.client.listUnspentOutputs(source.address, { minConf: minConf || undefined });
        const script = hex.encode(source.script);
        return utxos
          .filter((u) => u.script === script && u.confirmations >= minConf)
          .map((u): Candidate => ({ txid: u.txid, vout: u.vout, value: u.value, confirmations: u.confirmations, source }));
      }),
    );
    return lists.flat();
  }

  /** The fee rate given, else the server's estimate for the confirmation target (rounded up), else 2 sat/vB. */
  private async feeRate(): Promise<bigint> {
    if (this.options.feeRate !== undefined) return BigInt(this.options.feeRate);
    if (!this.client.getFeeEstimates) return 2n;
    const target = String(this.options.confirmationTarget ?? 6);
    const rate = (await this.client.getFeeEstimates())[target];
    if (rate === undefined) throw new RangeError(`no fee estimate for ${target} blocks (targets: 1–25, 144, 504, 1008)`);
    return BigInt(Math.ceil(rate));
  }

  private async planAndReserve(): Promise<{ plan: Plan; reservation: Reservation }> {
    if (this.sources.length === 0 && this.requiredInputs.length === 0) {
      throw new TypeError('Nothing to spend: call from(key), fromMultisig(account) or spend(utxo, source) first');
    }
    if (this.outputs.length === 0) throw new RangeError('A transaction needs at least one output');
    if (!this.options.allowDustyOutputs) checkDust(this.outputs, this.options.dustThreshold);
    const [fetched, feeRate] = await Promise.all([this.candidates(), this.feeRate()]);
    const all = this.options.candidateFilter ? await this.options.candidateFilter(fetched) : fetched;
    // From here to reserve() nothing awaits: no other builder of this client can interleave.
    const book = this.client.reservations;
    const required = this.requiredInputs.map((r) => r.utxo);
    for (const r of required) {
      if (book.isReserved(outpoint(r.txid, r.vout)))
        throw new Error(`Output ${r.txid}:${r.vout} is reserved by another transaction of this client`);
    }
    const free = all.filter((c) => !book.isReserved(outpoint(c.txid, c.vout)));
    const first = this.sources[0] ?? required[0]!.source;
    let plan: Plan;
    try {
      plan = planTransaction({
        outputs: this.outputs,
        candidates: free,
        required,
        feeRate,
        changeAddress: this.options.changeAddress ?? first.address,
        network: this.client.network,
        dustThreshold: this.options.dustThreshold,
        allowDustyOutputs: this.options.allowDustyOutputs,
        shuffleOutputs: this.options.shuffleOutputs,
      });
    } catch (err) {
      if (err instanceof InsufficientFundsError && free.length < all.length) {
        throw new InsufficientFundsError(
          err.required,
          err.available,
          `${all.length - free.length} more outputs are reserved by other transactions of this client`,
        );
      }
      throw err;
    }
    const reservation = book.reserve(plan.inputs.map((c) => outpoint(c.txid, c.vout)));
    return { plan, reservation };
  }
}

function describe(plan: Plan): { inputs: BuiltInput[]; outputs: BuiltOutput[]; changeIndex: number | null } {
  return {
    inputs: plan.inputs.map((c) => ({ txid: c.txid, vout: c.vout, value: c.value, address: c.source.address })),
    outputs: plan.outputs.map((o, index) => ({
      index,
      amount: o.amount,
      script: hex.encode(o.script),
      ...(o.address !== undefined ? { address: o.address } : {}),
      ...(o.data !== undefined ? { data: hex.encode(o.data) } : {}),
    })),
    changeIndex: plan.changeIndex,
  };
}

/** Creates a builder (same as `new TransactionBuilder(client, options)`). */
export function createTransactionBuilder(client: BuilderClient, options?: BuilderOptions): TransactionBuilder {
  return new TransactionBuilder(client, options);
}

/** Does spending `source` sign without a witness (P2PKH, or P2SH whose redeem script is no witness program)? */
function isLegacy(source: SpendSource): boolean {
  const s = source.script;
  if (s.length === 25 && s[0] === 0x76 && s[1] === 0xa9) return true;
  if (s.length === 23 && s[0] === 0xa9) {
    const r = source.fields.redeemScript;
    const witnessProgram =
      r !== undefined && r.length >= 4 && r.length <= 42 && (r[0] === 0x00 || (r[0]! >= 0x51 && r[0]! <= 0x60)) && r[1] === r.length - 2;
    return !witnessProgram;
  }
  return false;
}
