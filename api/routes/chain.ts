/**
 * GET /blockchain (tip of the index) and GET /blocks/{hash} (a main-chain block with its
 * parent, its child when there is one, and its transactions), service-api.md "Endpoints".
 * @module
 */
import { findBlockByHash, getIndexTip, listBlockTxids } from '../../src/db/queries/api-chain.js';
import { hashToHex, hexToHash } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { blockchainStatusSchema, blockSchema, hashParams } from '../schemas.js';
import { isoFromUnix } from '../../src/time.js';
import type { ResolvedApiDeps, RouteModule } from '../deps.js';

/** A block's answer and its schema (the spec's Block here; /v1's in api/routes/blocks.ts). */
export type BlockAnswer = { schema: Record<string, unknown>; load(deps: ResolvedApiDeps, hash: Buffer): Promise<object | undefined> };

const specBlock: BlockAnswer = {
  schema: blockSchema,
  async load(deps, hash) {
    const block = await findBlockByHash(deps.db, hash);
    if (!block) return undefined;
    const txids = await listBlockTxids(deps.db, block.height);
    return {
      block_hash: hashToHex(block.hash),
      height: block.height,
      confirmation_time: isoFromUnix(block.time),
      parent: hashToHex(block.prev_hash),
      children: block.next_hash ? [hashToHex(block.next_hash)] : [],
      transaction_list: txids.map((t) => hashToHex(t)),
    };
  },
};

/** The chain routes answering a block with `block`. */
export const chainRoutesWith = (block: BlockAnswer): RouteModule => (app, deps) => {
  app.get(
    '/blockchain',
    { schema: { summary: 'Chain status: the indexed tip', tags: ['chain'], response: { 200: blockchainStatusSchema } } },
    async () => {
      const tip = await getIndexTip(deps.db);
      if (tip.height < 0 || !tip.hash) throw new ServiceError('ERR_INDEX_SYNCING', { message: 'nothing is indexed yet' });
      return { best_block_hash: hashToHex(tip.hash), best_height: tip.height };
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/blocks/:hash',
    { schema: { summary: 'A block of the main chain', tags: ['chain'], params: hashParams, response: { 200: block.schema } } },
    async (request) => {
      const answer = await block.load(deps, Buffer.from(hexToHash(request.params.hash)));
      if (!answer) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
      return answer;
    },
  );
};

export const chainRoutes = chainRoutesWith(specBlock);
