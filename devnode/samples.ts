/**
 * Sample traffic for the quick start: before each background block, the built-in wallet pays
 * small amounts to its own destinations of every type, sometimes with an OP_RETURN payload, so
 * a fresh Blockwire index has every address kind to show.
 * @module
 */
import type { Logger } from '../src/log.js';
import { ADDRESS_TYPES, InsufficientFunds, type Wallet } from './wallet.js';

/** Makes one round of sample payments; returns the txids broadcast. */
export function samplePayments(wallet: Wallet, round: number, log: Logger): string[] {
  const txids: string[] = [];
  const types = [...ADDRESS_TYPES];
  for (let i = 0; i < 3; i++) {
    const type = types[(round * 3 + i) % types.length]!;
    const dest = wallet.newDestination(type);
    const sats = BigInt(10_000 + ((round * 7919 + i * 104_729) % 990_000));
    try {
      const data = (round + i) % 4 === 0 ? [Buffer.from(`blockwire devnode sample ${round}`).toString('hex')] : undefined;
      txids.push(wallet.send({ script: dest.script }, sats, { ...(data ? { data } : {}) }));
    } catch (err) {
      if (err instanceof InsufficientFunds) return txids;
      log.warn({ err, type }, 'devnode: sample payment failed');
    }
  }
  return txids;
}
