/**
 * Core's BroadcastTransaction and the RPC errors it turns into: outputs already in the UTXO set
 * (-27 "Transaction outputs already in utxo set"), already in the mempool (success, same txid),
 * a test acceptance to check the fee against maxfeerate (-25 "Fee exceeds maximum configured by
 * user (e.g. -maxtxfee, maxfeerate)"), then acceptance: missing inputs → -25 with the reject
 * reason, any other rejection → -26 with `reason[, debug]`.
 * @module
 */
import type { DecodedTx } from '../src/bitcoin/tx.js';
import { txidOf } from './chain.js';
import { rejectString, type TxRejected } from './mempool-accept.js';
import type { Node } from './node.js';
import { feeForSize, POLICY } from './policy.js';
import { RPC_ERR, RpcError } from './rpc-server.js';

/** JSONRPCTransactionError for an ATMP rejection. */
function rejectionError(r: TxRejected): RpcError {
  if (r.result === 'missing-inputs') return new RpcError(RPC_ERR.VERIFY_ERROR, rejectString(r));
  return new RpcError(RPC_ERR.VERIFY_REJECTED, rejectString(r));
}

/** Broadcasts `tx` (sendrawtransaction semantics); returns its txid or throws RpcError. */
export function broadcastTx(node: Node, tx: DecodedTx, maxFeeRatePerKvB: bigint = POLICY.defaultMaxFeeRatePerKvB): string {
  const txid = txidOf(tx);
  for (let v = 0; v < tx.outputs.length; v++) {
    if (node.chain.coin(txid, v)) throw new RpcError(RPC_ERR.VERIFY_ALREADY_IN_UTXO_SET, 'Transaction outputs already in utxo set');
  }
  if (node.mempool.has(txid)) return txid;
  const maxFee = feeForSize(maxFeeRatePerKvB, tx.vsize);
  if (maxFee > 0n) {
    const test = node.acceptTx(tx, { testAccept: true });
    if (!test.ok) throw rejectionError(test);
    if (test.fee > maxFee) throw new RpcError(RPC_ERR.VERIFY_ERROR, 'Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)');
  }
  const r = node.acceptTx(tx, { unbroadcast: true });
  if (!r.ok) throw rejectionError(r);
  return txid;
}
