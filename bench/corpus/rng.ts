/**
 * A seeded, fast pseudo-random stream for the corpus generator: the AES-128-CTR keystream of a
 * key derived from the seed (node:crypto runs it at GB/s), consumed as bytes and 32-bit words.
 * The same seed and the same sequence of calls give the same values on every machine.
 * @module
 */
import { createCipheriv, createHash, type Cipher } from 'node:crypto';

const CHUNK = 1 << 20;

export class Rng {
  private readonly cipher: Cipher;
  private readonly zeros = Buffer.alloc(CHUNK);
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;

  constructor(seed: string | number) {
    const k = createHash('sha256').update(`blockwire-corpus:${seed}`).digest();
    this.cipher = createCipheriv('aes-128-ctr', k.subarray(0, 16), k.subarray(16, 32));
  }

  private refill(): void {
    this.buf = this.cipher.update(this.zeros);
    this.pos = 0;
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    if (this.pos + 4 > this.buf.length) this.refill();
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** Fills `out[off, off + n)` with random bytes. */
  fill(out: Uint8Array, off: number, n: number): void {
    while (n > 0) {
      if (this.pos >= this.buf.length) this.refill();
      const k = Math.min(n, this.buf.length - this.pos);
      this.buf.copy(out, off, this.pos, this.pos + k);
      this.pos += k;
      off += k;
      n -= k;
    }
  }
}
