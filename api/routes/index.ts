/**
 * The route modules of each dialect (api/dialect.ts), registered by buildApi under the
 * dialect's prefix. A module serving both is registered twice and answers in each dialect
 * through the dialect object it is given. To add routes: write `api/routes/<thing>.ts` exporting
 * a RouteModule and add it here (see api/README.md for the pattern).
 * @module
 */
import type { RouteModule } from '../deps.js';
import type { DialectName } from '../dialect.js';
import { chainRoutes, chainRoutesWith } from './chain.js';
import { addressRoutes } from './addresses.js';
import { transactionRoutes, transactionRoutesWith } from './transactions.js';
import { stampRoutes } from './stamps.js';
import { hookRoutes } from './hooks.js';
import { subscriptionRoutes } from './subscriptions.js';
import { blockRoutes, v1BlockAnswer } from './blocks.js';
import { transactionReadRoutes, v1TransactionAnswer } from './transaction-reads.js';
import { walletRoutes } from './wallets.js';
import { mempoolRoutes } from './mempool.js';
import { feeRoutes } from './fees.js';

export const routeModules: Record<DialectName, RouteModule[]> = {
  // /v1's block and transaction answers carry more than the spec's (header fields; fee, sizes, replaceability)
  v1: [
    chainRoutesWith(v1BlockAnswer),
    addressRoutes,
    transactionRoutesWith(v1TransactionAnswer),
    stampRoutes,
    hookRoutes,
    subscriptionRoutes,
    blockRoutes,
    transactionReadRoutes,
    walletRoutes,
    mempoolRoutes,
    feeRoutes,
  ],
  // coinstackd has no hooks: a subscription's action names a hook made under /v1/hooks.
  coinstack: [chainRoutes, addressRoutes, transactionRoutes, stampRoutes, subscriptionRoutes],
};
