/**
 * The wallet derivation pool (src/db/wallet-derive-pool.ts) on real worker threads: it derives
 * what the same code derives in-thread, waiting jobs go round-robin between owners with the
 * indexer's first, a budget refuses before deriving past it, and an aborted job's thread is
 * terminated while the pool keeps serving.
 */
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bip32Versions } from '../../../src/bitcoin/extended-key.js';
import { withChecksum } from '../../../src/bitcoin/descriptor.js';
import { deriveAddresses } from '../../../src/db/wallet-derive.js';
import { DeriveBudget, INDEXER_OWNER, setWalletDeriveThreads, walletDerivePool } from '../../../src/db/wallet-derive-pool.js';
import { ServiceError } from '../../../src/errors.js';

const tpub = HDKey.fromMasterSeed(new Uint8Array(32).fill(3), bip32Versions('regtest')).publicExtendedKey;
const single = (step: number) => withChecksum(`wpkh(${tpub}/${step}/*)`);

describe('wallet derivation pool', () => {
  beforeAll(() => setWalletDeriveThreads(1));
  afterAll(async () => walletDerivePool().close());

  it('derives in a thread exactly what the derivation gives in-thread', async () => {
    expect(await walletDerivePool().derive(single(0), 'regtest', 3, 9)).toEqual(deriveAddresses(single(0), 'regtest', 3, 9));
  });

  it('takes waiting jobs round-robin between owners, the indexer first', async () => {
    const pool = walletDerivePool();
    const order: string[] = [];
    const job = (name: string, owner: string, step: number) =>
      pool.derive(single(step), 'regtest', 0, 5, { owner }).then(() => order.push(name));
    // One thread: the first job runs, the rest wait in the order submitted.
    await Promise.all([
      job('a1', 'key:a', 1),
      job('a2', 'key:a', 2),
      job('a3', 'key:a', 3),
      job('b1', 'key:b', 4),
      job('i1', INDEXER_OWNER, 5),
    ]);
    expect(order).toEqual(['a1', 'i1', 'a2', 'b1', 'a3']);
  });

  it('a budget refuses before deriving past it', async () => {
    const budget = new DeriveBudget(10);
    await walletDerivePool().derive(single(0), 'regtest', 0, 10, { budget });
    const over = await walletDerivePool()
      .derive(single(0), 'regtest', 10, 11, { budget })
      .catch((err: unknown) => err);
    expect(over).toBeInstanceOf(ServiceError);
    expect((over as ServiceError).code).toBe('ERR_WALLET_TOO_LARGE');
  });

  it('an aborted job has its thread terminated; the pool serves the next job on a new thread', async () => {
    const pool = walletDerivePool();
    const before = pool.status().terminated;
    const ac = new AbortController();
    // 16-key multisig × 100,000 addresses: far longer than the wait below.
    const keys = Array.from(
      { length: 16 },
      (_, i) => HDKey.fromMasterSeed(new Uint8Array(32).fill(i + 10), bip32Versions('regtest')).publicExtendedKey,
    );
    const heavy = pool
      .derive(withChecksum(`wsh(multi(1,${keys.map((k) => `${k}/0/*`).join(',')}))`), 'regtest', 0, 100_000, { signal: ac.signal })
      .catch((err: unknown) => err);
    while (pool.status().busy === 0) await new Promise((r) => setTimeout(r, 20));
    ac.abort(new Error('gone'));
    expect(((await heavy) as Error).message).toBe('gone');
    expect(pool.status()).toMatchObject({ busy: 0, waiting: 0, terminated: before + 1 });
    expect(await pool.derive(single(0), 'regtest', 0, 2)).toEqual(deriveAddresses(single(0), 'regtest', 0, 2));
  });
});
