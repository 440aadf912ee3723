/**
 * Maps keyed by a transaction's txid, or by an outpoint (txid, vout), on the per-block writer's
 * hot path: a block's ~4,000 transactions and ~8,000 inputs are looked up by txid several times
 * each. A string key (the txid's 32 bytes as latin1, with `:vout` appended for an outpoint) costs
 * a new string per lookup, hashed by the Map. These key a Map by a small integer read from the
 * txid's bytes (a txid is a hash: its first 4 bytes are uniform), chaining the entries whose
 * integers collide; an entry matches on the whole txid (and vout). No string is made.
 * @module
 */

/** A Map key from the txid's first 4 bytes, within V8's small-integer range (no heap number). */
function txidWord(txid: Uint8Array): number {
  return (txid[0]! | (txid[1]! << 8) | (txid[2]! << 16) | (txid[3]! << 24)) & 0x3fffffff;
}

function sameTxid(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface Entry<V> {
  readonly txid: Uint8Array;
  readonly vout: number;
  value: V;
  next: Entry<V> | undefined;
}

/** A map from an outpoint (txid, vout) to `V`. */
export class OutpointMap<V> {
  private readonly map = new Map<number, Entry<V>>();
  private count = 0;

  private static key(txid: Uint8Array, vout: number): number {
    return (txidWord(txid) ^ Math.imul(vout, 0x9e3779b1)) & 0x3fffffff;
  }

  get size(): number {
    return this.count;
  }

  get(txid: Uint8Array, vout: number): V | undefined {
    for (let e = this.map.get(OutpointMap.key(txid, vout)); e !== undefined; e = e.next)
      if (e.vout === vout && sameTxid(e.txid, txid)) return e.value;
    return undefined;
  }

  has(txid: Uint8Array, vout: number): boolean {
    for (let e = this.map.get(OutpointMap.key(txid, vout)); e !== undefined; e = e.next)
      if (e.vout === vout && sameTxid(e.txid, txid)) return true;
    return false;
  }

  /** Sets the outpoint's value (`txid` is kept, not copied: it must not change). */
  set(txid: Uint8Array, vout: number, value: V): this {
    const k = OutpointMap.key(txid, vout);
    const first = this.map.get(k);
    for (let e = first; e !== undefined; e = e.next)
      if (e.vout === vout && sameTxid(e.txid, txid)) {
        e.value = value;
        return this;
      }
    this.map.set(k, { txid, vout, value, next: first });
    this.count++;
    return this;
  }

  /** Every entry of `other` set here. */
  setAll(other: OutpointMap<V>): this {
    other.forEach((txid, vout, value) => this.set(txid, vout, value));
    return this;
  }

  forEach(f: (txid: Uint8Array, vout: number, value: V) => void): void {
    for (const first of this.map.values())
      for (let e: Entry<V> | undefined = first; e !== undefined; e = e.next) f(e.txid, e.vout, e.value);
  }
}

/** A map from a txid to `V`. */
export class TxidMap<V> {
  private readonly map = new Map<number, Entry<V>>();

  get(txid: Uint8Array): V | undefined {
    for (let e = this.map.get(txidWord(txid)); e !== undefined; e = e.next) if (sameTxid(e.txid, txid)) return e.value;
    return undefined;
  }

  /** Sets the txid's value (`txid` is kept, not copied: it must not change). */
  set(txid: Uint8Array, value: V): this {
    const k = txidWord(txid);
    const first = this.map.get(k);
    for (let e = first; e !== undefined; e = e.next)
      if (sameTxid(e.txid, txid)) {
        e.value = value;
        return this;
      }
    this.map.set(k, { txid, vout: 0, value, next: first });
    return this;
  }
}
