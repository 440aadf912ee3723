/**
 * Wallets in the SDK (the server's /v1/wallets, docs/wallets.md): create and read them, and
 * pay from one — its unspent outputs (with their derivation paths) are the candidates, change
 * goes to its next change address (reserved, so two payments never share one), the result is
 * a PSBT, signed on the client with the private extended keys given. Keys never leave the
 * client: a single-key output (pkh, wpkh, sh(wpkh), tr) is signed by the key its path derives
 * from the extended key given; a multisig output (wsh(multi|sortedmulti), sh(wsh(…)),
 * sh(multi…)) is matched to its chain by deriving the chain's descriptor at its index, and
 * signed by every cosigner whose extended key (or master key, by the key origin) is given.
 * @module
 */
import { HDKey } from '@scure/bip32';
import { hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import type * as BtcSigner from '@scure/btc-signer';
import { BlockwireError } from './errors.js';
import { nextLink, type Http } from './http.js';
import { decodeAddress } from './keys.js';
import { getNetwork, type Network } from './network.js';
import { planTransaction, type Candidate, type Plan, type PlannedOutput } from './plan.js';
import { assembleTransaction, finalizeTransaction, inputSignatures, signWithKeys, toPsbt } from './psbt.js';
import { multisigSource, type InputFields, type SpendSource } from './sources.js';
import { bip32VersionsOf, cosignerKeys, multisigAt, parseMultisigChain, type MultisigChain } from './wallet-descriptors.js';
import type { Page, UnspentOutput } from './types.js';
import { parseUnspent, toSats, type RawUnspent } from './unspent.js';

/** A wallet as the server answers it. */
export type Wallet = {
  id: string;
  /** As tracked: normalized and checksummed as Bitcoin Core prints them. */
  descriptors: string[];
  gap_limit: number;
  created_at: string;
  chains: { descriptor: string; change: boolean; addresses: number; last_used_index: number | null }[];
};

/** What a wallet is created from: descriptors, or one bare extended public key. */
export type WalletSpec = ({ descriptors: string[] } | { xpub: string }) & { gap_limit?: number };

export type WalletBalance = { confirmed: bigint; unconfirmed: bigint };

export type WalletHistoryEntry = {
  transaction_hash: string;
  height: number | null;
  confirmations: number;
  received: bigint;
  sent: bigint;
  net: bigint;
};

/**
 * An unspent output of a wallet: the SDK's one `UnspentOutput` (`txid`/`vout`, as
 * `listUnspentOutputs` and `builder.spend` name them) with the address it pays and where the
 * wallet derives that address.
 */
export type WalletUnspentOutput = UnspentOutput & {
  address: string;
  /** From the master key when the descriptor gives the key origin (`m/84h/0h/0h/0/5`), else from the extended key (`0/5`). */
  path: string;
  change: boolean;
  address_index: number;
};

export type WalletAddress = { address: string; path: string; change: boolean; index: number; used: boolean; reserved: boolean };

/** A payment built from a wallet. */
export type WalletPayment = {
  /** The unsigned (or signed, see `signed`) transaction as a base64 PSBT. */
  psbt: string;
  plan: Plan;
  /** The change address used (reserved on the server), or null without change. */
  change: { address: string; path: string } | null;
  /** Each input's derivation path, in input order. */
  paths: string[];
  /** When the keys given complete every input's signatures: the signed transaction. */
  signed: { hex: string; txid: string; vsize: number; fee: bigint } | null;
};

/** Options of `WalletsApi.pay`. */
export type WalletPaymentRequest = {
  outputs: { address: string; amount: bigint }[];
  /** Fee rate, sat/vB (integer). */
  feeRate: bigint;
  /**
   * The wallet's extended key: the account key of its descriptor (`xprv`/`tprv` signs, `xpub`/
   * `tpub` builds an unsigned PSBT), or the master key when the descriptor gives the key origin.
   * A multisig wallet takes the keys of the cosigners held here (a list); with fewer than its
   * threshold the PSBT carries their partial signatures for the others (`signPsbt`, `finalizePsbt`).
   */
  key: HDKey | string | readonly (HDKey | string)[];
  /** Only outputs with at least this many confirmations (default 0: mempool outputs too). */
  minConf?: number;
  /** Signal BIP125 replaceability (default true). */
  rbf?: boolean;
  /** Shuffle the outputs, change included (default true). */
  shuffleOutputs?: boolean;
};

const enc = encodeURIComponent;

/** The key at `path` below `root`: an absolute path (`m/…`) is taken from `root`'s depth on. */
export function deriveAtPath(root: HDKey, path: string): HDKey {
  const parts = path.split('/');
  const absolute = parts[0] === 'm';
  const steps = (absolute ? parts.slice(1) : parts).map((p) => {
    const hardened = p.endsWith("'") || p.endsWith('h');
    const n = Number(hardened ? p.slice(0, -1) : p);
    if (!Number.isInteger(n) || n < 0 || n >= 0x80000000) throw new TypeError(`Invalid derivation path ${path}`);
    return hardened ? n + 0x80000000 : n;
  });
  const rest = absolute ? steps.slice(root.depth) : steps;
  return rest.reduce((k, s) => k.deriveChild(s), root);
}

/** The single-key spend source of a wallet output whose key is `child`, found by matching its script; null when it is none of them. */
function singleKeySource(u: WalletUnspentOutput, child: HDKey, network: Network): SpendSource | null {
  const pub = child.publicKey!;
  const same = (s: Uint8Array) => hex.encode(s) === u.script;
  const wpkh = btc.p2wpkh(pub, network);
  let fields: InputFields | undefined;
  if (same(btc.p2pkh(pub, network).script) || same(wpkh.script)) fields = {};
  else if (same(btc.p2sh(wpkh, network).script)) fields = { redeemScript: wpkh.script };
  else if (same(btc.p2tr(pub.subarray(1), undefined, network).script)) fields = { tapInternalKey: pub.subarray(1) };
  if (!fields) return null;
  return { address: u.address, script: hex.decode(u.script), fields, keys: child.privateKey ? [child.privateKey] : [], required: 1 };
}

/**
 * The spend source of a wallet output: single-key when a root's key at its path pays it, else
 * multisig when one of the wallet's multisig chains (on its side: receive or change) derives its
 * script at its index. @throws BlockwireError when neither.
 */
function walletSource(u: WalletUnspentOutput, roots: readonly HDKey[], chains: readonly MultisigChain[], network: Network): SpendSource {
  for (const root of roots) {
    let child: HDKey;
    try {
      child = deriveAtPath(root, u.path);
    } catch {
      continue; // (a path this root cannot derive: another key's, or hardened from a public key)
    }
    const single = singleKeySource(u, child, network);
    if (single) return single;
  }
  for (const chain of chains) {
    const account = multisigAt(chain, u.address_index);
    if (hex.encode(account.script) === u.script) return multisigSource(account, cosignerKeys(chain, u.address_index, roots));
  }
  throw new BlockwireError(
    'ERR_WALLET_KEY_MISMATCH',
    `Output ${u.txid}:${u.vout} (${u.path}) is paid to no key given nor to a multisig chain of the wallet`,
  );
}

/** The wallet routes of one client (`client.wallets`). */
export class WalletsApi {
  constructor(
    private readonly http: Http,
    private readonly network: Network,
  ) {}

  /** `POST /wallets`: tracks descriptors (or a bare xpub/ypub/zpub) at once, no rescan. */
  async create(spec: WalletSpec): Promise<Wallet> {
    return (await this.http.request<Wallet>('POST', '/wallets', { body: spec })).data;
  }

  async list(): Promise<Wallet[]> {
    return (await this.http.request<Wallet[]>('GET', '/wallets')).data;
  }

  async get(id: string): Promise<Wallet> {
    return (await this.http.request<Wallet>('GET', `/wallets/${enc(id)}`)).data;
  }

  async delete(id: string): Promise<void> {
    await this.http.request<unknown>('DELETE', `/wallets/${enc(id)}`);
  }

  async balance(id: string): Promise<WalletBalance> {
    const r = (await this.http.request<{ confirmed: number; unconfirmed: number }>('GET', `/wallets/${enc(id)}/balance`)).data;
    return { confirmed: toSats(r.confirmed), unconfirmed: toSats(r.unconfirmed) };
  }

  /** One page of the merged history (newest first); pass `page.next` back as `next`. */
  async history(id: string, opts: { limit?: number; next?: string } = {}): Promise<Page<WalletHistoryEntry>> {
    type Raw = Omit<WalletHistoryEntry, 'received' | 'sent' | 'net'> & { received: number; sent: number; net: number };
    return this.page<Raw, WalletHistoryEntry>(opts.next ?? `/wallets/${enc(id)}/history`, opts.next ? {} : { limit: opts.limit }, (e) => ({
      ...e,
      received: toSats(e.received),
      sent: toSats(e.sent),
      net: toSats(e.net),
    }));
  }

  /** Every unspent output of the wallet (all pages). */
  async unspentOutputs(id: string): Promise<WalletUnspentOutput[]> {
    type Raw = RawUnspent & Pick<WalletUnspentOutput, 'address' | 'path' | 'change' | 'address_index'>;
    const parse = (u: Raw): WalletUnspentOutput => ({
      ...parseUnspent(u),
      address: u.address,
      path: u.path,
      change: u.change,
      address_index: u.address_index,
    });
    const all: WalletUnspentOutput[] = [];
    let page = await this.page<Raw, WalletUnspentOutput>(`/wallets/${enc(id)}/unspentoutputs`, { limit: 10_000 }, parse);
    for (;;) {
      all.push(...page.items);
      if (!page.next) return all;
      page = await this.page<Raw, WalletUnspentOutput>(page.next, {}, parse);
    }
  }

  /** One page of the wallet's addresses. */
  async addresses(
    id: string,
    opts: { used?: boolean; change?: boolean; limit?: number; next?: string } = {},
  ): Promise<Page<WalletAddress>> {
    const query = opts.next
      ? {}
      : {
          used: opts.used === undefined ? undefined : String(opts.used),
          change: opts.change === undefined ? undefined : String(opts.change),
          limit: opts.limit,
        };
    return this.page<WalletAddress, WalletAddress>(opts.next ?? `/wallets/${enc(id)}/addresses`, query, (a) => a);
  }

  /** `POST /wallets/{id}/next-address`: the first unused receive (or change) address; `reserve` keeps it from any later call. */
  async nextAddress(
    id: string,
    opts: { change?: boolean; reserve?: boolean } = {},
  ): Promise<{ address: string; path: string; index: number; change: boolean }> {
    return (
      await this.http.request<{ address: string; path: string; index: number; change: boolean }>(
        'POST',
        `/wallets/${enc(id)}/next-address`,
        { body: { change: opts.change ?? false, reserve: opts.reserve ?? false } },
      )
    ).data;
  }

  /**
   * Builds a payment from the wallet's unspent outputs, with change to its next change address
   * (reserved), as a PSBT; signs and finalizes it when `key` is private (broadcast it with
   * `client.sendTransaction(payment.signed.hex)`).
   * @throws InsufficientFundsError, DustError, BlockwireError (an output the key cannot spend)
   */
  async pay(id: string, req: WalletPaymentRequest): Promise<WalletPayment> {
    const net = getNetwork(this.network);
    const roots = (Array.isArray(req.key) ? req.key : [req.key]).map((k: HDKey | string) =>
      typeof k === 'string' ? HDKey.fromExtendedKey(k, bip32VersionsOf(net)) : k,
    );
    const minConf = req.minConf ?? 0;
    const utxos = (await this.unspentOutputs(id)).filter((u) => u.confirmations >= minConf);
    const wallet = await this.get(id);
    const multisig = (change: boolean) =>
      wallet.chains.filter((c) => c.change === change).flatMap((c) => parseMultisigChain(c.descriptor, net) ?? []);
    const chains = { receive: multisig(false), change: multisig(true) };
    const candidates: Candidate[] = utxos.map((u) => ({
      txid: u.txid,
      vout: u.vout,
      value: u.value,
      confirmations: u.confirmations,
      source: walletSource(u, roots, u.change ? chains.change : chains.receive, net),
    }));
    const outputs: PlannedOutput[] = req.outputs.map((o) => ({
      script: decodeAddress(o.address, net).script,
      amount: o.amount,
      address: o.address,
    }));
    const change = await this.nextAddress(id, { change: true, reserve: true });
    const plan = planTransaction({
      outputs,
      candidates,
      feeRate: req.feeRate,
      changeAddress: change.address,
      network: net,
      ...(req.shuffleOutputs !== undefined ? { shuffleOutputs: req.shuffleOutputs } : {}),
    });
    const tx: BtcSigner.Transaction = assembleTransaction(plan, { rbf: req.rbf ?? true });
    const paths = plan.inputs.map((c) => utxos.find((u) => u.txid === c.txid && u.vout === c.vout)!.path);
    let signed: WalletPayment['signed'] = null;
    const keys = plan.inputs.flatMap((c) => c.source.keys);
    if (keys.length > 0) {
      signWithKeys(tx, keys);
      // Finalized when the keys given complete every input; else the PSBT carries the partial signatures.
      if (inputSignatures(tx).every((s) => s.present >= s.required)) signed = finalizeTransaction(tx);
    }
    return {
      psbt: toPsbt(tx),
      plan,
      change: plan.changeIndex === null ? null : { address: change.address, path: change.path },
      paths,
      signed,
    };
  }

  private async page<R, T>(pathOrUrl: string, query: Record<string, string | number | undefined>, parse: (r: R) => T): Promise<Page<T>> {
    const r = await this.http.request<R[]>('GET', pathOrUrl, { query });
    if (!Array.isArray(r.data)) throw new TypeError(`Expected a JSON array from ${pathOrUrl}`);
    const link = nextLink(r.headers.get('link'));
    return { items: r.data.map(parse), next: link === null ? null : new URL(link, r.url).toString() };
  }
}
