/**
 * The Kysely view of the database: one interface per table, snake_case like the columns.
 * Migrations in migrations/ create these tables; docs/schema.md explains them.
 * Conventions: hashes are `bytea` in internal byte order (Buffer here; hex display order only at
 * the API boundary), amounts are int8 → `bigint`, address keys are `uuid` strings
 * (src/db/address-key.ts), `tx_num` = height × 2^20 + position in block (src/db/tx-num.ts).
 * @module
 */
import { EVENT_TYPES, type KnownEventType } from '../../client/event-types.js';
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface BlocksTable {
  height: number;
  hash: Buffer;
  prev_hash: Buffer;
  /** The 80-byte header. */
  header: Buffer;
  /** Header time, unix seconds. */
  time: number;
  tx_count: number;
  size: number;
  weight: number;
}

export interface TxsTable {
  tx_num: bigint;
  txid: Buffer;
  /** Packed outputs in the tagged form (src/db/packed.ts `encodeOutTags`; rows of an index before 0053 held scripts). */
  outs: Buffer;
  /** Packed input references (src/db/packed.ts `encodeIns`); empty for a coinbase. */
  ins: Buffer;
  /** The one group of transactions it spends from, in 32 bits (src/db/spent-groups.ts); else null. */
  spent_group: ColumnType<number | null, number | null | undefined, number | null>;
  /** When Blockwire first saw it in the mempool (the API's broadcast_time); null when unknown. */
  first_seen: Date | null;
}

export interface UtxosTable {
  txid: Buffer;
  vout: number;
  tx_num: bigint;
  addr_key: string | null;
  value: bigint;
  script: Buffer;
}

/** The own key of a P2PK or bare multisig output script → the address key its outputs are kept under (migrations/0016_script_aliases.ts). */
export interface ScriptAliasesTable {
  script_key: string;
  addr_key: string;
  /** True when the outputs carry `addr_key` in utxos and mempool_outputs (P2PK); false for bare multisig. */
  keyed: boolean;
}

export interface BalancesTable {
  addr_key: string;
  balance: bigint;
  utxo_count: number;
}

export interface HistoryTable {
  addr_key: string;
  /** The chunk's first entry. */
  first_tx_num: bigint;
  /** The entries after the first: 8-byte big-endian tx_nums, ascending (empty for one entry). */
  rest: Buffer;
}

/** An address's history records by bucket (migrations/0059_history_buckets.ts; the format: src/db/history-buckets.ts). */
export interface HistoryBucketsTable {
  bucket: number;
  /** 13-byte records (the key's bytes 4..11, height, position), newest first. */
  log: Buffer;
}

/** The one row (id 1) of the buckets' parameters. */
export interface HistoryBucketParamsTable {
  id: number;
  /** Bucket bits from the key's bytes 0..3. */
  base: number;
  /** Bucket bits from the key's bytes 4..7. */
  ext: number;
  /** Buckets below it are split to `ext + 1` bits. */
  split: number;
  /** An address with more entries than this keeps its history in `history` chunks. */
  busy: number;
  /** Records in the buckets. */
  records: bigint;
  /** The blocks below it are folded: their entries of addresses with at most `busy` are in buckets (0060_history_fold). */
  folded: number;
}

/** Up to 64 consecutive transactions of one block in one row (migrations/0062_tx_parts.ts; the format: src/db/tx-parts.ts). */
export interface TxPartsTable {
  /** tx_num >> 6. */
  part: bigint;
  /** The 32-byte txids, slot by slot. */
  txids: Buffer;
  /** A width byte, then per slot the end of its `outs` and of its `ins`. */
  ends: Buffer;
  outs: Buffer;
  ins: Buffer;
  /** (slot uint8, first_seen µs int8) pairs of the transactions that have one; null when none. */
  seen: Buffer | null;
}

/** txid → tx_num of the transactions in parts, by bucket (migrations/0062_tx_parts.ts; the format: src/db/txid-buckets.ts). */
export interface TxidBucketsTable {
  bucket: number;
  /** 9-byte records (the txid's bytes 4..7, height, position), newest first. */
  log: Buffer;
}

