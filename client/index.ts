/**
 * @blockwire/client — the Blockwire SDK for Node ≥ 20 and browsers: a typed API client, keys and
 * addresses, a transaction builder that signs on the client, multisig with PSBT, data outputs,
 * Open Assets, `sendTransaction` with retry, and a resumable event stream. Private keys never
 * leave the process. See README.md beside this file.
 * @module
 */
export { BlockwireClient, type ClientOptions, type PageOptions, type ScriptArg, type UnspentOptions } from './api.js';
export { toSats } from './unspent.js';
export { ApiError, BlockwireError, ConnectionError, DustError, InsufficientFundsError, type ApiErrorBody } from './errors.js';
export { NETWORKS, NETWORK_NAMES, getNetwork, type Network, type NetworkName } from './network.js';
export {
  ADDRESS_TYPES,
  Key,
  addressFromPublicKey,
  addressToScript,
  decodeAddress,
  decodeWif,
  encodeWif,
  getPublicKey,
  isValidAddress,
  randomPrivateKey,
  scriptToAddress,
  type AddressType,
  type DecodedAddress,
  type DecodedWif,
} from './keys.js';
export { sendWithRetry, isRetryableSendError, type SendOptions, type SignedTransaction } from './send.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export { EventStream, type StreamOptions, type StreamState, type WebSocketConstructor, type WebSocketLike } from './stream.js';
export { Reservations, outpoint, type Reservation } from './reservations.js';
export { DUST_THRESHOLD, planTransaction, type Candidate, type Plan, type PlanRequest, type PlannedOutput } from './plan.js';
export {
  TransactionBuilder,
  createTransactionBuilder,
  type BuilderClient,
  type BuilderOptions,
  type BuiltInput,
  type BuiltOutput,
  type BuiltTransaction,
  type PartialTransaction,
} from './builder.js';
export { keySource, multisigSource, type KeyInput, type SpendSource } from './sources.js';
export { MULTISIG_TYPES, createMultisig, type MultisigAccount, type MultisigOptions, type MultisigType } from './multisig.js';
export { combinePsbts, describePsbt, finalizePsbt, psbtStatus, signPsbt, type InputSignatures, type PsbtInput } from './psbt.js';
export {
  MAX_ASSET_QUANTITY,
  assetIdFromScript,
  colorTransaction,
  decodeAssetId,
  decodeLeb128,
  decodeMarkerPayload,
  encodeAssetId,
  encodeLeb128,
  encodeMarkerPayload,
  markerScript,
  parseMarkerScript,
  type Marker,
  type OutputColor,
} from './open-assets.js';
export {
  ColoringEngine,
  OpenAssets,
  type AssetBalance,
  type AssetClient,
  type ColoredOutput,
  type ColoredUnspentOutput,
  type IssueOptions,
  type TransferOptions,
} from './assets.js';
export {
  WalletsApi,
  deriveAtPath,
  type Wallet,
  type WalletSpec,
  type WalletBalance,
  type WalletHistoryEntry,
  type WalletUnspentOutput,
  type WalletAddress,
  type WalletPayment,
  type WalletPaymentRequest,
} from './wallets.js';
export { StampProofError, verifyStampProof, type StampProofFailure, type VerifiedStamp, type VerifyStampOptions } from './stamp-proof.js';
export type * from './types.js';
export { EVENT_TYPES } from './event-types.js';
