/**
 * Open Assets colors as coinstackd writes them on outputs and unspent outputs (model.go
 * `Metadata`/`OpenAssetsMeta`, restserver.go `makeClientAssetMeta`): `version` always present
 * (the marker's on the MARKER output, 0.0 elsewhere), `asset_id` only on ISSUANCE and TRANSFER,
 * in base58 with version byte 23 whatever the network (openassets.go CalculateBase58).
 * @module
 */
import { base58CheckEncode } from '../../src/bitcoin/base58.js';
import type { OutputAssets } from '../../src/bitcoin/open-assets.js';

const ASSET_ID_VERSION = 23;

/** An asset ID (HASH160) as coinstackd encodes it. */
export function coinstackAssetId(hash: Uint8Array): string {
  const body = new Uint8Array(21);
  body[0] = ASSET_ID_VERSION;
  body.set(hash, 1);
  return base58CheckEncode(body);
}

/** The `metadata` object of an output. */
export function coinstackMetadata(a: OutputAssets) {
  return {
    openassets: {
      output_type: a.kind,
      version: { major_version: a.version[0], minor_version: a.version[1] },
      ...((a.kind === 'ISSUANCE' || a.kind === 'TRANSFER') && a.assetId ? { asset_id: coinstackAssetId(a.assetId) } : {}),
      // (a JSON number, as Go writes uint64; exact up to 2^53)
      quantity: Number(a.quantity),
    },
  };
}
