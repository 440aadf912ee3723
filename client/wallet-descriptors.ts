/**
 * The multisig descriptors of a wallet, read on the client so that `wallets.pay` can spend their
 * outputs: `wsh(multi|sortedmulti(k, K…))`, `sh(wsh(…))` and `sh(multi|sortedmulti(…))` as the
 * server prints a wallet's chains (single-path, normalized, checksummed), each key `K` an
 * extended public key with an optional origin `[fingerprint/path]`, unhardened steps and `/*`.
 * From one, an address index gives the output script (to find the chain of an output) and the
 * cosigners' keys, and a set of extended keys held here gives the private keys that sign.
 * @module
 */
import { HDKey } from '@scure/bip32';
import { hex } from '@scure/base';
import { createMultisig, type MultisigAccount, type MultisigType } from './multisig.js';
import type { Network } from './network.js';

/** One key expression of a descriptor. */
type DescriptorKey = { fingerprint: number | null; origin: number[]; xpub: HDKey; steps: number[] };

/** A parsed multisig chain descriptor. */
export type MultisigChain = { type: MultisigType; m: number; sorted: boolean; keys: DescriptorKey[]; network: Network };

const HARDENED = 0x80000000;

/** BIP32 version bytes of extended keys on `network` (xpub/xprv on mainnet, tpub/tprv elsewhere). */
export function bip32VersionsOf(network: Network): { public: number; private: number } {
  return network.name === 'main' ? { public: 0x0488b21e, private: 0x0488ade4 } : { public: 0x043587cf, private: 0x04358394 };
}

function parseKey(text: string, network: Network): DescriptorKey {
  const m = /^(?:\[([0-9a-f]{8})((?:\/\d+[h']?)*)\])?([1-9A-HJ-NP-Za-km-z]+)((?:\/\d+)*)\/\*$/.exec(text);
  if (!m) throw new TypeError(`Unsupported key expression in a wallet descriptor: ${text}`);
  const steps = (s: string) =>
    s
      ? s
          .slice(1)
          .split('/')
          .map((p) => (/[h']$/.test(p) ? Number(p.slice(0, -1)) + HARDENED : Number(p)))
      : [];
  return {
    fingerprint: m[1] ? Number.parseInt(m[1], 16) : null,
    origin: steps(m[2] ?? ''),
    xpub: HDKey.fromExtendedKey(m[3]!, bip32VersionsOf(network)),
    steps: steps(m[4] ?? ''),
  };
}

/** The multisig descriptor `descriptor` (checksum optional), or null for any other kind. */
export function parseMultisigChain(descriptor: string, network: Network): MultisigChain | null {
  const body = descriptor.replace(/#[0-9a-z]{8}$/, '');
  let type: MultisigType;
  let inner: string;
  if (body.startsWith('sh(wsh(') && body.endsWith('))')) [type, inner] = ['p2sh-p2wsh', body.slice(7, -2)];
  else if (body.startsWith('wsh(') && body.endsWith(')')) [type, inner] = ['p2wsh', body.slice(4, -1)];
  else if (body.startsWith('sh(') && body.endsWith(')')) [type, inner] = ['p2sh', body.slice(3, -1)];
  else return null;
  const m = /^(multi|sortedmulti)\((\d+),(.+)\)$/.exec(inner);
  if (!m) return null;
  return { type, m: Number(m[2]), sorted: m[1] === 'sortedmulti', keys: m[3]!.split(',').map((k) => parseKey(k, network)), network };
}

const derivePath = (k: HDKey, path: readonly number[]) => path.reduce((x, s) => x.deriveChild(s), k);

/** The multisig account (scripts, keys in script order) at address `index` of the chain. */
export function multisigAt(chain: MultisigChain, index: number): MultisigAccount {
  const publicKeys = chain.keys.map((k) => derivePath(k.xpub, [...k.steps, index]).publicKey!);
  return createMultisig({ m: chain.m, publicKeys, type: chain.type, network: chain.network, sortKeys: chain.sorted });
}

/**
 * The private keys among `roots` for the cosigners of address `index`: a root signs for a key
 * when it is that extended key itself (the account key) or the master key its origin names.
 */
export function cosignerKeys(chain: MultisigChain, index: number, roots: readonly HDKey[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const k of chain.keys) {
    const want = hex.encode(derivePath(k.xpub, [...k.steps, index]).publicKey!);
    for (const root of roots) {
      if (!root.privateKey) continue;
      let path: number[] | null = null;
      if (root.publicExtendedKey === k.xpub.publicExtendedKey) path = [...k.steps, index];
      else if (root.depth === 0 && k.fingerprint !== null && root.fingerprint === k.fingerprint) path = [...k.origin, ...k.steps, index];
      if (!path) continue;
      const child = derivePath(root, path);
      if (hex.encode(child.publicKey!) === want) {
        out.push(child.privateKey!);
        break;
      }
    }
  }
  return out;
}
