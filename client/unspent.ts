/**
 * Amounts and unspent outputs as the client hands them out: satoshis as `bigint`, and one
 * naming for every unspent output (`txid`/`vout`, see `UnspentOutput`), whether it comes from
 * an address's list or a wallet's.
 * @module
 */
import type { UnspentOutput } from './types.js';

/** An unspent output as the server sends it (`GET /addresses/{address}/unspentoutputs`, and the wallet list's first fields). */
export type RawUnspent = { transaction_hash: string; index: number; value: string | number; script: string; confirmations: number };

/** Satoshis from the API's decimal string or number. @throws TypeError for anything else. */
export function toSats(v: string | number | bigint): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw new TypeError(`Not an amount in satoshis: ${JSON.stringify(v)}`);
}

/** The server's `transaction_hash`/`index` as `txid`/`vout`, the value in satoshis. */
export function parseUnspent(u: RawUnspent): UnspentOutput {
  return { txid: u.transaction_hash, vout: u.index, value: toSats(u.value), script: u.script, confirmations: u.confirmations };
}
