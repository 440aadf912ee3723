/**
 * The Open Assets protocol (OAP/1.0, github.com/OpenAssets/open-assets-protocol), pure parts:
 * the marker output (`OP_RETURN` push of `OA` 0x0100, a var-int count of LEB128 asset
 * quantities, a var-int length and metadata), asset IDs (HASH160 of the output script spent by
 * the issuing transaction's first input; base58 with version 23, or 115 on test networks), and
 * the coloring of one transaction's outputs from its inputs' colors:
 * - coinbase transactions and transactions without inputs have no valid marker;
 * - the first output carrying a valid marker is the marker (later ones are ordinary outputs);
 *   a marker is invalid when its quantity list is longer than the colorable outputs, when a
 *   quantity takes more than 9 LEB128 bytes, when the inputs hold fewer asset units than the
 *   transfer outputs, or when one output would receive units of two assets;
 * - outputs before the marker with a non-zero quantity are issued the first input's asset ID;
 *   outputs after it take, in order, the asset units of the inputs in order (order-based coloring);
 * - with no valid marker every output is uncolored.
 * @module
 */
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base58check as base58checkFactory, hex } from '@scure/base';
import * as btc from '@scure/btc-signer';
import { getNetwork, type Network, type NetworkName } from './network.js';

const base58check = base58checkFactory(sha256);

/** `OA` followed by version 1 (0x0100). */
const OPEN_ASSETS_PREFIX = Object.freeze([0x4f, 0x41, 0x01, 0x00]);
/** The largest asset quantity of one output. */
export const MAX_ASSET_QUANTITY = 2n ** 63n - 1n;

/** The contents of a marker output. */
export type Marker = { quantities: bigint[]; metadata: Uint8Array };

/** LEB128 encoding of an unsigned integer. */
export function encodeLeb128(value: bigint): Uint8Array {
  if (value < 0n) throw new RangeError('LEB128 encodes unsigned integers only');
  const out: number[] = [];
  let v = value;
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Uint8Array.from(out);
}

/** Reads a LEB128 integer of at most `maxBytes` bytes at `pos`; undefined when truncated or too long. */
export function decodeLeb128(buf: Uint8Array, pos: number, maxBytes = 9): { value: bigint; next: number } | undefined {
  let value = 0n;
  for (let i = 0; i < maxBytes; i++) {
    const b = buf[pos + i];
    if (b === undefined) return undefined;
    value |= BigInt(b & 0x7f) << BigInt(7 * i);
    if ((b & 0x80) === 0) return { value, next: pos + i + 1 };
  }
  return undefined;
}

function encodeCompactSize(n: number): Uint8Array {
  if (n < 0xfd) return Uint8Array.of(n);
  if (n <= 0xffff) return Uint8Array.of(0xfd, n & 0xff, n >> 8);
  return Uint8Array.of(0xfe, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff);
}

function readCompactSize(buf: Uint8Array, pos: number): { value: number; next: number } | undefined {
  const first = buf[pos];
  if (first === undefined) return undefined;
  const width = first < 0xfd ? 0 : first === 0xfd ? 2 : first === 0xfe ? 4 : 8;
  if (pos + 1 + width > buf.length) return undefined;
  if (width === 0) return { value: first, next: pos + 1 };
  let v = 0n;
  for (let i = width - 1; i >= 0; i--) v = (v << 8n) | BigInt(buf[pos + 1 + i]!);
  // Nothing in a transaction output can be longer than a script, so larger counts are malformed.
  if (v > 10_000n) return undefined;
  return { value: Number(v), next: pos + 1 + width };
}

