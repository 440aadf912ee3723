/**
 * The addresses of a wallet chain (one single-path descriptor), as stored in `wallet_addresses`:
 * index, address key (src/db/address-key.ts), address and derivation path. Pure CPU work — a
 * BIP32 child key per key of the descriptor and per address — run only inside the derivation
 * threads (src/db/wallet-derive-worker.ts), never on a thread that serves requests or blocks.
 * @module
 */
import { outputAddresses } from '../bitcoin/address.js';
import { parseDescriptor, ScriptDeriver } from '../bitcoin/descriptor.js';
import { getNetwork } from '../bitcoin/network.js';
import { addressKey } from './address-key.js';

/** One derived address, as stored. */
export type DerivedAddress = { idx: number; addrKey: string; address: string; path: string };

const derivers = new Map<string, ScriptDeriver>();

/** The deriver of a single-path descriptor on `network` (held: parsing derives the branch nodes). */
function chainDeriver(descriptor: string, network: string): ScriptDeriver {
  const k = `${network} ${descriptor}`;
  let d = derivers.get(k);
  if (!d) {
    if (derivers.size >= 1000) derivers.delete(derivers.keys().next().value!);
    d = new ScriptDeriver(parseDescriptor(descriptor, getNetwork(network)), 0);
    derivers.set(k, d);
  }
  return d;
}

/** Addresses `from` … `to - 1` of a chain. */
export function deriveAddresses(descriptor: string, network: string, from: number, to: number): DerivedAddress[] {
  const d = chainDeriver(descriptor, network);
  const out: DerivedAddress[] = [];
  for (let i = from; i < to; i++) {
    const { script } = d.derive(i);
    out.push({ idx: i, addrKey: addressKey(script), address: outputAddresses(script, network as never)[0]!, path: d.path(i) });
  }
  return out;
}

/**
 * The extended keys of a stored (normalized) descriptor: what one address of its chain costs,
 * in BIP32 child derivations. Stored descriptors carry `xpub`/`tpub` only (SLIP-132 prefixes are
 * re-encoded at creation).
 */
export function keysPerAddress(descriptor: string): number {
  return Math.max(1, descriptor.match(/[xt]pub[1-9A-HJ-NP-Za-km-z]{100,}/g)?.length ?? 1);
}
