/**
 * Open Assets colors as the index stores them (`asset_txs.colors`, `mempool_txs.assets`): one
 * record per colored transaction, 31 bytes per output in output order: kind (0 UNCOLORED,
 * 1 MARKER, 2 ISSUANCE, 3 TRANSFER: coinstackd's numbering), the marker's major and minor
 * version bytes, the quantity as uint64 big-endian, and the 20-byte asset ID (zeros when none).
 * @module
 */
import { ASSET_KINDS, type OutputAssets } from '../bitcoin/open-assets.js';

const ENTRY = 31;

export function encodeAssetColors(colors: readonly OutputAssets[]): Buffer {
  const b = Buffer.alloc(colors.length * ENTRY);
  colors.forEach((c, i) => {
    const o = i * ENTRY;
    b[o] = ASSET_KINDS.indexOf(c.kind);
    b[o + 1] = c.version[0];
    b[o + 2] = c.version[1];
    b.writeBigUInt64BE(c.quantity, o + 3);
    if (c.assetId) b.set(c.assetId, o + 11);
  });
  return b;
}

export function decodeAssetColors(b: Uint8Array): OutputAssets[] {
  if (b.length % ENTRY !== 0) throw new RangeError(`asset colors must be a multiple of ${ENTRY} bytes, got ${b.length}`);
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const out: OutputAssets[] = [];
  for (let o = 0; o < buf.length; o += ENTRY) {
    const kind = ASSET_KINDS[buf[o]!];
    if (kind === undefined) throw new RangeError(`unknown asset kind ${buf[o]}`);
    const hasId = kind === 'ISSUANCE' || kind === 'TRANSFER';
    out.push({
      kind,
      version: [buf[o + 1]!, buf[o + 2]!],
      quantity: buf.readBigUInt64BE(o + 3),
      assetId: hasId ? new Uint8Array(buf.subarray(o + 11, o + ENTRY)) : null,
    });
  }
  return out;
}
