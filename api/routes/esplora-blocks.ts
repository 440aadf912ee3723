/**
 * Esplora's block routes (api/dialects/esplora.ts): `/block/:hash` and its `header`, `status`,
 * `txids`, `txid/:index`, `txs[/:start_index]` (25 at a time, from a multiple of 25), `raw`;
 * `/block-height/:height`, `/blocks[/:start_height]` (10, newest first), `/blocks/tip/height`
 * and `/blocks/tip/hash`. Blocks of the indexed main chain; a block's bytes come from the node.
 * @module
 */
import { decodeBlock } from '../../src/bitcoin/block.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { findBlockHeader, listRecentBlocks } from '../queries/blocks.js';
import { getIndexTip, listBlockTxids } from '../queries/chain.js';
import { ServiceError } from '../../src/errors.js';
import type { ResolvedApiDeps } from '../deps.js';
import type { DialectEdge, RouteModule } from '../dialect.js';
import { readAtTip } from '../tip.js';
import { blockStatus, esploraBlock } from '../dialects/esplora-shapes.js';
import { esploraTxs, parseHashParam, parseIndexParam } from './esplora-transactions.js';
import { CHAIN_TXS_PER_PAGE } from './esplora-scripts.js';

/** Blocks per page of /blocks (electrs's BLOCK_LIMIT). */
const BLOCK_LIMIT = 10;

type HashParams = { Params: { hash: string } };

async function blockRow(deps: ResolvedApiDeps, rawHash: string) {
  const row = await findBlockHeader(deps.readDb, { hash: parseHashParam(rawHash) });
  if (!row) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
  return row;
}

async function blockTxids(deps: ResolvedApiDeps, rawHash: string) {
  const { value } = await readAtTip(deps.readDb, async (trx) => {
    const row = await findBlockHeader(trx, { hash: parseHashParam(rawHash) });
    return row && { row, txids: await listBlockTxids(trx, row.height) };
  });
  if (!value) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
  return value;
}

async function blockBytes(deps: ResolvedApiDeps, hash: Uint8Array): Promise<Uint8Array> {
  if (!deps.node?.getBlockRaw) throw new ServiceError('ERR_NODE_UNAVAILABLE', { message: 'no node is configured to read blocks from' });
  try {
    return await deps.node.getBlockRaw(hashToHex(hash));
  } catch (err) {
    throw new ServiceError('ERR_NODE_UNAVAILABLE', { cause: err });
  }
}

async function indexTip(deps: ResolvedApiDeps) {
  const tip = await getIndexTip(deps.readDb);
  if (tip.hash === null) throw new ServiceError('ERR_INDEX_SYNCING');
  return { height: tip.height, hash: tip.hash };
}

export const esploraBlockRoutes: RouteModule<DialectEdge> = (app, deps) => {
  app.get('/blocks/tip/height', async (_request, reply) => reply.type('text/plain').send(String((await indexTip(deps)).height)));
  app.get('/blocks/tip/hash', async (_request, reply) => reply.type('text/plain').send(hashToHex((await indexTip(deps)).hash)));

  const recent = async (start: string | undefined) => {
    // (electrs: a start height that is no number counts as none)
    const from = start !== undefined && /^[0-9]{1,10}$/.test(start) ? Number(start) : null;
    const { blocks } = await listRecentBlocks(deps.readDb, from, BLOCK_LIMIT);
    if (from !== null && blocks[0]?.height !== from) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
    return blocks.map(esploraBlock);
  };
  app.get('/blocks', async () => recent(undefined));
  app.get<{ Params: { start: string } }>('/blocks/:start', async (request) => recent(request.params.start));

  app.get<{ Params: { height: string } }>('/block-height/:height', async (request, reply) => {
    const row = await findBlockHeader(deps.readDb, { height: Math.min(parseIndexParam(request.params.height), 2 ** 31 - 1) });
    if (!row) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
    return reply.type('text/plain').send(hashToHex(row.hash));
  });

  app.get<HashParams>('/block/:hash', async (request) => esploraBlock(await blockRow(deps, request.params.hash)));
  app.get<HashParams>('/block/:hash/header', async (request, reply) =>
    reply.type('text/plain').send((await blockRow(deps, request.params.hash)).header.toString('hex')),
  );
  // (electrs answers a block it does not have on its best chain as orphaned, 200)
  app.get<HashParams>('/block/:hash/status', async (request) =>
    blockStatus(await findBlockHeader(deps.readDb, { hash: parseHashParam(request.params.hash) })),
  );
  app.get<HashParams>('/block/:hash/txids', async (request) =>
    (await blockTxids(deps, request.params.hash)).txids.map((t) => hashToHex(t)),
  );

  app.get<HashParams & { Params: { index: string } }>('/block/:hash/txid/:index', async (request, reply) => {
    const { txids } = await blockTxids(deps, request.params.hash);
    const index = parseIndexParam(request.params.index);
    if (index >= txids.length) throw new ServiceError('ERR_TX_NOT_FOUND', { message: 'tx index out of range' });
    return reply.type('text/plain').send(hashToHex(txids[index]!));
  });

  const blockTxs = async (rawHash: string, rawStart: string | undefined) => {
    const { row, txids } = await blockTxids(deps, rawHash);
    // (electrs: a start index that is no number counts as 0)
    const start = rawStart !== undefined && /^[0-9]{1,10}$/.test(rawStart) ? Number(rawStart) : 0;
    if (start >= txids.length) throw new ServiceError('ERR_TX_NOT_FOUND', { message: 'start index out of range' });
    if (start % CHAIN_TXS_PER_PAGE !== 0)
      throw new ServiceError('ERR_INVALID_PARAMETER', { message: `start index must be a multipication of ${CHAIN_TXS_PER_PAGE}` });
    const page = txids.slice(start, start + CHAIN_TXS_PER_PAGE);
    const block = decodeBlock(await blockBytes(deps, row.hash));
    const decoded = new Map(block.txs.slice(start, start + CHAIN_TXS_PER_PAGE).map((tx) => [hashToHex(tx.txid), tx] as const));
    const txs = await esploraTxs(deps, page, decoded);
    if (txs.some((t) => t === undefined)) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
    return txs;
  };
  app.get<HashParams>('/block/:hash/txs', async (request) => blockTxs(request.params.hash, undefined));
  app.get<HashParams & { Params: { start: string } }>('/block/:hash/txs/:start', async (request) =>
    blockTxs(request.params.hash, request.params.start),
  );

  app.get<HashParams>('/block/:hash/raw', async (request, reply) => {
    const row = await blockRow(deps, request.params.hash);
    return reply.type('application/octet-stream').send(Buffer.from(await blockBytes(deps, row.hash)));
  });
};
