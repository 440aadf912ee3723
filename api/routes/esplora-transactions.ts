/**
 * Esplora's transaction routes (api/dialects/esplora.ts): `/tx/:txid` and its `status`, `hex`,
 * `raw`, `merkle-proof`, `merkleblock-proof`, `outspend/:vout`, `outspends`, and `POST /tx`
 * (the hex as the body, the txid as the answer, both plain text). Also `esploraTxs`, the
 * transactions of the address and block lists: each read from the index (its block, the outputs
 * its inputs spend: api/transaction-view.ts) with its serialized bytes (a mempool transaction's
 * from the index, confirmed ones from the node in one JSON-RPC batch, or from the block the
 * caller already read).
 * @module
 */
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { decodeTx, type DecodedTx } from '../../src/bitcoin/tx.js';
import { getOutspends } from '../queries/spends.js';
import { ServiceError } from '../../src/errors.js';
import { broadcastTransaction } from '../broadcast.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { DialectEdge, RouteModule } from '../dialect.js';
import { heldTransactions, loadIndexedTx } from '../transaction-view.js';
import { esploraOutspend, esploraTransaction, txStatus } from '../dialects/esplora-shapes.js';
import { inclusionProof, rawTransaction } from './transaction-reads.js';

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** A txid or block hash of a path (internal byte order); electrs's 400 for anything else. */
export function parseHashParam(raw: string): Buffer {
  if (!HEX64.test(raw)) throw new ServiceError('ERR_INVALID_HASH');
  return Buffer.from(hexToHash(raw));
}

/** A non-negative integer of a path (Rust's `parse::<u32>()`); electrs's 400 "Invalid number" for anything else. */
export function parseIndexParam(raw: string): number {
  if (!/^\+?[0-9]{1,10}$/.test(raw) || Number(raw) > 0xffffffff) throw new ServiceError('ERR_INVALID_PARAMETER');
  return Number(raw);
}

/** The serialized bytes of confirmed transactions from the node: one batch of getrawtransaction (with the block, so no -txindex is needed). */
async function confirmedBytes(
  deps: ResolvedApiDeps,
  wanted: readonly { txid: string; block: { hash: Uint8Array; height: number } }[],
): Promise<Uint8Array[]> {
  if (wanted.length === 0) return [];
  const node = deps.node;
  const single = async (w: (typeof wanted)[number]) => (await rawTransaction(deps, w.txid)).bytes;
  // (the genesis coinbase is no transaction to Core: rawTransaction takes it out of its block)
  if (!node?.batch || wanted.some((w) => w.block.height === 0)) return Promise.all(wanted.map(single));
  let answers: unknown[];
  try {
    answers = await node.batch.call(
      node,
      wanted.map((w) => ({ method: 'getrawtransaction', params: [w.txid, 0, hashToHex(w.block.hash)] })),
    );
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
  return answers.map((a) => {
    if (typeof a !== 'string') throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: a });
    return Buffer.from(a, 'hex');
  });
}

/**
 * Esplora's transactions of `txids` in order (undefined for one the index does not have).
 * `decoded` holds transactions the caller already has the bytes of (a block's), by display txid.
 */
export async function esploraTxs(deps: ResolvedApiDeps, txids: readonly Buffer[], decoded?: ReadonlyMap<string, DecodedTx>) {
  const held = heldTransactions(deps);
  const reads = await Promise.all(txids.map((t) => loadIndexedTx(deps.readDb, t, deps.node, held)));
  const bytes = new Map<number, Uint8Array | DecodedTx>();
  const fromNode: { i: number; txid: string; block: { hash: Uint8Array; height: number } }[] = [];
  reads.forEach((r, i) => {
    if (!r) return;
    const txid = hashToHex(txids[i]!);
    const have = r.mempoolRaw ?? decoded?.get(txid);
    if (have) bytes.set(i, have);
    else fromNode.push({ i, txid, block: r.tx.block! });
  });
  (await confirmedBytes(deps, fromNode)).forEach((b, k) => bytes.set(fromNode[k]!.i, b));
  return reads.map((r, i) => {
    if (!r) return undefined;
    const b = bytes.get(i)!;
    const tx = b instanceof Uint8Array ? decodeTx(b) : b;
    return esploraTransaction(
      tx,
      r.tx.inputs.map((input) => input.prevout),
      r.tx.block,
      deps.network,
    );
  });
}

type TxParams = { Params: { txid: string } };

export const esploraTransactionRoutes: RouteModule<DialectEdge> = (app, deps) => {
  app.get<TxParams>('/tx/:txid', async (request) => {
    const [tx] = await esploraTxs(deps, [parseHashParam(request.params.txid)]);
    if (!tx) throw new ServiceError('ERR_TX_NOT_FOUND');
    return tx;
  });

  // (electrs answers any txid it does not have as unconfirmed, 200)
  app.get<TxParams>('/tx/:txid/status', async (request) => {
    const r = await loadIndexedTx(deps.readDb, parseHashParam(request.params.txid), deps.node, heldTransactions(deps));
    return txStatus(r?.tx.block);
  });

  app.get<TxParams>('/tx/:txid/hex', async (request, reply) => {
    parseHashParam(request.params.txid);
    const r = await rawTransaction(deps, request.params.txid);
    return reply.type('text/plain').send(r.bytes.toString('hex'));
  });

  app.get<TxParams>('/tx/:txid/raw', async (request, reply) => {
    parseHashParam(request.params.txid);
    const r = await rawTransaction(deps, request.params.txid);
    return reply.type('application/octet-stream').send(r.bytes);
  });

  const proof = async (txid: string) => {
    parseHashParam(txid);
    const p = await inclusionProof(deps, txid);
    if (!p) throw new ServiceError('ERR_TX_NOT_FOUND', { message: 'Transaction not found or is unconfirmed' });
    return p;
  };
  app.get<TxParams>('/tx/:txid/merkle-proof', async (request) => {
    const p = await proof(request.params.txid);
    return { block_height: p.block_height, merkle: p.merkle, pos: p.pos };
  });
  app.get<TxParams>('/tx/:txid/merkleblock-proof', async (request, reply) =>
    reply.type('text/plain').send((await proof(request.params.txid)).txoutproof),
  );

  // (electrs answers an output of a transaction it does not have, or past its last, as unspent)
  app.get<TxParams & { Params: { vout: string } }>('/tx/:txid/outspend/:vout', async (request) => {
    const txid = parseHashParam(request.params.txid);
    const vout = parseIndexParam(request.params.vout);
    const r = await getOutspends(deps.readDb, txid);
    return esploraOutspend(r?.spends[vout] ?? null);
  });

  app.get<TxParams>('/tx/:txid/outspends', async (request) => {
    const r = await getOutspends(deps.readDb, parseHashParam(request.params.txid));
    if (!r) throw new ServiceError('ERR_TX_NOT_FOUND');
    return r.spends.map(esploraOutspend);
  });

  app.post<{ Body: string | undefined }>(
    '/tx',
    { bodyLimit: deps.settings.txBodyLimit, config: { scope: 'write' } },
    async (request, reply) => {
      const hex = (typeof request.body === 'string' ? request.body : '').trim();
      return reply.type('text/plain').send(await broadcastTransaction(deps, hex));
    },
  );
};
