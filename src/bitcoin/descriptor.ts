/**
 * Output descriptors of watch-only wallets (BIP380–386, BIP389 multipath), the subset a wallet
 * tracks: `pkh(K)`, `wpkh(K)`, `sh(wpkh(K))`, `tr(K)` (key path only), `wsh(M)`, `sh(wsh(M))`
 * and `sh(M)` with `M` = `multi(k,K,…)` or `sortedmulti(k,K,…)`; each `K` an extended public
 * key (`xpub`/`tpub`, or a SLIP-132 `ypub`/`zpub`/… re-encoded as `xpub`/`tpub`) with an optional
 * origin `[fingerprint/path]`, unhardened steps, and a final `/*`; one step may be a multipath
 * `<a;b>` (receive and change in one descriptor). Parsing normalizes the text as Bitcoin Core's
 * `getdescriptorinfo` prints it (hardened steps with the marker the key expression used last,
 * lower-case fingerprint) and checks or adds the checksum exactly as Core computes it
 * (descriptor.cpp `DescriptorChecksum`). Pure.
 * @module
 */
import type { HDKey } from '@scure/bip32';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { p2tr } from '@scure/btc-signer';
import { hash160, sha256 } from './hash.js';
import { decodeExtendedPublicKey, ExtendedKeyError, type ExtendedPublicKey } from './extended-key.js';
import type { Network, NetworkName } from './network.js';
import { multisigScript, p2pkhScript, p2shScript, witnessScript } from './script.js';

// ---------------------------------------------------------------- checksum (Core's polymod)

const INPUT_CHARSET = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(c: bigint, value: number): bigint {
  const top = c >> 35n;
  c = ((c & 0x7ffffffffn) << 5n) ^ BigInt(value);
  for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) c ^= GENERATOR[i]!;
  return c;
}

/** The 8-character checksum of a descriptor (BIP380), or null when it has a character outside Core's set. */
export function descriptorChecksum(desc: string): string | null {
  let c = 1n;
  let cls = 0;
  let clsCount = 0;
  for (const ch of desc) {
    const pos = INPUT_CHARSET.indexOf(ch);
    if (pos < 0) return null;
    c = polymod(c, pos & 31);
    cls = cls * 3 + (pos >> 5);
    if (++clsCount === 3) {
      c = polymod(c, cls);
      cls = 0;
      clsCount = 0;
    }
  }
  if (clsCount > 0) c = polymod(c, cls);
  for (let j = 0; j < 8; j++) c = polymod(c, 0);
  c ^= 1n;
  let out = '';
  for (let j = 0; j < 8; j++) out += CHECKSUM_CHARSET[Number((c >> BigInt(5 * (7 - j))) & 31n)];
  return out;
}

/** `desc#checksum`. @throws DescriptorError for a character outside the descriptor character set. */
export function withChecksum(desc: string): string {
  const sum = descriptorChecksum(desc);
  if (sum === null) throw new DescriptorError('Invalid characters in payload');
  return `${desc}#${sum}`;
}

// ---------------------------------------------------------------- the parsed form

/** A descriptor the wallet cannot track, with a message fit for users (Core's wording where Core has one). */
export class DescriptorError extends TypeError {
  override name = 'DescriptorError';
}

export type DescriptorKind = 'pkh' | 'wpkh' | 'sh-wpkh' | 'tr' | 'wsh-multi' | 'sh-wsh-multi' | 'sh-multi';

/** One key expression: `[origin]xpub/steps/*`. */
export interface KeyExpression {
  /** Key origin: 8 lower-case hex digits and the path from the master key (hardened as 0x80000000 + i). */
  readonly origin: { readonly fingerprint: string; readonly path: readonly number[] } | null;
  readonly key: ExtendedPublicKey;
  /** Unhardened steps between the key and the final `*`; the multipath step holds -1. */
  readonly steps: readonly number[];
  /** The values of the multipath step (`<0;1>` → [0, 1]) and its position in `steps`, or null. */
  readonly multipath: { readonly at: number; readonly values: readonly number[] } | null;
  /** Whether hardened steps print as `'` (else `h`): the marker the expression used last. */
  readonly apostrophe: boolean;
}

