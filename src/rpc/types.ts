/**
 * Result shapes of the bitcoind RPCs Blockwire calls, as Bitcoin Core 30 returns them (the RPC
 * client tests call a real bitcoind 30). Amounts are BTC numbers as in Core's JSON; use
 * `btcToSats` for satoshis.
 * @module
 */

/** BTC as Core prints it → satoshis (exact for every amount up to 21M BTC). */
export function btcToSats(btc: number): bigint {
  return BigInt(Math.round(btc * 1e8));
}

export type BlockchainInfo = {
  chain: string;
  blocks: number;
  headers: number;
  bestblockhash: string;
  bits: string;
  target: string;
  difficulty: number;
  time: number;
  mediantime: number;
  verificationprogress: number;
  initialblockdownload: boolean;
  chainwork: string;
  size_on_disk: number;
  pruned: boolean;
  warnings: string[] | string;
};

export type BlockHeaderInfo = {
  hash: string;
  confirmations: number;
  height: number;
  version: number;
  versionHex: string;
  merkleroot: string;
  time: number;
  mediantime: number;
  nonce: number;
  bits: string;
  target?: string;
  difficulty: number;
  chainwork: string;
  nTx: number;
  previousblockhash?: string;
  nextblockhash?: string;
};

export type ScriptPubKeyInfo = { asm: string; desc: string; hex: string; address?: string; type: string };

export type TxInputInfo = {
  txid?: string;
  vout?: number;
  coinbase?: string;
  scriptSig?: { asm: string; hex: string };
  txinwitness?: string[];
  prevout?: { generated: boolean; height: number; value: number; scriptPubKey: ScriptPubKeyInfo };
  sequence: number;
};

export type TxInfo = {
  txid: string;
  hash: string;
  version: number;
  size: number;
  vsize: number;
  weight: number;
  locktime: number;
  vin: TxInputInfo[];
  vout: { value: number; n: number; scriptPubKey: ScriptPubKeyInfo }[];
  fee?: number;
  hex?: string;
  in_active_chain?: boolean;
  blockhash?: string;
  confirmations?: number;
  time?: number;
  blocktime?: number;
};

export type BlockInfo<T = string> = BlockHeaderInfo & { strippedsize: number; size: number; weight: number; tx: T[] };

export type ChainTip = {
  height: number;
  hash: string;
  branchlen: number;
  status: 'active' | 'valid-fork' | 'valid-headers' | 'headers-only' | 'invalid' | string;
};

export type MempoolEntryInfo = {
  vsize: number;
  weight: number;
  time: number;
  height: number;
  descendantcount: number;
  descendantsize: number;
  ancestorcount: number;
  ancestorsize: number;
  wtxid: string;
  fees: { base: number; modified: number; ancestor: number; descendant: number };
  depends: string[];
  spentby: string[];
  'bip125-replaceable': boolean;
  unbroadcast: boolean;
};

export type MempoolWithSequence = { txids: string[]; mempool_sequence: number };

export type MempoolInfo = {
  loaded: boolean;
  size: number;
  bytes: number;
  usage: number;
  total_fee: number;
  maxmempool: number;
  mempoolminfee: number;
  minrelaytxfee: number;
  incrementalrelayfee: number;
  unbroadcastcount: number;
  fullrbf: boolean;
};

export type TestMempoolAcceptResult = {
  txid: string;
  wtxid: string;
  allowed?: boolean;
  vsize?: number;
  fees?: { base: number; 'effective-feerate': number; 'effective-includes': string[] };
  'reject-reason'?: string;
  'reject-details'?: string;
};

export type SmartFeeEstimate = { feerate?: number; errors?: string[]; blocks: number };

export type ZmqNotification = { type: string; address: string; hwm: number };

export type NetworkInfo = {
  version: number;
  subversion: string;
  protocolversion: number;
  relayfee: number;
  incrementalfee: number;
  warnings: string[] | string;
} & Record<string, unknown>;
