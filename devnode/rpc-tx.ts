/**
 * Transaction and mempool RPCs with Core's answers and errors: getrawtransaction (txindex,
 * verbosity 0–2, blockhash), decoderawtransaction, sendrawtransaction, testmempoolaccept,
 * getrawmempool, getmempoolentry, getmempoolinfo, gettxout, estimatesmartfee; and the non-Core
 * test control setfeeestimate.
 * @module
 */
import { bytesToHex, hexToBytes } from '../src/bitcoin/hash.js';
import { decodeTx, type DecodedTx } from '../src/bitcoin/tx.js';
import { broadcastTx } from './broadcast.js';
import { txidOf, wtxidOf, type BlockEntry, type Coin } from './chain.js';
import type { DevnodeContext } from './context.js';
import { amount } from './core-json.js';
import { mempoolEntryJson, mempoolInfoJson, mempoolJson, scriptPubKeyJson, txJson } from './json-views.js';
import { rejectString } from './mempool-accept.js';
import { feeForSize, feeRatePerKvB, isUnspendable, POLICY } from './policy.js';
import { lookupBlock } from './rpc-chain.js';
import { absent, argAmount, argArray, argBool, argFeeRate, argHash, argInt, argString, argVerbosity, arity } from './rpc-params.js';
import { RPC_ERR, RpcError, type RpcMethod } from './rpc-server.js';

const GENESIS_MERKLE = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b';

/** DecodeHexTx, or RPC -22 with `message`. */
function decodeHexTx(v: unknown, message = 'TX decode failed. Make sure the tx has at least one input.'): DecodedTx {
  const s = argString(v);
  try {
    const tx = decodeTx(hexToBytes(s));
    if (tx.inputs.length === 0) throw new RangeError('no inputs');
    return tx;
  } catch {
    throw new RpcError(RPC_ERR.DESERIALIZATION_ERROR, message);
  }
}

/** GetTransaction: mempool first (without a block), then the txindex, then the given block. */
function getTransaction(ctx: DevnodeContext, txid: string, block: BlockEntry | null): { tx: DecodedTx; blockHash: string | null } | null {
  const { node } = ctx;
  if (!block) {
    const e = node.mempool.get(txid);
    if (e) return { tx: e.tx, blockHash: null };
  }
  const indexed = node.chain.txIndex.get(txid);
  if (indexed && (!block || block.hash === indexed) && !ctx.hidden.has(indexed)) {
    const b = node.chain.get(indexed)!;
    const tx = b.block.txs.find((t) => txidOf(t) === txid);
    if (tx) return { tx, blockHash: indexed };
  }
  if (block) {
    const tx = block.block.txs.find((t) => txidOf(t) === txid);
    if (tx) return { tx, blockHash: block.hash };
  }
  return null;
}

/** The undo coins of `tx` in block `e` (verbosity 2 prevouts), when the block was connected. */
function undoFor(e: BlockEntry, tx: DecodedTx): Coin[] | null {
  if (!e.undo || tx.isCoinbase) return null;
  const i = e.block.txs.indexOf(tx);
  return i > 0 ? (e.undo[i - 1] ?? null) : null;
}

/**
 * estimatesmartfee: Core's answer for a regtest node with too little data, or a set estimate:
 * `{ feerate, blocks }` as Core gives it, the rate in BTC/kvB never under the relay fee (Core
 * takes the max with mempoolminfee and minrelaytxfee), `blocks` the target it was found at (the
 * asked target, 1 counted as 2, or the estimate's own horizon when that is further).
 */
function estimateSmartFee(ctx: DevnodeContext, target: number): Record<string, unknown> {
  const { node } = ctx;
  const asked = target === 1 ? 2 : target;
  const set = ctx.feeEstimate;
  if (set.perKvB !== null) {
    const rate = set.perKvB > POLICY.minRelayFeePerKvB ? set.perKvB : POLICY.minRelayFeePerKvB;
    return { feerate: amount(rate), blocks: Math.max(asked, set.blocks) };
  }
  const first = node.firstRecordedHeight;
  const span = first > 0 ? Math.max(0, node.chain.height() - first) : 0;
  const maxUsable = Math.min(1008, Math.floor(span / 2));
  return { errors: ['Insufficient data or no feerate found'], blocks: Math.min(asked, maxUsable) };
}

/** Sets (or with null clears) the estimate estimatesmartfee answers with (sat/kvB, horizon in blocks). */
export function setFeeEstimate(state: DevnodeContext['feeEstimate'], perKvB: bigint | null, blocks = 2): void {
  if (perKvB !== null && perKvB < 0n) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Invalid fee_rate: must not be negative');
  if (!Number.isInteger(blocks) || blocks < 2 || blocks > 1008)
    throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Invalid blocks, must be between 2 and 1008');
  state.perKvB = perKvB;
  state.blocks = blocks;
}