/** A parsed descriptor (possibly multipath). */
export interface Descriptor {
  readonly kind: DescriptorKind;
  readonly keys: readonly KeyExpression[];
  /** multi / sortedmulti: signatures required. */
  readonly threshold: number | null;
  /** sortedmulti: keys sorted in the script. */
  readonly sorted: boolean;
  /** Number of multipath branches (1 when none). */
  readonly branches: number;
}

const HARDENED = 0x80000000;

// ---------------------------------------------------------------- parsing

/** Splits `text` at commas that are not inside (), [], {} or <>. */
function splitTop(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[' || c === '{' || c === '<') depth++;
    else if (c === ')' || c === ']' || c === '}' || c === '>') depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** `name(inner)` → {name, inner}, or null when the text is not one call with balanced parentheses. */
function call(text: string): { name: string; inner: string } | null {
  const m = /^([a-z]+)\((.*)\)$/s.exec(text);
  if (!m) return null;
  let depth = 0;
  for (const c of m[2]!) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return null;
  }
  return depth === 0 ? { name: m[1]!, inner: m[2]! } : null;
}

function parseStep(elem: string, state: { apostrophe: boolean }, hardenedAllowed: boolean): number {
  let hardened = false;
  let body = elem;
  const last = elem[elem.length - 1];
  if (last === "'" || last === 'h') {
    body = elem.slice(0, -1);
    hardened = true;
    state.apostrophe = last === "'";
  }
  if (!/^\d{1,10}$/.test(body) || Number(body) >= HARDENED) throw new DescriptorError(`Key path value '${elem}' is not a valid uint32`);
  if (hardened && !hardenedAllowed)
    throw new DescriptorError(`Key path value '${elem}' is hardened: an extended public key cannot derive hardened children`);
  return hardened ? Number(body) + HARDENED : Number(body);
}

function parseKey(text: string, network: NetworkName | Network): KeyExpression {
  const state = { apostrophe: false };
  let origin: KeyExpression['origin'] = null;
  let rest = text;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) throw new DescriptorError(`Key origin start '[ character expected but not found, got '${rest[0]}' instead`);
    const parts = rest.slice(1, close).split('/');
    const fp = parts[0]!;
    if (fp.length !== 8) throw new DescriptorError(`Fingerprint is not 4 bytes (${fp.length} characters instead of 8 characters)`);
    if (!/^[0-9a-fA-F]{8}$/.test(fp)) throw new DescriptorError(`Fingerprint '${fp}' is not hex`);
    origin = { fingerprint: fp.toLowerCase(), path: parts.slice(1).map((p) => parseStep(p, state, true)) };
    rest = rest.slice(close + 1);
    if (rest.includes(']')) throw new DescriptorError("Multiple ']' characters found for a single pubkey");
  }
  const split = rest.split('/');
  const keyText = split[0]!;
  if (/^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128}|[0-9a-fA-F]{64})$/.test(keyText)) {
    throw new DescriptorError(
      `key '${keyText.slice(0, 16)}…' is a single public key: a wallet descriptor needs extended public keys (xpub/tpub…) with a '/*' range`,
    );
  }
  let key: ExtendedPublicKey;
  try {
    key = decodeExtendedPublicKey(keyText, network);
  } catch (err) {
    if (err instanceof ExtendedKeyError) throw new DescriptorError(err.message);
    throw err;
  }
  const elems = split.slice(1);
  if (elems[elems.length - 1] !== '*') {
    if (elems[elems.length - 1] === "*'" || elems[elems.length - 1] === '*h')
      throw new DescriptorError("hardened ranges (*' or *h) need the private key: a watch-only wallet cannot derive them");
    throw new DescriptorError(`key '${keyText.slice(0, 12)}…' is not ranged: a wallet descriptor ends each key with '/*'`);
  }
  const steps: number[] = [];
  let multipath: KeyExpression['multipath'] = null;
  elems.slice(0, -1).forEach((elem, i) => {
    if (elem === '*') throw new DescriptorError("'*' may only appear as last element in a derivation path");
    if (elem.startsWith('<') && elem.endsWith('>')) {
      if (multipath) throw new DescriptorError('Multiple multipath key path specifiers found');
      const values = elem
        .slice(1, -1)
        .split(';')
        .map((v) => parseStep(v, state, false));
      if (values.length < 2) throw new DescriptorError(`Multipath key path specifiers must have at least two items`);
      if (new Set(values).size !== values.length)
        throw new DescriptorError(`Duplicated key path value ${values.find((v, j) => values.indexOf(v) !== j)} in multipath specifier`);
      multipath = { at: i, values };
      steps.push(-1);
    } else steps.push(parseStep(elem, state, false));
  });
  return { origin, key, steps, multipath, apostrophe: state.apostrophe };
}

