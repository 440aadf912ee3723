/**
 * sendrawtransaction failures recorded from Bitcoin Core 30 (fixtures/bitcoind/rpc.jsonl, step
 * errors-broadcast) map to API errors whose `retry` is true only when resending can succeed.
 */
import { describe, expect, it } from 'vitest';
import { describeFixtures, readFixtureJsonl } from '../../support/fixtures.js';
import { classifyBroadcastError } from '../../../api/broadcast.js';

type RpcLine = { step: string; request: { method: string }; response: { error: { code: number; message: string } | null } };

describeFixtures('broadcast errors recorded from Bitcoin Core', () => {
  it('every recorded sendrawtransaction error has a mapping', async () => {
    const lines = (await readFixtureJsonl<RpcLine>('bitcoind', 'rpc.jsonl')).filter(
      (l) => l.request.method === 'sendrawtransaction' && l.response.error,
    );
    const seen = lines.map((l) => {
      const o = classifyBroadcastError(l.response.error!.code, l.response.error!.message);
      return [
        l.response.error!.code,
        l.response.error!.message,
        o.kind === 'error' ? `${o.error.code}:${o.error.retry}:${o.error.status}` : o.kind,
      ];
    });
    expect(seen).toEqual([
      [-27, 'Transaction outputs already in utxo set', 'already_confirmed'],
      [-22, 'TX decode failed. Make sure the tx has at least one input.', 'ERR_TX_DECODE:false:400'],
      [-22, 'TX decode failed. Make sure the tx has at least one input.', 'ERR_TX_DECODE:false:400'],
      [-26, 'dust, tx with dust output must be 0-fee', 'ERR_TX_REJECTED:false:400'],
      [-25, 'bad-txns-inputs-missingorspent', 'inputs_missing_or_spent'],
      [-25, 'Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)', 'ERR_TX_FEE_TOO_HIGH:false:400'],
    ]);
  });
});

describe('Core rejection reasons not in the recording', () => {
  const cases: [number, string, string][] = [
    [-26, 'mempool min fee not met, 100 < 200', 'ERR_TX_MEMPOOL_LIMIT:true'],
    [-26, 'too-long-mempool-chain, too many descendants', 'ERR_TX_MEMPOOL_LIMIT:true'],
    [-26, 'non-final', 'ERR_TX_NOT_FINAL:true'],
    [-26, 'non-BIP68-final', 'ERR_TX_NOT_FINAL:true'],
    [-26, 'txn-mempool-conflict', 'ERR_TX_CONFLICT:false'],
    [-26, 'insufficient fee, rejecting replacement', 'ERR_TX_CONFLICT:false'],
    [-26, 'min relay fee not met, 0 < 110', 'ERR_TX_REJECTED:false'],
    [-26, 'mandatory-script-verify-flag-failed (Signature must be zero for failed CHECK(MULTI)SIG operation)', 'ERR_TX_REJECTED:false'],
    [-28, 'Loading block index…', 'ERR_NODE_UNAVAILABLE:true'],
    [-1, 'something new', 'ERR_TX_REJECTED:false'],
  ];
  it.each(cases)('%i %s → %s', (code, message, want) => {
    const o = classifyBroadcastError(code, message);
    expect(o.kind).toBe('error');
    if (o.kind === 'error') {
      expect(`${o.error.code}:${o.error.retry}`).toBe(want);
      expect(o.error.errorCause).toBe(message);
    }
  });
});
