/**
 * Core's REST interface (rest.cpp): block (`.bin .hex .json`, notxdetails), headers (both URI
 * forms), blockhashbyheight, chaininfo, tx, mempool info/contents, spenttxouts, getutxos and the
 * block filter endpoints' refusals. Errors are `text/plain` bodies ending in `\r\n`, with Core's
 * statuses (`<hash> not found` 404, `Invalid hash: …` 400, `output format not found …` 404).
 * @module
 */
import { concatBytes } from '@noble/hashes/utils.js';
import { bytesToHex, hexToHash } from '../src/bitcoin/hash.js';
import { compactSizeBytes, writeCompactSize } from '../src/bitcoin/wire.js';
import { txidOf, type BlockEntry, type Coin } from './chain.js';
import type { DevnodeContext } from './context.js';
import { amount, writeCoreJson } from './core-json.js';
import { blockJson, chainInfoJson, headerJson, mempoolInfoJson, mempoolJson, scriptPubKeyJson, txJson } from './json-views.js';
import { lookupBlock } from './rpc-chain.js';
import type { RestHandler, RestReply } from './rpc-server.js';

type Format = 'bin' | 'hex' | 'json' | 'undef';

const AVAILABLE = 'output format not found (available: .bin, .hex, .json)';

function err(status: number, message: string): RestReply {
  return { status, type: 'text/plain', body: `${message}\r\n` };
}

function json(value: unknown): RestReply {
  return { status: 200, type: 'application/json', body: `${writeCoreJson(value)}\n` };
}

function binary(bytes: Uint8Array, fmt: Format): RestReply {
  if (fmt === 'bin') return { status: 200, type: 'application/octet-stream', body: bytes };
  return { status: 200, type: 'text/plain', body: `${bytesToHex(bytes)}\n` };
}

/** ParseDataFormat: the parameter without query string and suffix, and the format. */
function parseFormat(uriPart: string): { param: string; fmt: Format } {
  const q = uriPart.lastIndexOf('?');
  const param = q >= 0 ? uriPart.slice(0, q) : uriPart;
  const dot = param.lastIndexOf('.');
  if (dot < 0) return { param, fmt: 'undef' };
  const suffix = param.slice(dot + 1);
  if (suffix === 'bin' || suffix === 'hex' || suffix === 'json') return { param: param.slice(0, dot), fmt: suffix };
  return { param, fmt: 'undef' };
}

function query(uri: string, name: string): string | null {
  const q = uri.indexOf('?');
  if (q < 0) return null;
  return new URLSearchParams(uri.slice(q + 1)).get(name);
}

function isHash(s: string): boolean {
  return /^[0-9a-fA-F]{64}$/.test(s);
}

function varint(n: number): Uint8Array {
  const b = new Uint8Array(compactSizeBytes(n));
  writeCompactSize(b, 0, n);
  return b;
}

function u64le(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
  return b;
}

function txOut(c: { value: bigint; script: Uint8Array }): Uint8Array {
  return concatBytes(u64le(c.value), varint(c.script.length), c.script);
}