function parseMulti(
  text: string,
  network: NetworkName | Network,
  maxKeys: number,
  where: string,
): Pick<Descriptor, 'keys' | 'threshold' | 'sorted'> {
  const c = call(text);
  if (!c || (c.name !== 'multi' && c.name !== 'sortedmulti'))
    throw new DescriptorError(`${where} takes multi(…) or sortedmulti(…) here, got '${text.slice(0, 30)}'`);
  const args = splitTop(c.inner);
  const k = args[0]!;
  if (!/^\d{1,3}$/.test(k)) throw new DescriptorError(`Multi threshold '${k}' is not valid`);
  const threshold = Number(k);
  const keyTexts = args.slice(1);
  if (keyTexts.length === 0) throw new DescriptorError('Multisig descriptor has no keys');
  if (keyTexts.length > maxKeys)
    throw new DescriptorError(`Cannot have ${keyTexts.length} keys in multisig; must have between 1 and ${maxKeys} keys, inclusive`);
  if (threshold < 1) throw new DescriptorError(`Multisig threshold cannot be ${threshold}, must be at least 1`);
  if (threshold > keyTexts.length)
    throw new DescriptorError(
      `Multisig threshold cannot be larger than the number of keys; threshold is ${threshold} but only ${keyTexts.length} keys specified`,
    );
  return { keys: keyTexts.map((t) => parseKey(t, network)), threshold, sorted: c.name === 'sortedmulti' };
}

/**
 * Parses a descriptor (with or without `#checksum`) for `network`.
 * @throws DescriptorError with Core's message for a wrong checksum, and a clear one for anything unsupported.
 */
export function parseDescriptor(input: string, network: NetworkName | Network): Descriptor {
  if (typeof input !== 'string' || input.length === 0) throw new DescriptorError('descriptor is empty');
  const hashes = input.split('#');
  if (hashes.length > 2) throw new DescriptorError("Multiple '#' symbols");
  const body = hashes[0]!;
  const computed = descriptorChecksum(body);
  if (computed === null) throw new DescriptorError('Invalid characters in payload');
  if (hashes.length === 2) {
    const given = hashes[1]!;
    if (given.length !== 8) throw new DescriptorError(`Expected 8 character checksum, not ${given.length} characters`);
    if (given !== computed) throw new DescriptorError(`Provided checksum '${given}' does not match computed checksum '${computed}'`);
  }
  const top = call(body);
  if (!top) throw new DescriptorError(`'${body.slice(0, 40)}' is not a descriptor`);
  let d: Omit<Descriptor, 'branches'>;
  const single = (kind: DescriptorKind, inner: string): Omit<Descriptor, 'branches'> => {
    if (splitTop(inner).length !== 1)
      throw new DescriptorError(
        kind === 'tr' ? 'tr() with a script tree is not supported: only the key path (tr(KEY))' : `${kind}() takes one key`,
      );
    return { kind, keys: [parseKey(inner, network)], threshold: null, sorted: false };
  };
  switch (top.name) {
    case 'pkh':
    case 'wpkh':
    case 'tr':
      d = single(top.name, top.inner);
      break;
    case 'wsh':
      d = { kind: 'wsh-multi', ...parseMulti(top.inner, network, 16, 'wsh()') };
      break;
    case 'sh': {
      const inner = call(top.inner);
      if (inner?.name === 'wpkh') d = { ...single('wpkh', inner.inner), kind: 'sh-wpkh' };
      else if (inner?.name === 'wsh') d = { kind: 'sh-wsh-multi', ...parseMulti(inner.inner, network, 16, 'wsh()') };
      else d = { kind: 'sh-multi', ...parseMulti(top.inner, network, 15, 'sh()') };
      break;
    }
    default:
      throw new DescriptorError(
        `'${top.name}()' descriptors are not supported: use pkh, wpkh, sh(wpkh), tr, wsh(multi|sortedmulti), sh(wsh(…)) or sh(multi|sortedmulti)`,
      );
  }
  const counts = new Set(d.keys.map((k) => k.multipath?.values.length ?? 1));
  const multi = [...counts].filter((n) => n > 1);
  if (multi.length > 1 || (multi.length === 1 && counts.has(1) && d.keys.length > 1))
    throw new DescriptorError('Multipath subscripts have mismatched lengths');
  return { ...d, branches: multi[0] ?? 1 };
}

