/**
 * The stamping wallet: one compressed private key (STAMP_WALLET_WIF or STAMP_WALLET_DESCRIPTOR)
 * whose coins at its P2WPKH and P2PKH addresses pay for stamps. The
 * wallet knows its output scripts, their address keys in Blockwire's index (src/db/address-key.ts)
 * and signs nothing itself (stamp/build.ts signs). The key never reaches a log line.
 * @module
 */
import { pubkeyToP2pkhAddress, pubkeyToP2wpkhAddress } from '../src/bitcoin/address.js';
import { hash160 } from '../src/bitcoin/hash.js';
import type { NetworkName } from '../src/bitcoin/network.js';
import { p2pkhScript, witnessScript } from '../src/bitcoin/script.js';
import { decodeWif, publicKeyOf } from '../src/bitcoin/wif.js';
import { addressKey } from '../src/db/address-key.js';
import { AppError } from '../src/errors.js';
import { parseWalletDescriptor } from './descriptor.js';

export type WalletScriptType = 'p2wpkh' | 'p2pkh';

/** One output script the wallet spends. */
export type WalletScript = { type: WalletScriptType; script: Buffer; address: string; addrKey: string };

export type StampWallet = {
  network: NetworkName;
  /** Spendable scripts, the change script first. */
  scripts: readonly WalletScript[];
  /** Where change goes (P2WPKH unless the descriptor says pkh). */
  change: WalletScript;
  /** Address keys of every script (the index's `addr_key`). */
  addrKeys: readonly string[];
  publicKey: Uint8Array;
  /** For the signer only. */
  readonly privateKey: Uint8Array;
  /** The script type of a wallet script, or undefined for a foreign one. */
  typeOf(script: Uint8Array): WalletScriptType | undefined;
};

/** Where the key comes from (exactly one of the two). */
export type WalletSource = { wif?: string | undefined; descriptor?: string | undefined };

/**
 * Builds the wallet for `network`.
 * @throws AppError `ERR_STAMP_WALLET_CONFIG` with a message that names the problem, never the key.
 */
export function loadStampWallet(source: WalletSource, network: NetworkName): StampWallet {
  if (source.wif && source.descriptor)
    throw new AppError('ERR_STAMP_WALLET_CONFIG', 'set STAMP_WALLET_WIF or STAMP_WALLET_DESCRIPTOR, not both');
  let privateKey: Uint8Array;
  let compressed: boolean;
  let changeType: WalletScriptType;
  try {
    if (source.wif) {
      const k = decodeWif(source.wif.trim(), network);
      privateKey = k.privateKey;
      compressed = k.compressed;
      changeType = 'p2wpkh';
    } else if (source.descriptor) {
      const k = parseWalletDescriptor(source.descriptor, network);
      privateKey = k.privateKey;
      compressed = k.compressed;
      changeType = k.changeType;
    } else {
      throw new TypeError('no key: set STAMP_WALLET_WIF or STAMP_WALLET_DESCRIPTOR');
    }
  } catch (err) {
    const what = source.wif ? 'STAMP_WALLET_WIF' : 'STAMP_WALLET_DESCRIPTOR';
    throw new AppError('ERR_STAMP_WALLET_CONFIG', `${what} is not usable on ${network}: ${(err as Error).message}`);
  }
  if (!compressed) {
    // Every wallet since 2012 uses compressed keys; the signer (@scure/btc-signer) signs only those.
    throw new AppError(
      'ERR_STAMP_WALLET_CONFIG',
      `${source.wif ? 'STAMP_WALLET_WIF' : 'STAMP_WALLET_DESCRIPTOR'} holds an uncompressed key: use a compressed-key WIF`,
    );
  }
  const publicKey = publicKeyOf(privateKey, compressed);
  const keyHash = hash160(publicKey);
  const scripts: WalletScript[] = [];
  const p2pkh = Buffer.from(p2pkhScript(keyHash));
  const legacy: WalletScript = {
    type: 'p2pkh',
    script: p2pkh,
    address: pubkeyToP2pkhAddress(publicKey, network),
    addrKey: addressKey(p2pkh),
  };
  const p2wpkh = Buffer.from(witnessScript(0, keyHash));
  const segwit: WalletScript = {
    type: 'p2wpkh',
    script: p2wpkh,
    address: pubkeyToP2wpkhAddress(publicKey, network),
    addrKey: addressKey(p2wpkh),
  };
  scripts.push(...(changeType === 'p2wpkh' ? [segwit, legacy] : [legacy, segwit]));
  const byHex = new Map(scripts.map((s) => [s.script.toString('hex'), s.type]));
  return {
    network,
    scripts,
    change: scripts[0]!,
    addrKeys: scripts.map((s) => s.addrKey),
    publicKey,
    privateKey,
    typeOf: (script) => byHex.get(Buffer.from(script).toString('hex')),
  };
}