/** Creates the REST handler. */
export function createRest(ctx: DevnodeContext): RestHandler {
  const { node } = ctx;

  const block = (uriPart: string, verbosity: 1 | 3): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    if (!isHash(param)) return err(400, `Invalid hash: ${param}`);
    const e = lookupBlock(ctx, param.toLowerCase());
    if (!e) return err(404, `${param} not found`);
    if (fmt === 'json') return json(blockJson(node, e, verbosity));
    if (fmt === 'undef') return err(404, AVAILABLE);
    return binary(e.block.bytes, fmt);
  };

  const headers = (uri: string, uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    const path = param.split('/');
    let rawCount: string;
    let hash: string;
    if (path.length === 2) {
      rawCount = path[0]!;
      hash = path[1]!;
    } else if (path.length === 1) {
      hash = path[0]!;
      rawCount = query(uri, 'count') ?? '5';
    } else {
      return err(400, 'Invalid URI format. Expected /rest/headers/<hash>.<ext>?count=<count>');
    }
    const count = /^\d+$/.test(rawCount) ? Number(rawCount) : NaN;
    if (!(count >= 1 && count <= 2000)) return err(400, `Header count is invalid or out of acceptable range (1-2000): ${rawCount}`);
    if (!isHash(hash)) return err(400, `Invalid hash: ${hash}`);
    const list: BlockEntry[] = [];
    let e = lookupBlock(ctx, hash.toLowerCase());
    while (e && node.chain.contains(e) && list.length < count) {
      list.push(e);
      e = node.chain.active[e.height + 1];
    }
    if (fmt === 'json') return json(list.map((x) => headerJson(node, x)));
    if (fmt === 'undef') return err(404, AVAILABLE);
    return binary(concatBytes(...list.map((x) => x.block.bytes.subarray(0, 80))), fmt);
  };

  const spentTxouts = (uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    if (param.split('/').length !== 1) return err(400, 'Invalid URI format. Expected /rest/spenttxouts/<hash>.<ext>');
    if (!isHash(param)) return err(400, `Invalid hash: ${param}`);
    const e = lookupBlock(ctx, param.toLowerCase());
    if (!e) return err(404, `${param} not found`);
    if (e.height > 0 && !e.undo) return err(404, `${param} undo not available`);
    const undo = e.undo ?? [];
    if (fmt === 'json') {
      return json([[], ...undo.map((coins) => coins.map((c) => ({ value: amount(c.value), scriptPubKey: scriptPubKeyJson(c.script) })))]);
    }
    if (fmt === 'undef') return err(404, AVAILABLE);
    const parts: Uint8Array[] = [varint(undo.length + 1), varint(0)];
    for (const coins of undo) {
      parts.push(varint(coins.length));
      for (const c of coins) parts.push(txOut(c));
    }
    return binary(concatBytes(...parts), fmt);
  };

  const tx = (uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    if (!isHash(param)) return err(400, `Invalid hash: ${param}`);
    const txid = param.toLowerCase();
    let found = node.mempool.get(txid)?.tx;
    let blockHash: string | undefined;
    if (!found) {
      blockHash = node.chain.txIndex.get(txid);
      if (blockHash && !ctx.hidden.has(blockHash)) found = node.chain.get(blockHash)!.block.txs.find((t) => txidOf(t) === txid);
    }
    if (!found || txid === '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b') return err(404, `${param} not found`);
    if (fmt === 'json') return json(txJson(found, blockHash ? { blockHash } : {}));
    if (fmt === 'undef') return err(404, AVAILABLE);
    return binary(found.bytes, fmt);
  };

  const mempool = (uri: string, uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    if (param !== 'contents' && param !== 'info') return err(400, 'Invalid URI format. Expected /rest/mempool/<info|contents>.json');
    if (fmt !== 'json') return err(404, 'output format not found (available: json)');
    if (param === 'info') return json(mempoolInfoJson(node));
    const verbose = query(uri, 'verbose') ?? 'true';
    if (verbose !== 'true' && verbose !== 'false') return err(400, 'The "verbose" query parameter must be either "true" or "false".');
    const seq = query(uri, 'mempool_sequence') ?? 'false';
    if (seq !== 'true' && seq !== 'false') return err(400, 'The "mempool_sequence" query parameter must be either "true" or "false".');
    if (verbose === 'true' && seq === 'true')
      return err(400, 'Verbose results cannot contain mempool sequence values. (hint: set "verbose=false")');
    return json(mempoolJson(node, verbose === 'true', seq === 'true'));
  };

  const blockHashByHeight = (uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    const h = /^-?\d+$/.test(param) ? Number(param) : NaN;
    if (!Number.isInteger(h) || h < 0 || h > 0x7fffffff)
      return err(400, `Invalid height: ${param.replace(/[^0-9A-Za-z .,;\-_/:?@()]/g, '')}`);
    if (h > node.chain.height()) return err(404, 'Block height out of range');
    const hash = node.chain.active[h]!.hash;
    if (fmt === 'json') return json({ blockhash: hash });
    if (fmt === 'hex') return { status: 200, type: 'text/plain', body: `${hash}\n` };
    if (fmt === 'bin') return { status: 200, type: 'application/octet-stream', body: hexToHash(hash) };
    return err(404, AVAILABLE);
  };

  const getutxos = (uriPart: string): RestReply => {
    const { param, fmt } = parseFormat(uriPart);
    const parts = param.length > 1 ? param.slice(1).split('/') : [];
    if (parts.length === 0) return err(400, 'Error: empty request');
    const checkMempool = parts[0] === 'checkmempool';
    const outpoints: [string, number][] = [];
    for (const p of parts.slice(checkMempool ? 1 : 0)) {
      const [t, n, ...rest] = p.split('-');
      if (rest.length || !t || !isHash(t) || n === undefined || !/^\d+$/.test(n) || Number(n) > 0xffffffff) return err(400, 'Parse error');
      outpoints.push([t.toLowerCase(), Number(n)]);
    }
    if (outpoints.length === 0) return err(400, 'Error: empty request');
    if (fmt === 'undef') return err(404, AVAILABLE);
    if (outpoints.length > 15) return err(400, `Error: max outpoints exceeded (max: 15, tried: ${outpoints.length})`);
    const hits: boolean[] = [];
    const coins: Coin[] = [];
    for (const [t, n] of outpoints) {
      let coin: Coin | undefined;
      if (checkMempool) coin = node.mempool.spender(t, n) ? undefined : (node.mempool.coin(t, n, 0x7fffffff) ?? node.chain.coin(t, n));
      else coin = node.chain.coin(t, n);
      hits.push(coin !== undefined);
      if (coin) coins.push(coin);
    }
    const tip = node.chain.tip();
    if (fmt === 'json') {
      return json({
        chainHeight: tip.height,
        chaintipHash: tip.hash,
        bitmap: hits.map((h) => (h ? '1' : '0')).join(''),
        utxos: coins.map((c) => ({ height: c.height, value: amount(c.value), scriptPubKey: scriptPubKeyJson(c.script) })),
      });
    }
    const bitmap = new Uint8Array(Math.ceil(hits.length / 8));
    hits.forEach((h, i) => {
      if (h) bitmap[i >> 3]! |= 1 << (i & 7);
    });
    const height = new Uint8Array(4);
    new DataView(height.buffer).setInt32(0, tip.height, true);
    const body = concatBytes(
      ...[
        height,
        hexToHash(tip.hash),
        varint(bitmap.length),
        bitmap,
        varint(coins.length),
        ...coins.flatMap((c) => {
          const h = new Uint8Array(8);
          new DataView(h.buffer).setUint32(4, c.height, true);
          return [h, txOut(c)];
        }),
      ],
    );
    return binary(body, fmt);
  };

  return (uri: string): RestReply => {
    const route = (prefix: string) => (uri.startsWith(prefix) ? uri.slice(prefix.length) : null);
    let part: string | null;
    if ((part = route('/rest/tx/')) !== null) return tx(part);
    if ((part = route('/rest/block/notxdetails/')) !== null) return block(part, 1);
    if ((part = route('/rest/block/')) !== null) return block(part, 3);
    if ((part = route('/rest/blockfilter/')) !== null || (part = route('/rest/blockfilterheaders/')) !== null) {
      const type = parseFormat(part).param.split('/')[0] ?? '';
      return err(400, type === 'basic' ? `Index is not enabled for filtertype ${type}` : `Unknown filtertype ${type}`);
    }
    if ((part = route('/rest/chaininfo')) !== null) {
      return parseFormat(part).fmt === 'json' ? json(chainInfoJson(node)) : err(404, 'output format not found (available: json)');
    }
    if ((part = route('/rest/mempool/')) !== null) return mempool(uri, part);
    if ((part = route('/rest/headers/')) !== null) return headers(uri, part);
    if ((part = route('/rest/getutxos')) !== null) return getutxos(part);
    if ((part = route('/rest/blockhashbyheight/')) !== null) return blockHashByHeight(part);
    if ((part = route('/rest/spenttxouts/')) !== null) return spentTxouts(part);
    return { status: 404, type: 'text/html; charset=ISO-8859-1', body: '' };
  };
}
