/**
 * The status hash and history order of the protocol's own example (electrum-protocol docs,
 * protocol-basics "Status Example": regtest address bcrt1qn7d2x7272lznt5hhk9s07q3cqnrqljnwladrd3).
 */
import { describe, expect, it } from 'vitest';
import { historyItems, statusHash } from '../../../electrum/status.js';
import { hexToHash } from '../../../src/bitcoin/hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { createHash } from 'node:crypto';

const txid = (hex: string) => Buffer.from(hexToHash(hex));

describe('status', () => {
  it('orders the mempool by (-height, txid) and hashes tx_hash:height: as the protocol example does', () => {
    const items = historyItems({
      kind: 'ok',
      confirmed: [
        { txid: txid('a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347'), height: 2472 },
        { txid: txid('9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c'), height: 2473 },
        { txid: txid('770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30'), height: 2473 },
      ],
      // given in another order than the answer's: the server orders them
      mempool: [
        { txid: txid('bb4c8ab438c13b89ca80d1d5bee25b0b6b7f55673f4d801998ba97db161d9e85'), height: -1, fee: 200n },
        { txid: txid('e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f'), height: 0, fee: 300n },
        { txid: txid('80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311'), height: 0, fee: 200n },
      ],
    });
    expect(items).toEqual([
      { tx_hash: 'a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347', height: 2472 },
      { tx_hash: '9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c', height: 2473 },
      { tx_hash: '770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30', height: 2473 },
      { tx_hash: '80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311', height: 0, fee: 200 },
      { tx_hash: 'e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f', height: 0, fee: 300 },
      { tx_hash: 'bb4c8ab438c13b89ca80d1d5bee25b0b6b7f55673f4d801998ba97db161d9e85', height: -1, fee: 200 },
    ]);
    expect(statusHash(items)).toBe('78e96c6562cafa71c115503b9411fdfdc595a45031e2ab76ff75162fe1b0590d');
  });

  it('is null without transactions', () => {
    expect(statusHash([])).toBeNull();
  });

  it('the example address has the example script hash (SHA-256 of the script, reversed)', () => {
    const script = addressToScript('bcrt1qn7d2x7272lznt5hhk9s07q3cqnrqljnwladrd3', 'regtest');
    expect(Buffer.from(createHash('sha256').update(script).digest()).reverse().toString('hex')).toBe(
      'f04bf26fc16a27abaa2f10540da7a24e369e6ec408f2d901202a7c0cd4a6112d',
    );
  });
});
