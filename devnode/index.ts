/**
 * The devnode: a Bitcoin Core 30 regtest stand-in for tests, CI and the quick start.
 * See README.md (options, handle, fault injection).
 * @module
 */
export { startDevnode, DevnodeRpcError, type Devnode, type DevnodeFaults, type DevnodeOptions } from './start.js';
export { ADDRESS_TYPES, type AddressType, type Destination, type PaymentTarget, type SendOptions } from './wallet.js';
export { ZMQ_TOPICS, type SentMessage, type ZmqFaults, type ZmqTopic } from './zmq.js';
export { GENESIS_HASH, GENESIS_HEX } from './consensus.js';