/** The one row (id 1) of the txid buckets' parameters (as `HistoryBucketParamsTable`'s). */
export interface TxidBucketParamsTable {
  id: number;
  base: number;
  ext: number;
  split: number;
  /** Records in the buckets. */
  records: bigint;
  /** Whether the history fold moves the transactions of the blocks it folds into parts (TX_PARTS). */
  fold: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface MempoolTxsTable {
  txid: Buffer;
  raw: Buffer;
  first_seen: Timestamp;
  fee: bigint | null;
  vsize: number;
  /** Open Assets colors of its outputs (src/db/asset-colors.ts) when it carries a valid marker. */
  assets: ColumnType<Buffer | null, Buffer | null | undefined, Buffer | null>;
}

/** Open Assets colors of a confirmed transaction with a valid marker (src/db/asset-colors.ts). */
export interface AssetTxsTable {
  tx_num: bigint;
  colors: Buffer;
}

export interface BulkAssetCandidatesTable {
  tx_num: bigint;
  /** The output its first input spends (tx_num, vout) and that output's script (0054_asset_candidate_scripts). */
  first_prev: bigint | null;
  first_vout: number | null;
  first_script: Buffer | null;
}

export interface MempoolOutputsTable {
  txid: Buffer;
  vout: number;
  addr_key: string | null;
  value: bigint;
  script: Buffer;
}

export interface MempoolSpendsTable {
  prev_txid: Buffer;
  prev_vout: number;
  txid: Buffer;
}

export interface MempoolAddressesTable {
  addr_key: string;
  txid: Buffer;
  received: bigint;
  sent: bigint;
}

export interface ChainTipTable {
  id: Generated<number>;
  /** -1 while nothing is indexed. */
  height: number;
  hash: Buffer | null;
  updated_at: Timestamp;
}

/** The outputs each of the last blocks spent (migrations/0046_block_undo.ts). */
export interface BlockUndoTable {
  height: number;
  /** Value and script of each output of an earlier block that the block spends, in input order (the outs format). */
  spent: Buffer;
}

export interface SyncStateTable {
  key: string;
  value: unknown;
  updated_at: Timestamp;
}

/** The event kinds: the SDK's list (data only), so that server and SDK name the same kinds. */
export { EVENT_TYPES };
export type EventType = KnownEventType;

/**
 * Events of the indexed mempool itself, one per transaction entering or leaving it, with the
 * address keys it touches in `data.keys`: read by the processes that push the mempool (the
 * Electrum server, coinstackd's `/websocket`), never delivered to subscriptions.
 */
export const MEMPOOL_EVENT_TYPES = ['mempool.added', 'mempool.removed'] as const;
export type MempoolEventType = (typeof MEMPOOL_EVENT_TYPES)[number];

export interface OutboxTable {
  seq: Generated<bigint>;
  created_at: Generated<Date>;
  type: EventType | MempoolEventType;
  /** Set for events meant for one API key only (stamp.confirmed). */
  key_id: bigint | null;
  addr_key: string | null;
  address: string | null;
  txid: Buffer | null;
  block_hash: Buffer | null;
  height: number | null;
  confirmations: number | null;
  received: bigint | null;
  sent: bigint | null;
  replaced_by: Buffer | null;
  data: unknown | null;
}

export interface ApiKeysTable {
  id: Generated<bigint>;
  name: string;
  key_hash: Buffer;
  prefix: string;
  scopes: ColumnType<string[], string[] | undefined, string[]>;
  rate_limit: number | null;
  created_at: Generated<Date>;
  revoked_at: Date | null;
  /** The secret of a signing key, sealed with a server key (src/auth/secret-box.ts); null for a bearer key. */
  secret_box: ColumnType<Buffer | null, Buffer | null | undefined, Buffer | null>;
}

/** A hook's delivery circuit breaker (streams/breaker.ts). */
export type BreakerStateName = 'closed' | 'slowed' | 'open' | 'half_open';

export interface HooksTable {
  id: string;
  key_id: bigint;
  type: 'http' | 'sns';
  url: string | null;
  secret: string | null;
  topic_arn: string | null;
  region: string | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Generated<Date>;
  deleted_at: Date | null;
  /** The secret before the last rotation; deliveries are signed with both until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: Date | null;
  /** The delivery workers' circuit breaker (streams/breaker.ts); `breaker_until` = end of an `open` pause. */
  breaker_state: Generated<BreakerStateName>;
  breaker_until: Date | null;
}

export interface SubscriptionsTable {
  id: string;
  key_id: bigint;
  kind: 'address' | 'chain' | 'wallet';
  address: string | null;
  addr_key: string | null;
  /** The wallet of a `wallet` subscription (0012_wallets). */
  wallet_id: string | null;
  hook_id: string | null;
  confirmations: ColumnType<number, number | undefined, number>;
  created_at: Generated<Date>;
  deleted_at: Date | null;
  /** Events with `seq <= start_seq` (emitted before the subscription existed) are not delivered to it. */
  start_seq: ColumnType<bigint, bigint | undefined, bigint>;
}

/** Streams bookkeeping (migrations/0020_streams.ts): `relay` = relay cursor, `pruned` = highest outbox seq pruned. */
export interface StreamStateTable {
  name: 'relay' | 'pruned';
  seq: bigint;
  updated_at: Timestamp;
  /** `relay` row: the run_id of the Redis server delivery jobs were last enqueued on (migrations/0024). */
  redis_run_id: string | null;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one hook (webhook or SNS): the delivery log, dead letters included. */
export interface DeliveriesTable {
  /** `<subscription id>-<event id>`: the BullMQ job id and the `webhook-id` header. */
  id: string;
  hook_id: string;
  key_id: bigint;
  subscription_id: string;
  event_id: bigint;
  event_type: string;
  /** The exact JSON body sent (and signed). */
  payload: string;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  redeliveries: ColumnType<number, number | undefined, number>;
  last_status: number | null;
  last_error: string | null;
  created_at: Generated<Date>;
  updated_at: Timestamp;
  next_attempt_at: Date | null;
  /** Null while a pending delivery still needs a BullMQ job (new, manual redelivery, lost job). */
  enqueued_at: Date | null;
  /** The BullMQ job of several deliveries that carries this one (0021); null = its own job (id = delivery id). */
  job_id: string | null;
  delivered_at: Date | null;
  dead_at: Date | null;
  /** When the last attempt was sent: its `webhook-timestamp` (0041). */
  last_attempt_at: Date | null;
  /** How long the last attempt took, request sent to answer read (or failure), ms. */
  last_latency_ms: number | null;
  /** The first bytes of the receiver's last answer (RESPONSE_EXCERPT_BYTES), as text. */
  last_response: string | null;
}

/** Attempts per hook and minute (0041): what the console's last-hour chart reads. */
export interface HookAttemptMinutesTable {
  hook_id: string;
  minute: Date;
  delivered: number;
  failed: number;
}

/** A key's wallet (0012_wallets): its descriptors as answered (checksummed) and its gap limit. */
export interface WalletsTable {
  id: string;
  key_id: bigint;
  network: string;
  descriptors: string[];
  gap_limit: number;
  created_at: Generated<Date>;
  deleted_at: Date | null;
  /** Sum of `balances` over its distinct address keys (0015_wallet_balances, indexer/wallet-balances.ts). */
  confirmed: Generated<bigint>;
  /** The mempool's net change (received − sent) over them. */
  unconfirmed: Generated<bigint>;
}

/** One single-path descriptor of a wallet: derived up to `derived` (exclusive), used or reserved up to `used_max`. */
export interface WalletChainsTable {
  wallet_id: string;
  chain: number;
  /** The single-path descriptor, checksummed. */
  descriptor: string;
  change: boolean;
  gap_limit: number;
  derived: ColumnType<number, number | undefined, number>;
  used_max: ColumnType<number, number | undefined, number>;
}

/** A derived address of a wallet chain. */
export interface WalletAddressesTable {
  wallet_id: string;
  chain: number;
  idx: number;
  addr_key: string;
  address: string;
  path: string;
  reserved_at: Date | null;
}

export interface WatchedAddressesView {
  addr_key: string;
  confirmations: number;
  /** The address text of (one of) its subscriptions. */
  address: string;
}

/** Outputs of earlier bulk batches spent by a later one (0004_bulk_sync); empty outside a bulk sync. */
export interface BulkSpentTable {
  tx_num: bigint;
  vout: number;
}

/** Confirmed transactions of watched addresses, for tx.confirmations events (0003_chain_events). */
export interface WatchedTxsTable {
  tx_num: bigint;
  addr_key: string;
  txid: Buffer;
  received: bigint;
  sent: bigint;
}

/** Undone transactions of watched addresses awaiting their terminal event (0005_reorged_txs). */
export interface ReorgedTxsTable {
  txid: Buffer;
  addr_key: string;
  address: string;
  received: bigint;
  sent: bigint;
  /** The outpoints its inputs spend: 36 bytes each, txid (internal byte order) then vout (uint32 LE). */
  spends: Buffer;
  /** The lowest height undone since the row was written: a conflicting spend is at or above it. */
  since_height: number;
  reorged_at: Timestamp;
}

export interface Database {
  blocks: BlocksTable;
  txs: TxsTable;
  utxos: UtxosTable;
  balances: BalancesTable;
  history: HistoryTable;
  /** The newest blocks' chunk rows, moved into `history` when the indexer is idle (migrations/0064_history_recent.ts). */
  history_recent: HistoryTable;
  /** The newest blocks' balance changes, added into `balances` when the indexer is idle (migrations/0065_balances_recent.ts). */
  balances_recent: BalancesTable;
  history_buckets: HistoryBucketsTable;
  history_bucket_params: HistoryBucketParamsTable;
  tx_parts: TxPartsTable;
  txid_buckets: TxidBucketsTable;
  txid_bucket_params: TxidBucketParamsTable;
  script_aliases: ScriptAliasesTable;
  mempool_txs: MempoolTxsTable;
  asset_txs: AssetTxsTable;
  bulk_asset_candidates: BulkAssetCandidatesTable;
  mempool_outputs: MempoolOutputsTable;
  mempool_spends: MempoolSpendsTable;
  mempool_addresses: MempoolAddressesTable;
  chain_tip: ChainTipTable;
  block_undo: BlockUndoTable;
  sync_state: SyncStateTable;
  outbox: OutboxTable;
  api_keys: ApiKeysTable;
  hooks: HooksTable;
  subscriptions: SubscriptionsTable;
  watched_addresses: WatchedAddressesView;
  watched_txs: WatchedTxsTable;
  bulk_spent: BulkSpentTable;
  reorged_txs: ReorgedTxsTable;
  stream_state: StreamStateTable;
  deliveries: DeliveriesTable;
  hook_attempt_minutes: HookAttemptMinutesTable;
  wallets: WalletsTable;
  wallet_chains: WalletChainsTable;
  wallet_addresses: WalletAddressesTable;
}
