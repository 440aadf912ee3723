/**
 * The route modules of the API, registered by buildApi under `/v1` and at the bare paths.
 * To add routes: write `api/routes/<thing>.ts` exporting a RouteModule and add it here
 * (see api/README.md for the pattern).
 * @module
 */
import type { RouteModule } from '../deps.js';
import { chainRoutes } from './chain.js';
import { addressRoutes } from './addresses.js';
import { transactionRoutes } from './transactions.js';
import { stampRoutes } from './stamps.js';
import { hookRoutes } from './hooks.js';
import { subscriptionRoutes } from './subscriptions.js';

export const routeModules: RouteModule[] = [chainRoutes, addressRoutes, transactionRoutes, stampRoutes, hookRoutes, subscriptionRoutes];
