/**
 * The network table, for the server: the SDK's (client/network.ts), so that an address means
 * the same to the SDK and to the server. The SDK stands alone (it is published); the kernel
 * depends on it, never the reverse.
 * @module
 */
export { NETWORK_NAMES, NETWORKS, getNetwork, isNetworkName, type Network, type NetworkName } from '../../client/network.js';
