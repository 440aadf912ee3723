/**
 * The Kysely view of the stamping tables (migrations/0030_stamps.ts), kept beside their only
 * writer. `stampDb(db)` widens a Blockwire Kysely instance with them. Hashes are bytea in
 * internal byte order; amounts int8 → bigint.
 * @module
 */
import type { ColumnType, Generated, Kysely, Transaction } from 'kysely';
import type { Database } from '../src/db/schema.js';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/** Lifecycle of one signed transaction (one version of a family). */
export type StampTxStatus = 'signed' | 'broadcast' | 'confirmed' | 'replaced' | 'abandoned';

export interface StampTxsTable {
  txid: Buffer;
  /** txid of the family's first version (a fee bump keeps the family). */
  family: Buffer;
  /** The version this one replaces (BIP125), null for a first version. */
  replaces: Buffer | null;
  /** The signed bytes, stored before the first broadcast; rebroadcasts send exactly these. */
  raw: Buffer;
  fee: bigint;
  vsize: number;
  status: StampTxStatus;
  created_at: Generated<Date>;
  broadcast_at: Date | null;
  last_broadcast_at: Date | null;
  /** Index tip height when the node accepted it (or it fell back to the mempool); bumps count from here. */
  broadcast_height: number | null;
  confirmed_height: number | null;
  confirmed_hash: Buffer | null;
  last_error: string | null;
  /** Sends the node refused in a row (0 once it accepts); `refused_since` is the first of them. */
  refusals: Generated<number>;
  refused_since: Date | null;
}

export interface StampsTable {
  id: Generated<bigint>;
  key_id: bigint;
  hash: Buffer;
  idempotency_key: string | null;
  status: ColumnType<'queued' | 'placed', 'queued' | 'placed' | undefined, 'queued' | 'placed'>;
  /** Current location (follows fee bumps and a confirmed version). */
  txid: Buffer | null;
  vout: number | null;
  lease_owner: string | null;
  lease_until: Date | null;
  created_at: Generated<Date>;
  placed_at: Date | null;
}

/** Every stamp id ever issued: (txid, vout) of any version → the stamp. */
export interface StampOutputsTable {
  txid: Buffer;
  vout: number;
  stamp_id: bigint;
}

export interface StampTxInputsTable {
  txid: Buffer;
  vin: number;
  prev_txid: Buffer;
  prev_vout: number;
  value: bigint;
  script: Buffer;
}

export interface StampChangeTable {
  txid: Buffer;
  vout: number;
  value: bigint;
  script: Buffer;
}

/**
 * A coin held by a batch or bump (`lease_until` set, expires) or spent by a family's
 * transactions (`family` set, `lease_until` null: held until the family is abandoned).
 */
export interface StampCoinLocksTable {
  txid: Buffer;
  vout: number;
  owner: string;
  family: Buffer | null;
  lease_until: Date | null;
}

export interface StampLeaderTable {
  id: Generated<number>;
  owner: string | null;
  until: Timestamp | null;
}

export type StampTables = {
  stamp_txs: StampTxsTable;
  stamps: StampsTable;
  stamp_outputs: StampOutputsTable;
  stamp_tx_inputs: StampTxInputsTable;
  stamp_change: StampChangeTable;
  stamp_coin_locks: StampCoinLocksTable;
  stamp_leader: StampLeaderTable;
};

/** Blockwire's tables plus the stamping tables. */
export type StampDatabase = Database & StampTables;
export type StampDb = Kysely<StampDatabase>;
export type StampTrx = Transaction<StampDatabase>;

/** The same connection pool, typed with the stamping tables. */
export function stampDb(db: Kysely<Database>): StampDb {
  return db.withTables<StampTables>();
}