// ---------------------------------------------------------------- printing

function formatPath(path: readonly number[], apostrophe: boolean): string {
  return path.map((s) => (s >= HARDENED ? `/${s - HARDENED}${apostrophe ? "'" : 'h'}` : `/${s}`)).join('');
}

function formatKey(k: KeyExpression, branch: number | null): string {
  const origin = k.origin ? `[${k.origin.fingerprint}${formatPath(k.origin.path, k.apostrophe)}]` : '';
  const steps = k.steps
    .map((s, i) =>
      i === k.multipath?.at ? (branch === null ? `/<${k.multipath.values.join(';')}>` : `/${k.multipath.values[branch]}`) : `/${s}`,
    )
    .join('');
  return `${origin}${k.key.xpub}${steps}/*`;
}

/**
 * The descriptor as Core prints it, without checksum; `branch` picks one path of a multipath
 * descriptor (null keeps `<a;b>`).
 */
export function formatDescriptor(d: Descriptor, branch: number | null = null): string {
  const keys = d.keys.map((k) => formatKey(k, branch));
  const multi = () => `${d.sorted ? 'sortedmulti' : 'multi'}(${d.threshold},${keys.join(',')})`;
  switch (d.kind) {
    case 'pkh':
      return `pkh(${keys[0]})`;
    case 'wpkh':
      return `wpkh(${keys[0]})`;
    case 'sh-wpkh':
      return `sh(wpkh(${keys[0]}))`;
    case 'tr':
      return `tr(${keys[0]})`;
    case 'wsh-multi':
      return `wsh(${multi()})`;
    case 'sh-wsh-multi':
      return `sh(wsh(${multi()}))`;
    case 'sh-multi':
      return `sh(${multi()})`;
  }
}

/** The single-path descriptors a (multipath) descriptor stands for, in branch order, checksummed. */
export function expandDescriptor(d: Descriptor): string[] {
  if (d.branches === 1) return [withChecksum(formatDescriptor(d))];
  return Array.from({ length: d.branches }, (_, b) => withChecksum(formatDescriptor(d, b)));
}

/**
 * The descriptor a bare extended public key implies by its prefix: `xpub`/`tpub` → `pkh`,
 * `ypub`/`upub` → `sh(wpkh)`, `zpub`/`vpub` → `wpkh`, each as `KEY/<0;1>/*` (receive and
 * change). Multisig prefixes (`Ypub`, `Zpub`…) need the co-signers' keys: refused.
 */
export function descriptorForExtendedKey(text: string, network: NetworkName | Network): Descriptor {
  let key: ExtendedPublicKey;
  try {
    key = decodeExtendedPublicKey(text, network);
  } catch (err) {
    if (err instanceof ExtendedKeyError) throw new DescriptorError(err.message);
    throw err;
  }
  const kind = key.implied;
  if (kind === 'wsh-multi' || kind === 'sh-wsh-multi')
    throw new DescriptorError(
      `a ${key.prefix} key is one co-signer of a multisig wallet: give the descriptor with every key (wsh(sortedmulti(…)))`,
    );
  return {
    kind,
    keys: [{ origin: null, key, steps: [-1], multipath: { at: 0, values: [0, 1] }, apostrophe: false }],
    threshold: null,
    sorted: false,
    branches: 2,
  };
}

// ---------------------------------------------------------------- derivation

const Point = secp256k1.Point;

/**
 * The public children of one BIP32 node (CKDpub): I = HMAC-SHA512(chain code, key ‖ index),
 * child = key + I_L·G. As @scure/bip32's `deriveChild`, minus what a wallet of thousands of
 * addresses pays for per child there: the parent point decoded each time (a square root), an
 * HDKey built and its key decoded again, and a constant-time multiplication — the tweak comes
 * from public data (whoever holds the extended public key computes it), so the faster
 * variable-time one leaks nothing. The cases BIP32 handles apart (I_L of 0 or not below the
 * group order, a child at infinity; odds about 2⁻¹²⁷) go to `deriveChild` itself.
 */
