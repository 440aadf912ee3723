/**
 * Regtest addresses as Core's RPC shows them (ExtractDestination): P2PKH, P2SH, segwit v0 (bech32)
 * and v1+ (bech32m), anchors; P2PK and bare multisig have none in Core's JSON. Built on
 * src/bitcoin's addresses and Solver.
 * @module
 */
import { addressToScript as decodeToScript, outputAddresses } from '../src/bitcoin/address.js';
import { classifyScript } from '../src/bitcoin/script.js';

/** The regtest address of an output script, or null when Core shows none. */
export function scriptToAddress(script: Uint8Array): string | null {
  const t = classifyScript(script);
  if (t === 'pubkey' || t === 'multisig' || t === 'nulldata' || t === 'nonstandard') return null;
  return outputAddresses(script, 'regtest')[0] ?? null;
}

/**
 * The output script of a regtest address, or null when it is not one (Core's IsValidDestination).
 * (The kernel's addressToScript throws instead; this is its devnode form, for RPC validation.)
 */
export function regtestScript(address: string): Uint8Array | null {
  try {
    return decodeToScript(address, 'regtest');
  } catch {
    return null;
  }
}
