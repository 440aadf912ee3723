/**
 * The shapes the API answers, with the spec's field names. Amounts are `bigint` satoshis: the
 * client converts the server's decimal strings (and numbers) so that no amount passes through a
 * float.
 * @module
 */
import type { KnownEventType } from './event-types.js';

/** `GET /blockchain`. */
export type BlockchainStatus = { best_block_hash: string; best_height: number };

/** `GET /blocks/{hash}`. */
export type Block = {
  block_hash: string;
  height: number;
  /** ISO 8601 UTC time of the block. */
  confirmation_time: string;
  parent: string;
  /** Hashes of the following blocks; may be absent. */
  children?: string[];
  transaction_list: string[];
};

/**
 * An unspent output, named as a transaction builder spends it (`builder.spend(utxo, source)`) and
 * as Bitcoin Core's `listunspent` names it: `txid` and `vout` (the API's `transaction_hash` and
 * `index` of `GET /addresses/{address}/unspentoutputs`).
 */
export type UnspentOutput = {
  txid: string;
  vout: number;
  value: bigint;
  /** Output script, hex. */
  script: string;
  /** 0 while in the mempool. */
  confirmations: number;
};

/** An input of a transaction. */
export type TransactionInput = {
  transaction_hash: string;
  /** -1 for the coinbase input. */
  output_index: number;
  address: string[];
  /** Null for the coinbase input (the server sends ""). */
  value: bigint | null;
};

/** An output of a transaction. */
export type TransactionOutput = {
  index: number;
  address: string[];
  /** Output script, hex. */
  script: string;
  value: bigint;
  used: boolean;
  /** OP_RETURN payload, hex (data outputs only). */
  data?: string;
  metadata?: unknown;
};

/** `GET /transactions/{hash}`. */
export type Transaction = {
  transaction_hash: string;
  /** One entry per containing block; empty while unconfirmed. */
  block_hash: { block_hash: string; block_height: number }[];
  coinbase: boolean;
  inputs: TransactionInput[];
  outputs: TransactionOutput[];
  /** Block time, null while unconfirmed. */
  time: string | null;
  /** `0001-01-01T00:00:00Z` when unknown. */
  broadcast_time: string;
  addresses: string[];
};

/** The inclusion proof of a stamp's transaction (`GET /stamps/{id}` once confirmed). */
export type StampProof = {
  block_hash: string;
  block_height: number;
  /** The block's 80-byte header, hex. */
  header: string;
  /** Sibling hashes from the transaction up to the Merkle root (display hex), Esplora's `merkle-proof`. */
  merkle: string[];
  /** The transaction's position in the block. */
  pos: number;
  /** Bitcoin Core's `gettxoutproof` bytes, hex (`bitcoin-cli verifytxoutproof` takes them). */
  txoutproof: string;
};

/** `GET /stamps/{id}`: where the stamp is, the hash it carries, its transaction and, once confirmed, the proof (`verifyStampProof`). */
export type StampStatus = {
  tx: string;
  vout: number;
  confirmations: number;
  timestamp: string | null;
  /** The stamped SHA-256, hex. */
  hash: string;
  /** The signed transaction `tx`, hex. */
  tx_hex: string;
  /** Null while the stamp is unconfirmed. */
  proof: StampProof | null;
};

/** A delivery target for events. */
export type HookSpec = { type: 'http'; url: string; secret?: string } | { type: 'sns'; topic_arn: string; region: string };

/** A registered hook as the server lists it (`secret` only in the answer to its creation). */
export type Hook = {
  id: string;
  type: 'http' | 'sns';
  url: string | null;
  topic_arn: string | null;
  region: string | null;
  /** True after the receiver answered 410 Gone (or the SNS topic vanished); `enableHook` clears it. */
  disabled: boolean;
  disabled_reason: string | null;
  /**
   * The delivery circuit breaker: `closed`; `slowed` (failing: one delivery at a time); `open`
   * (paused until `until`, deliveries kept); `half_open` (one probe at a time).
   */
  breaker: { state: 'closed' | 'slowed' | 'open' | 'half_open'; until: string | null };
  created_at: string;
  /** The Standard Webhooks secret (`whsec_…`), in the creation answer only. */
  secret?: string | null;
};

/** Delivery states of a hook delivery. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'dead' | (string & {});

/** One entry of a hook's delivery log. */
export type HookDelivery = {
  /** The `webhook-id` header of every attempt: `<subscription id>-<event id>`. */
  id: string;
  event_id: number;
  type: string;
  subscription_id: string;
  status: DeliveryStatus;
  attempts: number;
  redeliveries: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  next_attempt_at: string | null;
  delivered_at: string | null;
  /** The event as sent. */
  payload: Record<string, unknown>;
};

