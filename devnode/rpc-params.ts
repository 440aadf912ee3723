/**
 * Argument checking as Core's RPCHelpMan does it: type errors (-3 "JSON value of type X is not
 * of expected type Y"), hashes (-8 "… must be of length 64 (not N, for 'x')"), verbosity as a
 * number or a boolean, amounts in BTC, and the usage error for a wrong argument count.
 * @module
 */
import { RPC_ERR, RpcError } from './rpc-server.js';

/** UniValue's type names. */
function jsonTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

function typeError(v: unknown, expected: string): RpcError {
  return new RpcError(RPC_ERR.TYPE_ERROR, `JSON value of type ${jsonTypeName(v)} is not of expected type ${expected}`);
}

/** Throws Core's usage error unless `min <= params.length <= max`. */
export function arity(method: string, params: unknown[], min: number, max: number, usage: string): void {
  if (params.length < min || params.length > max) {
    throw new RpcError(
      RPC_ERR.MISC_ERROR,
      `${method} ${usage}\n\nArguments do not match the devnode's ${method} (see Bitcoin Core's help).`,
    );
  }
}

/** True when the argument is absent or null. */
export function absent(v: unknown): boolean {
  return v === undefined || v === null;
}

function argNumber(v: unknown): number {
  if (typeof v !== 'number') throw typeError(v, 'number');
  return v;
}

export function argInt(v: unknown): number {
  const n = argNumber(v);
  if (!Number.isInteger(n)) throw new RpcError(RPC_ERR.TYPE_ERROR, 'JSON integer out of range');
  return n;
}

export function argString(v: unknown): string {
  if (typeof v !== 'string') throw typeError(v, 'string');
  return v;
}

export function argBool(v: unknown): boolean {
  if (typeof v !== 'boolean') throw typeError(v, 'bool');
  return v;
}

export function argArray(v: unknown): unknown[] {
  if (!Array.isArray(v)) throw typeError(v, 'array');
  return v;
}

/** ParseHashV: lower-case display hex of a 64-character hex argument. */
export function argHash(v: unknown, name: string): string {
  const s = argString(v);
  if (s.length !== 64) throw new RpcError(RPC_ERR.INVALID_PARAMETER, `${name} must be of length 64 (not ${s.length}, for '${s}')`);
  if (!/^[0-9a-fA-F]+$/.test(s)) throw new RpcError(RPC_ERR.INVALID_PARAMETER, `${name} must be hexadecimal string (not '${s}')`);
  return s.toLowerCase();
}

/** ParseVerbosity(arg, default, allow_bool = true). */
export function argVerbosity(v: unknown, def: number): number {
  if (absent(v)) return def;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return argInt(v);
}

/** AmountFromValue: a BTC amount (number or numeric string) in sats. */
export function argAmount(v: unknown): bigint {
  let text: string;
  if (typeof v === 'number') text = v.toFixed(8);
  else if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v)) text = v;
  else throw new RpcError(RPC_ERR.TYPE_ERROR, 'Amount is not a number or string');
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m || ((m[3]?.length ?? 0) > 8 && !/^0+$/.test(m[3]!.slice(8)))) throw new RpcError(RPC_ERR.TYPE_ERROR, 'Invalid amount');
  const frac = (m[3] ?? '').slice(0, 8).padEnd(8, '0');
  const sats = BigInt(m[2]!) * 100_000_000n + BigInt(frac);
  if (m[1]) throw new RpcError(RPC_ERR.TYPE_ERROR, 'Amount out of range');
  if (sats > 21_000_000n * 100_000_000n) throw new RpcError(RPC_ERR.TYPE_ERROR, 'Amount out of range');
  return sats;
}

/** A fee rate in BTC/kvB as sat/kvB (ParseFeeRate). */
export function argFeeRate(v: unknown, def: bigint): bigint {
  if (absent(v)) return def;
  return argAmount(v);
}
