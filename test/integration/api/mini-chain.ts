/**
 * A small hand-written index for API edge cases (two blocks and a mempool transaction), its
 * rows inserted directly as the indexer would write them (docs/schema.md). Real transactions
 * (encoded by src/bitcoin/encode.ts, so txids are real); fixture-driven tests cover the indexer's
 * own output.
 *   block 0: c0 (coinbase) → A 50 BTC
 *   block 1: c1 (coinbase) → B 50 BTC;  t1 spends c0:0 → A 30, B 19.9999, OP_RETURN "hello"
 *   mempool: m1 spends t1:0 → B 10, A 19.99
 */
import { groupKey, spentGroup } from '../../../src/db/spent-groups.js';
import type { Kysely } from 'kysely';
import type { Database } from '../../../src/db/schema.js';
import { encodeTx } from '../../../src/bitcoin/encode.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { addressToScript } from '../../../src/bitcoin/address.js';
import { addressKey } from '../../../src/db/address-key.js';
import { encodeIns, encodeOuts } from '../../../src/db/packed.js';
import { seedHistory } from '../../support/history-rows.js';
import { txNum } from '../../../src/db/tx-num.js';

export const A = 'bcrt1qn5fgugamhunv64rhjllz90dgqulruh8dk32q08';
export const B = 'muyHfx27LBQeXLjs2jZLCJfh3eszVbNh3q';
const BTC = 100_000_000n;

const sA = addressToScript(A, 'regtest');
const sB = addressToScript(B, 'regtest');
const opReturn = Uint8Array.from([0x6a, 5, ...Buffer.from('hello')]);

function tx(inputs: { txid: Uint8Array; vout: number }[], outputs: { value: bigint; script: Uint8Array }[], tag = 0) {
  const coinbase = inputs.length === 0;
  const raw = encodeTx({
    version: 2,
    locktime: tag,
    inputs: coinbase
      ? [{ prevTxid: new Uint8Array(32), vout: 0xffffffff, scriptSig: Uint8Array.from([1, tag, 0x51]), sequence: 0xffffffff }]
      : inputs.map((i) => ({ prevTxid: i.txid, vout: i.vout, scriptSig: new Uint8Array(0), sequence: 0xfffffffd })),
    outputs,
  });
  const d = decodeTx(raw);
  return { raw: Buffer.from(raw), txid: Buffer.from(d.txid), hex: hashToHex(d.txid) };
}

export const c0 = tx([], [{ value: 50n * BTC, script: sA }], 0);
export const c1 = tx([], [{ value: 50n * BTC, script: sB }], 1);
export const t1 = tx(
  [{ txid: c0.txid, vout: 0 }],
  [
    { value: 30n * BTC, script: sA },
    { value: 19n * BTC + 99_990_000n, script: sB },
    { value: 0n, script: opReturn },
  ],
);
export const m1 = tx(
  [{ txid: t1.txid, vout: 0 }],
  [
    { value: 10n * BTC, script: sB },
    { value: 19n * BTC + 99_000_000n, script: sA },
  ],
);

export const kA = addressKey(sA);
export const kB = addressKey(sB);
export const blockHash = [Buffer.alloc(32, 0xb0), Buffer.alloc(32, 0xb1)];
export const blockTime = [1_700_000_000, 1_700_000_600];
export const m1FirstSeen = new Date('2026-01-02T03:04:05.678Z');

/** Inserts the mini chain into a migrated database. */
export async function insertMiniChain(db: Kysely<Database>): Promise<void> {
  await db
    .insertInto('blocks')
    .values(
      [0, 1].map((h) => ({
        height: h,
        hash: blockHash[h]!,
        prev_hash: h === 0 ? Buffer.alloc(32) : blockHash[h - 1]!,
        header: Buffer.alloc(80),
        time: blockTime[h]!,
        tx_count: h === 0 ? 1 : 2,
        size: 300,
        weight: 1200,
      })),
    )
    .execute();
  await db
    .insertInto('txs')
    .values([
      { tx_num: txNum(0, 0), txid: c0.txid, outs: encodeOuts([{ value: 50n * BTC, script: sA }]), ins: Buffer.alloc(0), first_seen: null },
      { tx_num: txNum(1, 0), txid: c1.txid, outs: encodeOuts([{ value: 50n * BTC, script: sB }]), ins: Buffer.alloc(0), first_seen: null },
      {
        tx_num: txNum(1, 1),
        txid: t1.txid,
        outs: encodeOuts([
          { value: 30n * BTC, script: sA },
          { value: 19n * BTC + 99_990_000n, script: sB },
          { value: 0n, script: opReturn },
        ]),
        ins: encodeIns([{ txNum: txNum(0, 0), vout: 0 }]),
        spent_group: groupKey(spentGroup(Number(txNum(0, 0)))),
        first_seen: new Date('2023-11-14T22:15:00Z'),
      },
    ])
    .execute();
  await db
    .insertInto('utxos')
    .values([
      { txid: c1.txid, vout: 0, tx_num: txNum(1, 0), addr_key: kB, value: 50n * BTC, script: Buffer.from(sB) },
      { txid: t1.txid, vout: 0, tx_num: txNum(1, 1), addr_key: kA, value: 30n * BTC, script: Buffer.from(sA) },
      { txid: t1.txid, vout: 1, tx_num: txNum(1, 1), addr_key: kB, value: 19n * BTC + 99_990_000n, script: Buffer.from(sB) },
    ])
    .execute();
  await db
    .insertInto('balances')
    .values([
      { addr_key: kA, balance: 30n * BTC, utxo_count: 1 },
      { addr_key: kB, balance: 69n * BTC + 99_990_000n, utxo_count: 2 },
    ])
    .execute();
  await seedHistory(db, kA, [txNum(0, 0), txNum(1, 1)]);
  await seedHistory(db, kB, [txNum(1, 0), txNum(1, 1)]);
  await db.insertInto('mempool_txs').values({ txid: m1.txid, raw: m1.raw, first_seen: m1FirstSeen, fee: 1_000_000n, vsize: 110 }).execute();
  await db
    .insertInto('mempool_outputs')
    .values([
      { txid: m1.txid, vout: 0, addr_key: kB, value: 10n * BTC, script: Buffer.from(sB) },
      { txid: m1.txid, vout: 1, addr_key: kA, value: 19n * BTC + 99_000_000n, script: Buffer.from(sA) },
    ])
    .execute();
  await db.insertInto('mempool_spends').values({ prev_txid: t1.txid, prev_vout: 0, txid: m1.txid }).execute();
  await db
    .insertInto('mempool_addresses')
    .values([
      { addr_key: kA, txid: m1.txid, received: 19n * BTC + 99_000_000n, sent: 30n * BTC },
      { addr_key: kB, txid: m1.txid, received: 10n * BTC, sent: 0n },
    ])
    .execute();
  await db.updateTable('chain_tip').set({ height: 1, hash: blockHash[1]! }).execute();
}