class PublicChildren {
  private readonly point: ReturnType<typeof Point.fromBytes>;
  private readonly data = new Uint8Array(37);
  private readonly view = new DataView(this.data.buffer);

  constructor(private readonly node: HDKey) {
    this.point = Point.fromBytes(node.publicKey!);
    this.data.set(node.publicKey!);
  }

  /** The compressed public key of child `index` (unhardened). */
  at(index: number): Uint8Array {
    this.view.setUint32(33, index);
    const tweak = Point.Fn.fromBytes(hmac(sha512, this.node.chainCode!, this.data).subarray(0, 32), true);
    if (tweak === 0n || !Point.Fn.isValid(tweak)) return this.node.deriveChild(index).publicKey!;
    const child = this.point.add(Point.BASE.multiplyUnsafe(tweak));
    return child.equals(Point.ZERO) ? this.node.deriveChild(index).publicKey! : child.toBytes(true);
  }
}

/** Derives the output scripts of one branch of a descriptor; holds each key's branch node. */
export class ScriptDeriver {
  private readonly nodes: PublicChildren[];

  constructor(
    readonly descriptor: Descriptor,
    readonly branch: number,
  ) {
    if (branch < 0 || branch >= descriptor.branches) throw new RangeError(`branch ${branch} outside 0..${descriptor.branches - 1}`);
    this.nodes = descriptor.keys.map((k) => {
      let node = k.key.hd;
      k.steps.forEach((s, i) => {
        node = node.deriveChild(i === k.multipath?.at ? k.multipath.values[branch]! : s);
      });
      return new PublicChildren(node);
    });
  }

  /** The compressed public keys at `index`, in descriptor order. */
  publicKeys(index: number): Uint8Array[] {
    if (!Number.isInteger(index) || index < 0 || index >= HARDENED) throw new RangeError(`index ${index} is not an unhardened child index`);
    return this.nodes.map((n) => n.at(index));
  }

  /** The output script at `index`, and the redeem or witness script it commits to (if any). */
  derive(index: number): { script: Uint8Array; redeemScript?: Uint8Array; witnessScript?: Uint8Array } {
    const keys = this.publicKeys(index);
    const d = this.descriptor;
    switch (d.kind) {
      case 'pkh':
        return { script: p2pkhScript(hash160(keys[0]!)) };
      case 'wpkh':
        return { script: witnessScript(0, hash160(keys[0]!)) };
      case 'sh-wpkh': {
        const redeem = witnessScript(0, hash160(keys[0]!));
        return { script: p2shScript(hash160(redeem)), redeemScript: redeem };
      }
      case 'tr':
        return { script: witnessScript(1, p2tr(keys[0]!.subarray(1)).tweakedPubkey) };
      default: {
        const ordered = d.sorted ? [...keys].sort(compareBytes) : keys;
        const ms = multisigScript(d.threshold!, ordered);
        if (d.kind === 'sh-multi') {
          if (ms.length > 520) throw new DescriptorError(`P2SH script is too large, ${ms.length} bytes is larger than 520 bytes`);
          return { script: p2shScript(hash160(ms)), redeemScript: ms };
        }
        const wsh = witnessScript(0, sha256(ms));
        if (d.kind === 'wsh-multi') return { script: wsh, witnessScript: ms };
        return { script: p2shScript(hash160(wsh)), redeemScript: wsh, witnessScript: ms };
      }
    }
  }

  /**
   * The derivation path of `index` as wallets show it: from the master key when the first key
   * has an origin (`m/84h/1h/0h/0/5`), else relative to the extended key (`0/5`).
   */
  path(index: number): string {
    const k = this.descriptor.keys[0]!;
    const steps = k.steps.map((s, i) => (i === k.multipath?.at ? k.multipath.values[this.branch]! : s));
    const tail = [...steps, index].join('/');
    return k.origin ? `m${formatPath(k.origin.path, k.apostrophe)}/${tail}` : tail;
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
