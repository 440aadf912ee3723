/**
 * Open Assets coloring (OAP/1.0) as the index records it: which outputs of a transaction carry
 * which asset and how many units, computed from the colors of the outputs its inputs spend.
 * - a transaction with fewer than two outputs, a coinbase or one without a valid marker has no
 *   record (its outputs, and any asset units its inputs held, are uncolored);
 * - the marker is an output `OP_RETURN <push>` whose push is `OA` 0x0100, a compact size count,
 *   that many LEB128 quantities (≤ 9 bytes, ≤ 2^63 − 1 each), a compact size length and that much
 *   metadata, nothing more; the first output that is a valid marker counts;
 * - a marker is invalid when it lists more quantities than there are other outputs, when the
 *   inputs hold fewer units than the transfers take, or when one output would take two assets;
 * - outputs before the marker with a quantity are ISSUANCE of the asset whose ID is HASH160 of
 *   the script the first input spends; outputs after it are TRANSFER, taking the inputs' units in
 *   order; an output with quantity 0 is UNCOLORED; the marker itself is MARKER with its version.
 * The types are coinstackd's (openassets.go: UNCOLORED, MARKER, ISSUANCE, TRANSFER). The SDK
 * (client/open-assets.ts) colors by the same rules; a test holds the two equal.
 * @module
 */
import { hash160 } from './hash.js';
import { parseScript } from './script.js';
import { OutputCursor } from './tx.js';
import { readCompactSize, compactSizeLength } from './wire.js';

export const ASSET_KINDS = ['UNCOLORED', 'MARKER', 'ISSUANCE', 'TRANSFER'] as const;
export type AssetKind = (typeof ASSET_KINDS)[number];

/** The color of one output of a recorded transaction. */
export type OutputAssets = {
  kind: AssetKind;
  /** HASH160 asset ID (ISSUANCE and TRANSFER with units), else null. */
  assetId: Uint8Array | null;
  quantity: bigint;
  /** The marker's version bytes on the MARKER output, [0, 0] elsewhere. */
  version: readonly [number, number];
};

/** What an input brings: the color of the output it spends (undefined: uncolored). */
export type InputAssets = { assetId: Uint8Array | null; quantity: bigint } | undefined;

const MAX_QUANTITY = 2n ** 63n - 1n;
const OP_RETURN = 0x6a;

export type AssetMarker = { version: readonly [number, number]; quantities: bigint[] };

/** The marker an output script carries, or undefined. */
export function parseAssetMarker(script: Uint8Array): AssetMarker | undefined {
  if (script[0] !== OP_RETURN) return undefined;
  const { ops } = parseScript(script);
  const payload = ops[1]?.data;
  if (!payload || payload.length < 6 || payload[0] !== 0x4f || payload[1] !== 0x41 || payload[2] !== 0x01 || payload[3] !== 0x00)
    return undefined;
  try {
    let p = 4;
    const count = readCompactSize(payload, p, payload.length, 'asset quantity count');
    p += compactSizeLength(payload[p]!);
    const quantities: bigint[] = [];
    for (let i = 0; i < count; i++) {
      let q = 0n;
      let shift = 0n;
      for (let n = 0; ; n++) {
        if (n === 9 || p >= payload.length) return undefined;
        const b = payload[p++]!;
        q |= BigInt(b & 0x7f) << shift;
        shift += 7n;
        if ((b & 0x80) === 0) break;
      }
      if (q > MAX_QUANTITY) return undefined;
      quantities.push(q);
    }
    const metadataLength = readCompactSize(payload, p, payload.length, 'asset metadata length');
    p += compactSizeLength(payload[p]!);
    if (p + metadataLength !== payload.length) return undefined;
    return { version: [payload[2]!, payload[3]!], quantities };
  } catch {
    return undefined;
  }
}

/**
 * True when some output could be a marker: only such transactions need their inputs' colors.
 * A cursor (started, not moved) is read to its end, a script looked at only when it starts with
 * OP_RETURN.
 */
export function hasAssetMarker(outputs: readonly { script: Uint8Array }[] | OutputCursor): boolean {
  if (!(outputs instanceof OutputCursor)) return outputs.length >= 2 && outputs.some((o) => parseAssetMarker(o.script) !== undefined);
  if (outputs.count < 2) return false;
  while (outputs.next()) if (outputs.firstByte === OP_RETURN && parseAssetMarker(outputs.script) !== undefined) return true;
  return false;
}

const UNCOLORED: OutputAssets = Object.freeze({ kind: 'UNCOLORED', assetId: null, quantity: 0n, version: [0, 0] as const });

/**
 * The colors of a transaction's outputs, or undefined when it has no record (see the module
 * comment). `firstInputScript` is the script of the output the first input spends.
 */
export function colorOutputs(tx: {
  coinbase: boolean;
  inputs: readonly InputAssets[];
  firstInputScript: Uint8Array | null;
  outputs: readonly { script: Uint8Array }[];
}): OutputAssets[] | undefined {
  if (tx.coinbase || tx.inputs.length === 0 || tx.outputs.length < 2) return undefined;
  for (let m = 0; m < tx.outputs.length; m++) {
    const marker = parseAssetMarker(tx.outputs[m]!.script);
    if (!marker) continue;
    if (marker.quantities.length > tx.outputs.length - 1) continue;
    const colored = assign(tx, m, marker);
    if (colored) return colored;
  }
  return undefined;
}

function assign(
  tx: { inputs: readonly InputAssets[]; firstInputScript: Uint8Array | null; outputs: readonly unknown[] },
  m: number,
  marker: AssetMarker,
): OutputAssets[] | undefined {
  const issued = tx.firstInputScript ? hash160(tx.firstInputScript) : null;
  const out: OutputAssets[] = [];
  for (let i = 0; i < m; i++) {
    const q = marker.quantities[i] ?? 0n;
    if (q === 0n) out.push(UNCOLORED);
    else if (!issued) return undefined;
    else out.push({ kind: 'ISSUANCE', assetId: issued, quantity: q, version: [0, 0] });
  }
  out.push({ kind: 'MARKER', assetId: null, quantity: 0n, version: marker.version });
  // the inputs' units, taken in order
  let next = 0;
  let left = 0n;
  let from: Uint8Array | null = null;
  for (let i = m + 1; i < tx.outputs.length; i++) {
    const q = marker.quantities[i - 1] ?? 0n;
    if (q === 0n) {
      out.push(UNCOLORED);
      continue;
    }
    let need = q;
    let asset: Uint8Array | null = null;
    while (need > 0n) {
      while (left === 0n) {
        if (next >= tx.inputs.length) return undefined;
        const input = tx.inputs[next++];
        left = input?.quantity ?? 0n;
        from = input?.assetId ?? null;
      }
      if (asset === null) asset = from;
      else if (from === null || !sameBytes(asset, from)) return undefined;
      const take = left < need ? left : need;
      need -= take;
      left -= take;
    }
    out.push({ kind: 'TRANSFER', assetId: asset, quantity: q, version: [0, 0] });
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