/** bitcoin-cli sends the arguments of a method it does not know as strings: "12", "6", "null". */
const cliValue = (v: unknown): unknown => (v === 'null' ? null : typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v);

/**
 * The rate argument of setfeeestimate in sat/kvB: a number in `unit` sat/vB (up to 3 decimals,
 * as Core's fee_rate arguments) or BTC/kvB (an amount, as estimatesmartfee prints it).
 */
function argEstimateRate(v: unknown, unit: string): bigint {
  if (unit !== 'sat/vb' && unit !== 'btc/kvb')
    throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Invalid unit, must be one of: "sat/vB", "BTC/kvB"');
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RpcError(RPC_ERR.TYPE_ERROR, 'Amount is not a number or string');
  if (v < 0) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Invalid fee_rate: must not be negative');
  return unit === 'btc/kvb' ? argAmount(v) : BigInt(Math.round(v * 1000));
}

/** The raw transaction and mempool methods. */
export function txMethods(ctx: DevnodeContext): Record<string, RpcMethod> {
  const { node } = ctx;
  return {
    getrawtransaction: {
      args: ['txid', 'verbosity', 'blockhash'],
      run: ({ params }) => {
        arity('getrawtransaction', params, 1, 3, '"txid" ( verbosity "blockhash" )');
        const txid = argHash(params[0], 'parameter 1');
        if (txid === GENESIS_MERKLE) {
          throw new RpcError(
            RPC_ERR.INVALID_ADDRESS_OR_KEY,
            'The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved',
          );
        }
        const verbosity = argVerbosity(params[1], 0);
        let block: BlockEntry | null = null;
        if (!absent(params[2])) {
          block = lookupBlock(ctx, argHash(params[2], 'parameter 3')) ?? null;
          if (!block) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Block hash not found');
        }
        const found = getTransaction(ctx, txid, block);
        if (!found) {
          const msg = block ? 'No such transaction found in the provided block' : 'No such mempool or blockchain transaction';
          throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, `${msg}. Use gettransaction for wallet transactions.`);
        }
        if (verbosity <= 0) return bytesToHex(found.tx.bytes);
        const out: Record<string, unknown> = {};
        if (block) out.in_active_chain = node.chain.contains(block);
        const index = block ?? (found.blockHash ? (node.chain.get(found.blockHash) ?? null) : null);
        const undo = verbosity >= 2 && index ? undoFor(index, found.tx) : null;
        Object.assign(out, txJson(found.tx, { undo, prevouts: true }));
        if (found.blockHash) {
          out.blockhash = found.blockHash;
          const e = node.chain.get(found.blockHash)!;
          if (node.chain.contains(e)) {
            out.confirmations = node.chain.height() - e.height + 1;
            out.time = e.block.header.time;
            out.blocktime = e.block.header.time;
          } else {
            out.confirmations = 0;
          }
        }
        return out;
      },
    },
    decoderawtransaction: {
      args: ['hexstring', 'iswitness'],
      run: ({ params }) => {
        arity('decoderawtransaction', params, 1, 2, '"hexstring" ( iswitness )');
        return txJson(decodeHexTx(params[0], 'TX decode failed'), { includeHex: false });
      },
    },
    sendrawtransaction: {
      args: ['hexstring', 'maxfeerate', 'maxburnamount'],
      run: ({ params }) => {
        arity('sendrawtransaction', params, 1, 3, '"hexstring" ( maxfeerate maxburnamount )');
        const tx = decodeHexTx(params[0]);
        const maxBurn = absent(params[2]) ? 0n : argAmount(params[2]);
        for (const o of tx.outputs) {
          if (isUnspendable(o.script) && o.value > maxBurn) {
            throw new RpcError(RPC_ERR.VERIFY_ERROR, 'Unspendable output exceeds maximum configured by user (maxburnamount)');
          }
        }
        return broadcastTx(node, tx, argFeeRate(params[1], POLICY.defaultMaxFeeRatePerKvB));
      },
    },
    testmempoolaccept: {
      args: ['rawtxs', 'maxfeerate'],
      run: ({ params }) => {
        arity('testmempoolaccept', params, 1, 2, '["rawtx",...] ( maxfeerate )');
        const raws = argArray(params[0]);
        if (raws.length < 1 || raws.length > 25)
          throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Array must contain between 1 and 25 transactions.');
        if (raws.length > 1)
          throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'The devnode tests one transaction at a time (no package validation).');
        const maxRate = argFeeRate(params[1], POLICY.defaultMaxFeeRatePerKvB);
        return raws.map((raw) => {
          const tx = decodeHexTx(raw, `TX decode failed: ${String(raw)} Make sure the tx has at least one input.`);
          const o: Record<string, unknown> = { txid: txidOf(tx), wtxid: wtxidOf(tx) };
          const r = node.acceptTx(tx, { testAccept: true });
          if (r.ok) {
            const maxFee = feeForSize(maxRate, r.vsize);
            if (maxFee > 0n && r.fee > maxFee) {
              o.allowed = false;
              o['reject-reason'] = 'max-fee-exceeded';
            } else {
              o.allowed = true;
              o.vsize = r.vsize;
              o.fees = { base: amount(r.fee), 'effective-feerate': amount(feeRatePerKvB(r.fee, r.vsize)), 'effective-includes': [r.wtxid] };
            }
          } else {
            o.allowed = false;
            if (r.result === 'missing-inputs') o['reject-reason'] = 'missing-inputs';
            else {
              o['reject-reason'] = r.reason;
              o['reject-details'] = rejectString(r);
            }
          }
          return o;
        });
      },
    },
    getrawmempool: {
      args: ['verbose', 'mempool_sequence'],
      run: ({ params }) => {
        arity('getrawmempool', params, 0, 2, '( verbose mempool_sequence )');
        const verbose = absent(params[0]) ? false : argBool(params[0]);
        const withSeq = absent(params[1]) ? false : argBool(params[1]);
        if (verbose && withSeq) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Verbose results cannot contain mempool sequence values.');
        return mempoolJson(node, verbose, withSeq);
      },
    },
    getmempoolentry: {
      args: ['txid'],
      run: ({ params }) => {
        arity('getmempoolentry', params, 1, 1, '"txid"');
        const e = node.mempool.get(argHash(params[0], 'parameter 1'));
        if (!e) throw new RpcError(RPC_ERR.INVALID_ADDRESS_OR_KEY, 'Transaction not in mempool');
        return mempoolEntryJson(node, e);
      },
    },
    getmempoolinfo: { args: [], run: () => mempoolInfoJson(node) },
    gettxout: {
      args: ['txid', 'n', 'include_mempool'],
      run: ({ params }) => {
        arity('gettxout', params, 2, 3, '"txid" n ( include_mempool )');
        const txid = argHash(params[0], 'txid');
        const n = argInt(params[1]);
        const mempool = absent(params[2]) ? true : argBool(params[2]);
        let coin: Coin | undefined;
        if (mempool) {
          if (node.mempool.spender(txid, n)) return null;
          coin = node.mempool.coin(txid, n, 0x7fffffff);
        }
        coin ??= node.chain.coin(txid, n);
        if (!coin) return null;
        const tip = node.chain.tip();
        return {
          bestblock: tip.hash,
          confirmations: coin.height === 0x7fffffff ? 0 : tip.height - coin.height + 1,
          value: amount(coin.value),
          scriptPubKey: scriptPubKeyJson(coin.script),
          coinbase: coin.coinbase,
        };
      },
    },
    estimatesmartfee: {
      args: ['conf_target', 'estimate_mode'],
      run: ({ params }) => {
        arity('estimatesmartfee', params, 1, 2, 'conf_target ( "estimate_mode" )');
        const target = argInt(params[0]);
        if (target < 1 || target > 1008) throw new RpcError(RPC_ERR.INVALID_PARAMETER, 'Invalid conf_target, must be between 1 and 1008');
        if (!absent(params[1]) && !['unset', 'economical', 'conservative'].includes(argString(params[1]).toLowerCase())) {
          throw new RpcError(
            RPC_ERR.INVALID_PARAMETER,
            'Invalid estimate_mode parameter, must be one of: "unset", "economical", "conservative"',
          );
        }
        return estimateSmartFee(ctx, target);
      },
    },
    // Not a Core method: a test control for estimatesmartfee (devnode/README.md).
    setfeeestimate: {
      args: ['fee_rate', 'blocks', 'unit'],
      run: ({ params }) => {
        arity('setfeeestimate', params, 1, 3, 'fee_rate ( blocks "unit" )');
        const [rate, blocks] = [cliValue(params[0]), cliValue(params[1])];
        const unit = absent(params[2]) ? 'sat/vb' : argString(params[2]).toLowerCase();
        const perKvB = rate === null ? null : argEstimateRate(rate, unit);
        setFeeEstimate(ctx.feeEstimate, perKvB, absent(blocks) ? 2 : argInt(blocks));
        return null;
      },
    },
  };
}
