/**
 * Addresses at the API boundary, over src/bitcoin's Core-compatible codecs: a path parameter →
 * the output script it stands for, checked for encoding, checksum and network before any
 * database access; an output script → the addresses the API shows for it and, for OP_RETURN, the payload.
 * @module
 */
import { AddressError, decodeAddress, outputAddresses } from '../src/bitcoin/address.js';
import { NETWORK_NAMES } from '../src/bitcoin/network.js';
import { nullData } from '../src/bitcoin/script.js';
import type { NetworkName } from '../src/config.js';

export type AddressProblem = 'invalid' | 'wrong_network';

/**
 * An address path parameter: the output script of `address` on `network` (as the kernel's
 * addressToScript), or why it is refused: `invalid` (not an address: encoding, checksum,
 * length), or `wrong_network` (it decodes for another network), with a message fit for users.
 */
export function parseAddressParam(
  address: string,
  network: NetworkName,
): { script: Uint8Array } | { problem: AddressProblem; message: string } {
  try {
    return { script: decodeAddress(address, network).script };
  } catch (err) {
    if (!(err instanceof AddressError)) throw err;
    for (const other of NETWORK_NAMES) {
      if (other === network) continue;
      try {
        decodeAddress(address, other);
        return { problem: 'wrong_network', message: `address is for ${other}, not ${network}` };
      } catch {
        // not this one either
      }
    }
    return { problem: 'invalid', message: `invalid address: ${err.message}` };
  }
}

export type OutputView = { addresses: string[]; data?: Uint8Array };

const OP_RETURN = 0x6a;

/** Addresses of an output script, and its OP_RETURN payload when it is a data output. */
export function describeOutput(script: Uint8Array, network: NetworkName): OutputView {
  if (script.length > 0 && script[0] === OP_RETURN) return { addresses: [], data: nullData(script) ?? script.subarray(1) };
  return { addresses: outputAddresses(script, network) };
}