/** `POST /subscriptions` body. */
export type SubscriptionSpec = {
  /** `address` (default) or `chain` (block.connected / block.disconnected, no address). */
  type?: 'address' | 'chain';
  /** The address to watch (address subscriptions). */
  address?: string;
  /** Hook id to deliver to (the "external service id"); omit for stream-only. */
  action?: string | null;
  /** Confirmations to report tx.confirmations up to (1–100, server default 6). */
  confirmations?: number;
};

/** A subscription as the server lists it. */
export type Subscription = {
  id: string;
  type: 'address' | 'chain';
  address: string | null;
  action: string | null;
  confirmations: number;
  created_at: string;
};

/** An event kind: one of EVENT_TYPES, or a newer one this SDK does not know yet. */
export type EventType = KnownEventType | (string & {});

/**
 * An event from the stream (or a hook). `id` (the outbox sequence) increases; one event matching
 * several subscriptions of the key comes once per subscription with the same id. The client
 * gives `id` as a string.
 */
export type StreamEvent = {
  id: string;
  type: EventType;
  created_at?: string;
  subscription_id?: string | null;
  action?: string | null;
  address?: string | null;
  transaction_hash?: string | null;
  block?: { hash: string; height: number } | null;
  confirmations?: number | null;
  received?: number | null;
  sent?: number | null;
  replaced_by?: string | null;
  /** Extra data of key events such as stamp.confirmed. */
  data?: unknown;
} & Record<string, unknown>;

/** One page of a paged list, with the link to the next one. */
export type Page<T> = {
  items: T[];
  /** URL of the next page (opaque cursor inside), or null on the last page. */
  next: string | null;
};

/** The header fields /v1 adds to a block (Esplora's names). */
export type BlockHeaderFields = {
  version: number;
  /** Header time, unix seconds. */
  timestamp: number;
  /** Median time past, unix seconds. */
  mediantime: number;
  bits: number;
  nonce: number;
  difficulty: number;
  merkle_root: string;
  tx_count: number;
  size: number;
  weight: number;
};

/** Esplora's inclusion proof: sibling hashes (display hex) from the transaction to the root, and its position. */
export type MerkleProof = { block_height: number; merkle: string[]; pos: number };

/** `GET /mempool`. */
export type MempoolSummary = { count: number; vsize: number; total_fee: number; fee_histogram: [number, number][] };

/** One of `GET /mempool/recent`: a transaction the mempool took last; `fee` null when an input's value is unknown. */
export type MempoolRecentTransaction = { txid: string; fee: number | null; vsize: number; value: number };

/**
 * What /v1 adds to a transaction (`GET /transactions/{hash}`, `GET /blocks/{hash}/txs`); a field
 * is null when the server could not tell (its node unreachable).
 */
export type TransactionExtras = {
  /** sat: inputs less outputs (0 for a coinbase). */
  fee: number | null;
  /** sat/vB, two decimals. */
  fee_rate: number | null;
  size: number | null;
  vsize: number | null;
  weight: number | null;
  /** A mempool transaction the node would let a higher-fee one replace (BIP125 or full-RBF); false once confirmed. */
  replaceable: boolean | null;
  bip125_replaceable: boolean | null;
};

/** Esplora's statistics of one part (chain or mempool) of an address or script; sums in sat. */
export type TxoStats = {
  funded_txo_count: number;
  funded_txo_sum: number;
  spent_txo_count: number;
  spent_txo_sum: number;
  tx_count: number;
};

/** `GET /addresses/{address}/stats`, `/scripthash/{hash}/stats`: confirmed and mempool parts. */
export type AddressStats = { chain_stats: TxoStats; mempool_stats: TxoStats };

/** One address of `POST /addresses/batch`, with the parts asked for. */
export type AddressBatchEntry = {
  address: string;
  balance?: bigint;
  unspentOutputs?: UnspentOutput[];
  /** More unspent outputs than the batch lists (1,000): read them with `listUnspentOutputs`. */
  unspentOutputsMore?: boolean;
  stats?: AddressStats;
};

/** Esplora's spend status of one output (`GET /transactions/{hash}/outspends`, `/outspend/{vout}`). */
export type Outspend =
  | { spent: false }
  | {
      spent: true;
      /** The spending transaction and its input. */
      txid: string;
      vin: number;
      /** Its block; `confirmed` false while it is in the mempool. */
      status: { confirmed: boolean; block_height?: number; block_hash?: string; block_time?: number };
    };
