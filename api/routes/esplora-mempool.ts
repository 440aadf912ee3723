/**
 * Esplora's `/mempool/txids`: every txid of the indexed mempool (electrs: "in no particular
 * order"). `/mempool`, `/mempool/recent` and `/fee-estimates` are /v1's own routes, which have
 * Esplora's shapes already (api/routes/mempool.ts, fees.ts).
 * @module
 */
import { hashToHex } from '../../src/bitcoin/hash.js';
import { listMempoolTxids } from '../queries/mempool.js';
import type { DialectEdge, RouteModule } from '../dialect.js';

export const esploraMempoolRoutes: RouteModule<DialectEdge> = (app, deps) => {
  app.get('/mempool/txids', async () => (await listMempoolTxids(deps.readDb)).map((t) => hashToHex(t)));
};