/** The marker payload (what the OP_RETURN pushes). */
export function encodeMarkerPayload(marker: Marker): Uint8Array {
  const parts: Uint8Array[] = [Uint8Array.from(OPEN_ASSETS_PREFIX), encodeCompactSize(marker.quantities.length)];
  for (const q of marker.quantities) {
    if (q < 0n || q > MAX_ASSET_QUANTITY) throw new RangeError(`Asset quantity ${q} is outside 0..2^63-1`);
    parts.push(encodeLeb128(q));
  }
  parts.push(encodeCompactSize(marker.metadata.length), marker.metadata);
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The marker output script: `OP_RETURN <payload>`. */
export function markerScript(marker: Marker): Uint8Array {
  return btc.Script.encode(['RETURN', encodeMarkerPayload(marker)]);
}

/** Decodes a marker payload; undefined when it is not a well-formed OAP/1.0 marker. */
export function decodeMarkerPayload(payload: Uint8Array): Marker | undefined {
  if (payload.length < 6 || OPEN_ASSETS_PREFIX.some((b, i) => payload[i] !== b)) return undefined;
  const count = readCompactSize(payload, 4);
  if (!count) return undefined;
  let pos = count.next;
  const quantities: bigint[] = [];
  for (let i = 0; i < count.value; i++) {
    const q = decodeLeb128(payload, pos);
    if (!q || q.value > MAX_ASSET_QUANTITY) return undefined;
    quantities.push(q.value);
    pos = q.next;
  }
  const len = readCompactSize(payload, pos);
  if (!len || len.next + len.value !== payload.length) return undefined;
  return { quantities, metadata: payload.slice(len.next) };
}

/**
 * The marker in an output script: the script starts with OP_RETURN and the first of its pushes
 * that parses as a marker payload is used. Undefined when there is none.
 */
export function parseMarkerScript(script: Uint8Array | string): Marker | undefined {
  const bytes = typeof script === 'string' ? hex.decode(script) : script;
  if (bytes[0] !== 0x6a) return undefined;
  let ops: readonly unknown[];
  try {
    ops = btc.Script.decode(bytes) as readonly unknown[];
  } catch {
    return undefined;
  }
  for (const op of ops.slice(1)) {
    if (op instanceof Uint8Array) {
      const m = decodeMarkerPayload(op);
      if (m) return m;
    }
  }
  return undefined;
}

/** The asset ID (20-byte hash) of assets issued by spending an output with `script`. */
export function assetIdFromScript(script: Uint8Array | string): Uint8Array {
  return ripemd160(sha256(typeof script === 'string' ? hex.decode(script) : script));
}

/** An asset ID in base58 (version 23 on mainnet, 115 on the test networks). */
export function encodeAssetId(hash: Uint8Array | string, network: NetworkName | Network = 'main'): string {
  const h = typeof hash === 'string' ? hex.decode(hash) : hash;
  if (h.length !== 20) throw new TypeError('An asset ID is 20 bytes');
  const body = new Uint8Array(21);
  body[0] = getNetwork(network).assetId;
  body.set(h, 1);
  return base58check.encode(body);
}

/** The 20-byte hash of a base58 asset ID. @throws TypeError when invalid for `network`. */
export function decodeAssetId(id: string, network: NetworkName | Network = 'main'): Uint8Array {
  let data: Uint8Array;
  try {
    data = base58check.decode(id);
  } catch {
    throw new TypeError(`Invalid asset ID "${id}"`);
  }
  if (data.length !== 21 || data[0] !== getNetwork(network).assetId)
    throw new TypeError(`Invalid asset ID "${id}" for ${getNetwork(network).name}`);
  return data.slice(1);
}

/** The asset color of an output. */
export type OutputColor = {
  /** 20-byte asset ID hash, hex; null when uncolored. */
  assetId: string | null;
  /** Asset units (0 when uncolored). */
  quantity: bigint;
  kind: 'uncolored' | 'issuance' | 'marker' | 'transfer';
};

/** An output to color: its script (hex or bytes). */
export type ColorableTx = {
  coinbase: boolean;
  /** The colors of the outputs the inputs spend, in input order. */
  inputs: readonly Pick<OutputColor, 'assetId' | 'quantity'>[];
  /** The script of the output the first input spends (defines an issued asset's ID). */
  firstInputScript: Uint8Array | string | null;
  outputs: readonly { script: Uint8Array | string }[];
};

const UNCOLORED: OutputColor = Object.freeze({ assetId: null, quantity: 0n, kind: 'uncolored' });

/** Indexes of the outputs whose script parses as a marker (found without the inputs' colors). */
export function findMarkerCandidates(outputs: readonly { script: Uint8Array | string }[]): number[] {
  const found: number[] = [];
  outputs.forEach((o, i) => {
    if (parseMarkerScript(o.script)) found.push(i);
  });
  return found;
}

/** Colors every output of a transaction from its inputs' colors (the rules in the module header). */
export function colorTransaction(tx: ColorableTx): OutputColor[] {
  const uncolored = tx.outputs.map(() => UNCOLORED);
  if (tx.coinbase || tx.inputs.length === 0) return uncolored;
  for (const markerIndex of findMarkerCandidates(tx.outputs)) {
    const marker = parseMarkerScript(tx.outputs[markerIndex]!.script)!;
    const colored = applyMarker(tx, markerIndex, marker.quantities);
    if (colored) return colored;
  }
  return uncolored;
}

function applyMarker(tx: ColorableTx, markerIndex: number, quantities: readonly bigint[]): OutputColor[] | undefined {
  if (quantities.length > tx.outputs.length - 1) return undefined;
  if (tx.firstInputScript === null) return undefined;
  const issued = hex.encode(assetIdFromScript(tx.firstInputScript));
  const out: OutputColor[] = [];
  for (let i = 0; i < markerIndex; i++) {
    const q = quantities[i] ?? 0n;
    out.push(q > 0n ? { assetId: issued, quantity: q, kind: 'issuance' } : { assetId: null, quantity: 0n, kind: 'issuance' });
  }
  out.push({ assetId: null, quantity: 0n, kind: 'marker' });
  let inputIndex = -1;
  let left = 0n;
  let current: Pick<OutputColor, 'assetId' | 'quantity'> | undefined;
  for (let i = markerIndex + 1; i < tx.outputs.length; i++) {
    const q = quantities[i - 1] ?? 0n;
    let need = q;
    let assetId: string | null = null;
    while (need > 0n) {
      if (left === 0n) {
        inputIndex++;
        current = tx.inputs[inputIndex];
        if (!current) return undefined; // fewer units in than out
        left = current.quantity;
        continue;
      }
      const take = left < need ? left : need;
      need -= take;
      left -= take;
      if (assetId === null) assetId = current!.assetId;
      else if (assetId !== current!.assetId) return undefined; // two assets in one output
    }
    out.push({ assetId, quantity: q, kind: 'transfer' });
  }
  return out;
}
