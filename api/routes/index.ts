/**
 * The route modules of each dialect (api/dialect.ts), registered by buildApi under the
 * dialect's prefix. A module serving both is registered twice and answers in each dialect
 * through the dialect object it is given. To add routes: write `api/routes/<thing>.ts` exporting
 * a RouteModule and add it here (see api/README.md for the pattern).
 * @module
 */
import type { DialectEdge, RouteModule } from '../dialect.js';
import { chainRoutes } from './chain.js';
import { addressRoutes } from './addresses.js';
import { transactionRoutes } from './transactions.js';
import { stampRoutes } from './stamps.js';
import { hookRoutes } from './hooks.js';
import { subscriptionRoutes } from './subscriptions.js';
import { blockRoutes } from './blocks.js';
import { transactionReadRoutes } from './transaction-reads.js';
import { walletRoutes } from './wallets.js';
import { mempoolRoutes } from './mempool.js';
import { feeRoutes } from './fees.js';
import { coinstackOnlyRoutes } from './coinstack-only.js';
import { spendRoutes } from './spends.js';
import { addressReadRoutes } from './address-reads.js';
import { eventRoutes } from './events.js';
import { esploraTransactionRoutes } from './esplora-transactions.js';
import { esploraScriptRoutes } from './esplora-scripts.js';
import { esploraBlockRoutes } from './esplora-blocks.js';
import { esploraMempoolRoutes } from './esplora-mempool.js';
import { hookActivityRoutes } from './hook-activity.js';

export const routeModules: { v1: RouteModule[]; coinstack: RouteModule[]; esplora: RouteModule<DialectEdge>[] } = {
  // (/v1's block and transaction answers, richer than the spec's, come with the dialect: api/dialects/v1.ts)
  v1: [
    chainRoutes,
    addressRoutes,
    transactionRoutes,
    stampRoutes,
    hookRoutes,
    subscriptionRoutes,
    blockRoutes,
    transactionReadRoutes,
    walletRoutes,
    mempoolRoutes,
    feeRoutes,
    spendRoutes,
    addressReadRoutes,
    eventRoutes,
    hookActivityRoutes,
  ],
  // coinstackd has no hooks; they are served here too, so that a signing key (Coinstack's SDKs
  // sign every request) can make the hooks its subscriptions' `action` names.
  coinstack: [chainRoutes, addressRoutes, transactionRoutes, stampRoutes, hookRoutes, subscriptionRoutes, coinstackOnlyRoutes],
  // Esplora's routes are its own (api/dialects/esplora.ts); /v1's mempool and fee routes have its shapes already.
  esplora: [esploraTransactionRoutes, esploraScriptRoutes, esploraBlockRoutes, esploraMempoolRoutes, mempoolRoutes, feeRoutes],
};
