/**
 * GET /blockchain (tip of the index) and GET /blocks/{hash} (a main-chain block: what the
 * dialect's block answer loads and shows); with `?format=hex` (Coinstack's dialect) the block's
 * raw bytes as hex text, from the node.
 * @module
 */
import { getIndexTip } from '../queries/chain.js';
import { hashToHex } from '../../src/bitcoin/hash.js';
import { ServiceError } from '../../src/errors.js';
import { blockchainStatusSchema } from '../schemas.js';
import type { RouteModule } from '../dialect.js';
import { sendBlockHex } from './raw-hex.js';
import { setTipHeaders, withTipHeaders } from '../tip.js';

export const chainRoutes: RouteModule = (app, deps, dialect) => {
  app.get(
    '/blockchain',
    {
      schema: {
        summary: 'Chain status: the indexed tip',
        tags: ['chain'],
        response: dialect.routes.response(withTipHeaders(blockchainStatusSchema)),
      },
    },
    async (_request, reply) => {
      const tip = await getIndexTip(deps.readDb);
      if (tip.height < 0 || !tip.hash) throw new ServiceError('ERR_INDEX_SYNCING', { message: 'nothing is indexed yet' });
      setTipHeaders(reply, tip);
      return { best_block_hash: hashToHex(tip.hash), best_height: tip.height };
    },
  );

  const block = dialect.answers.block;
  app.get<{ Params: { hash: string } }>(
    '/blocks/:hash',
    {
      schema: {
        summary: 'A block of the main chain',
        tags: ['chain'],
        params: dialect.routes.hashParams,
        response: dialect.routes.response(withTipHeaders(block.schema)),
      },
    },
    async (request, reply) => {
      const hash = dialect.routes.parseHash(request.params.hash, 'ERR_BLOCK_NOT_FOUND');
      if (dialect.routes.wantsHex(request)) return sendBlockHex(deps, hash, reply);
      const r = await block.load(deps, hash);
      if (!r) throw new ServiceError('ERR_BLOCK_NOT_FOUND');
      setTipHeaders(reply, r.tip);
      return r.answer;
    },
  );
};
