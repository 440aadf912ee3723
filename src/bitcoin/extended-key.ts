/**
 * Extended public keys (BIP32) as wallets export them: `xpub`/`tpub` and the SLIP-132 variants
 * that also name an output type (`ypub`/`upub` P2SH-P2WPKH, `zpub`/`vpub` P2WPKH, `Ypub`/`Upub`
 * and `Zpub`/`Vpub` for multisig). Output descriptors only know `xpub`/`tpub` (Core's key_io
 * decodes nothing else), so every variant is re-encoded with the plain version of its network.
 * Private extended keys are refused: a watch-only wallet never needs one.
 * @module
 */
import { HDKey } from '@scure/bip32';
import { base58CheckDecode, base58CheckEncode } from './base58.js';
import { getNetwork, type Network, type NetworkName } from './network.js';

/** The output type a SLIP-132 prefix implies. */
export type ImpliedType = 'pkh' | 'sh-wpkh' | 'wpkh' | 'sh-wsh-multi' | 'wsh-multi';

type Version = { prefix: string; mainnet: boolean; type: ImpliedType };

const PUBLIC_VERSIONS = new Map<number, Version>([
  [0x0488b21e, { prefix: 'xpub', mainnet: true, type: 'pkh' }],
  [0x049d7cb2, { prefix: 'ypub', mainnet: true, type: 'sh-wpkh' }],
  [0x04b24746, { prefix: 'zpub', mainnet: true, type: 'wpkh' }],
  [0x0295b43f, { prefix: 'Ypub', mainnet: true, type: 'sh-wsh-multi' }],
  [0x02aa7ed3, { prefix: 'Zpub', mainnet: true, type: 'wsh-multi' }],
  [0x043587cf, { prefix: 'tpub', mainnet: false, type: 'pkh' }],
  [0x044a5262, { prefix: 'upub', mainnet: false, type: 'sh-wpkh' }],
  [0x045f1c56, { prefix: 'vpub', mainnet: false, type: 'wpkh' }],
  [0x024289ef, { prefix: 'Upub', mainnet: false, type: 'sh-wsh-multi' }],
  [0x02575483, { prefix: 'Vpub', mainnet: false, type: 'wsh-multi' }],
]);
const PRIVATE_VERSIONS = new Set([
  0x0488ade4, 0x049d7878, 0x04b2430c, 0x0295b005, 0x02aa7a99, 0x04358394, 0x044a4e28, 0x045f18bc, 0x024285b5, 0x02575048,
]);

const XPUB = 0x0488b21e;
const TPUB = 0x043587cf;

/** BIP32 versions of a network's plain keys (what @scure/bip32 checks). */
export function bip32Versions(network: NetworkName | Network): { public: number; private: number } {
  return getNetwork(network).name === 'main' ? { public: XPUB, private: 0x0488ade4 } : { public: TPUB, private: 0x04358394 };
}

/** A decoded extended public key. */
export interface ExtendedPublicKey {
  /** The key re-encoded as `xpub…` (main) or `tpub…` (other networks): what descriptors carry. */
  readonly xpub: string;
  /** The SLIP-132 prefix it came with (`xpub`, `zpub`, `vpub`…). */
  readonly prefix: string;
  /** The output type that prefix implies. */
  readonly implied: ImpliedType;
  readonly hd: HDKey;
}

/** A key that cannot be used, with a message fit for users. */
export class ExtendedKeyError extends TypeError {
  override name = 'ExtendedKeyError';
}

/**
 * Decodes an extended public key of any known prefix for `network`.
 * @throws ExtendedKeyError for a bad encoding, a private key, another network's key or an invalid point.
 */
export function decodeExtendedPublicKey(text: string, network: NetworkName | Network): ExtendedPublicKey {
  const payload = base58CheckDecode(text);
  if (typeof payload === 'string' || payload.length !== 78) throw new ExtendedKeyError(`key '${text}' is not valid`);
  const version = new DataView(payload.buffer, payload.byteOffset, 4).getUint32(0, false);
  if (PRIVATE_VERSIONS.has(version))
    throw new ExtendedKeyError('private extended keys are not accepted: give the extended public key (xpub/tpub)');
  const v = PUBLIC_VERSIONS.get(version);
  if (!v) throw new ExtendedKeyError(`key '${text}' is not valid`);
  const net = getNetwork(network);
  if (v.mainnet !== (net.name === 'main'))
    throw new ExtendedKeyError(
      `key '${text.slice(0, 12)}…' (${v.prefix}) is for ${v.mainnet ? 'mainnet' : 'a test network'}, not ${net.name}`,
    );
  const plain = new Uint8Array(payload);
  new DataView(plain.buffer).setUint32(0, v.mainnet ? XPUB : TPUB, false);
  const xpub = base58CheckEncode(plain);
  let hd: HDKey;
  try {
    hd = HDKey.fromExtendedKey(xpub, bip32Versions(net));
  } catch (err) {
    throw new ExtendedKeyError(`key '${text}' is not valid: ${(err as Error).message}`);
  }
  return { xpub, prefix: v.prefix, implied: v.type, hd };
}
