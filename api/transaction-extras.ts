/**
 * What /v1 adds to the transaction view: fee (inputs less outputs, from the index), size, vsize,
 * weight and fee rate (a confirmed transaction's size and weight come with the node's answer its
 * view is built of, api/node-transactions.ts; a mempool transaction's from the bytes the index
 * keeps; a view built without the node's transaction asks the node for the serialized
 * transaction, or its block, in one call), and whether it can be replaced:
 * `bip125_replaceable` as Core's mempool entry says it (it or an unconfirmed ancestor signals,
 * BIP125), `replaceable` also true when the node replaces any mempool transaction (full-RBF,
 * `getmempoolinfo.fullrbf`); both false once confirmed. Fields the node must give are null
 * while it cannot be reached.
 * @module
 */
import { decodeBlock } from '../src/bitcoin/block.js';
import { hashToHex } from '../src/bitcoin/hash.js';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { transactionSchema } from './schemas.js';
import type { ResolvedApiDeps } from './deps.js';
import type { TransactionView, TxSizes } from './transaction-view.js';

export type RawExtras = {
  fee: number | null;
  fee_rate: number | null;
  size: number | null;
  vsize: number | null;
  weight: number | null;
  replaceable: boolean | null;
  bip125_replaceable: boolean | null;
};

/** Where the serialized transactions come from. */
export type RawSource =
  { kind: 'block'; hash: string } | { kind: 'confirmed'; blockHash: string; height: number } | { kind: 'mempool'; raw: Uint8Array };

/** sat/vB with two decimals, as fee-rate tools print it. */
function feeRate(fee: number, vsize: number): number {
  return Math.round((fee / vsize) * 100) / 100;
}

function extras(
  view: TransactionView,
  sizes: TxSizes | undefined,
  replace: { replaceable: boolean | null; bip125: boolean | null },
): RawExtras {
  const vsize = sizes && Math.ceil(sizes.weight / 4);
  return {
    fee: view.fee,
    fee_rate: view.fee !== null && vsize ? feeRate(view.fee, vsize) : null,
    size: sizes?.size ?? null,
    vsize: vsize ?? null,
    weight: sizes?.weight ?? null,
    replaceable: replace.replaceable,
    bip125_replaceable: replace.bip125,
  };
}

const CONFIRMED = { replaceable: false, bip125: false };

/** Whether the node could not answer (unreachable, warming up, or it does not know the thing). */
async function fromNode<T>(deps: ResolvedApiDeps, call: () => Promise<T> | undefined): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    deps.log.warn({ err }, 'node call for the transaction view failed');
    return undefined;
  }
}

/** A view with its transaction's sizes when its build had them (undefined: ask the node). */
export type SizedView = { view: TransactionView; sizes: TxSizes | undefined };

/** The views with their /v1 fields. */
export async function withRawExtras(
  deps: ResolvedApiDeps,
  views: readonly SizedView[],
  source: RawSource,
): Promise<(TransactionView & RawExtras)[]> {
  const node = deps.node;
  if (source.kind === 'block') {
    const unsized = views.some((v) => !v.sizes);
    const raw = unsized ? await fromNode(deps, () => node?.getBlockRaw?.(source.hash)) : undefined;
    const byTxid = new Map<string, DecodedTx>();
    if (raw) for (const tx of decodeBlock(raw).txs) byTxid.set(hashToHex(tx.txid), tx);
    return views.map(({ view, sizes }) => ({ ...view, ...extras(view, sizes ?? byTxid.get(view.transaction_hash), CONFIRMED) }));
  }
  const [only] = views;
  if (views.length !== 1 || !only) throw new RangeError('one transaction view expected');
  const { view, sizes } = only;
  if (source.kind === 'confirmed') {
    if (sizes) return [{ ...view, ...extras(view, sizes, CONFIRMED) }];
    // (Core will not hand out the genesis coinbase as a transaction: it is read from its block)
    if (source.height === 0) return withRawExtras(deps, views, { kind: 'block', hash: source.blockHash });
    const raw = await fromNode(deps, () => node?.getRawTransaction?.(view.transaction_hash, source.blockHash));
    return [{ ...view, ...extras(view, raw ? decodeTx(raw) : undefined, CONFIRMED) }];
  }
  const tx = decodeTx(source.raw);
  const answers = await fromNode(deps, () =>
    node?.batch?.<Record<string, unknown>>([
      { method: 'getmempoolentry', params: [view.transaction_hash] },
      { method: 'getmempoolinfo', params: [] },
    ]),
  );
  const entry = answers?.[0];
  const info = answers?.[1];
  const bip125 =
    entry && !(entry instanceof Error) && typeof entry['bip125-replaceable'] === 'boolean'
      ? (entry['bip125-replaceable'] as boolean)
      : null;
  const fullRbf = info && !(info instanceof Error) ? info.fullrbf === true : null;
  const replaceable = fullRbf === true ? true : bip125 !== null && fullRbf !== null ? bip125 : null;
  return [{ ...view, ...extras(view, tx, { replaceable, bip125 }) }];
}

const nullableInt = { type: ['integer', 'null'] } as const;

/** JSON schema of the /v1 transaction view. */
export const txViewSchema = {
  ...transactionSchema,
  required: [...transactionSchema.required, 'fee', 'fee_rate', 'size', 'vsize', 'weight', 'replaceable', 'bip125_replaceable'],
  properties: {
    ...transactionSchema.properties,
    fee: { ...nullableInt, description: 'sat: inputs less outputs (0 for a coinbase)' },
    fee_rate: { type: ['number', 'null'], description: 'sat/vB, two decimals' },
    size: { ...nullableInt, description: 'serialized bytes, witness included (null while the node cannot be reached)' },
    vsize: { ...nullableInt, description: 'virtual size, vB (BIP141)' },
    weight: { ...nullableInt, description: 'weight units (BIP141)' },
    replaceable: {
      type: ['boolean', 'null'],
      description: 'a mempool transaction the node would let a higher-fee one replace (BIP125 signal or full-RBF); false once confirmed',
    },
    bip125_replaceable: {
      type: ['boolean', 'null'],
      description: "it or an unconfirmed ancestor signals BIP125 (Core's mempool entry); false once confirmed",
    },
  },
} as const;
