/**
 * The static list of migrations, in order. Register a new migration here; never edit one that
 * has been applied. The number is only the order: a new migration takes the next number after
 * the highest here, whichever role its tables serve (gaps are numbers never used).
 */
import type { Migration } from 'kysely';
import * as m0001 from './0001_chain.js';
import * as m0002 from './0002_tenancy.js';
import * as m0003 from './0003_chain_events.js';
import * as m0004 from './0004_bulk_sync.js';
import * as m0005 from './0005_reorged_txs.js';
import * as m0006 from './0006_history_rest.js';
import * as m0007 from './0007_txid_key.js';
import * as m0008 from './0008_spends.js';
import * as m0009 from './0009_utxos_tx_num.js';
import * as m0010 from './0010_api_key_events.js';
import * as m0011 from './0011_api_key_secrets.js';
import * as m0012 from './0012_wallets.js';
import * as m0014 from './0014_subscription_unique.js';
import * as m0015 from './0015_wallet_balances.js';
import * as m0016 from './0016_script_aliases.js';
import * as m0017 from './0017_asset_colors.js';
import * as m0018 from './0018_tx_sizes.js';
import * as m0019 from './0019_chain_notify.js';
import * as m0020 from './0020_streams.js';
import * as m0021 from './0021_delivery_batches.js';
import * as m0022 from './0022_spent_groups_fast.js';
import * as m0023 from './0023_hook_breaker.js';
import * as m0024 from './0024_redis_identity.js';
import * as m0025 from './0025_outbox_notify.js';
import * as m0030 from './0030_stamps.js';
import * as m0041 from './0041_delivery_console.js';
import * as m0043 from './0043_genesis_output.js';
import * as m0045 from './0045_stamp_refusals.js';
import * as m0046 from './0046_block_undo.js';
import * as m0049 from './0049_balances_fillfactor.js';
import * as m0052 from './0052_spent_group_column.js';
import * as m0053 from './0053_tagged_outs.js';
import * as m0054 from './0054_asset_candidate_scripts.js';
import * as m0057 from './0057_txid_key_bytes.js';
import * as m0058 from './0058_txs_sizes_dropped.js';
import * as m0059 from './0059_history_buckets.js';
import * as m0060 from './0060_history_fold.js';
import * as m0061 from './0061_history_buckets_full.js';
import * as m0062 from './0062_tx_parts.js';
import * as m0063 from './0063_tx_parts_lean.js';
import * as m0064 from './0064_history_recent.js';
import * as m0065 from './0065_balances_recent.js';

export const migrations: Record<string, Migration> = {
  '0001_chain': m0001,
  '0002_tenancy': m0002,
  '0003_chain_events': m0003,
  '0004_bulk_sync': m0004,
  '0005_reorged_txs': m0005,
  '0006_history_rest': m0006,
  '0007_txid_key': m0007,
  '0008_spends': m0008,
  '0009_utxos_tx_num': m0009,
  '0010_api_key_events': m0010,
  '0011_api_key_secrets': m0011,
  '0012_wallets': m0012,
  '0014_subscription_unique': m0014,
  '0015_wallet_balances': m0015,
  '0016_script_aliases': m0016,
  '0017_asset_colors': m0017,
  '0018_tx_sizes': m0018,
  '0019_chain_notify': m0019,
  '0020_streams': m0020,
  '0021_delivery_batches': m0021,
  '0022_spent_groups_fast': m0022,
  '0023_hook_breaker': m0023,
  '0024_redis_identity': m0024,
  '0025_outbox_notify': m0025,
  '0030_stamps': m0030,
  '0041_delivery_console': m0041,
  '0043_genesis_output': m0043,
  '0045_stamp_refusals': m0045,
  '0046_block_undo': m0046,
  '0049_balances_fillfactor': m0049,
  '0052_spent_group_column': m0052,
  '0053_tagged_outs': m0053,
  '0054_asset_candidate_scripts': m0054,
  '0057_txid_key_bytes': m0057,
  '0058_txs_sizes_dropped': m0058,
  '0059_history_buckets': m0059,
  '0060_history_fold': m0060,
  '0061_history_buckets_full': m0061,
  '0062_tx_parts': m0062,
  '0063_tx_parts_lean': m0063,
  '0064_history_recent': m0064,
  '0065_balances_recent': m0065,
};
