/**
 * Open Assets colors computed by the indexer (asset_txs, mempool_txs.assets) and shown as
 * coinstackd's `metadata` on outputs and unspent outputs: an issuance and a transfer made by the
 * SDK, seen in the mempool and confirmed; each output's color equal to what the SDK's own
 * coloring engine (client/assets.ts, a separate implementation walking the history through the
 * API) computes; the rows undone with their block by a reorg; and the index's colors equal to
 * those of a fresh per-block index and of fresh bulk indexes of the same chain (one batch, and a
 * batch per block).
 */
import { afterAll, beforeAll, expect, it, describe } from 'vitest';
import { BlockwireClient } from '../../../client/api.js';
import { Key } from '../../../client/keys.js';
import { ColoringEngine } from '../../../client/assets.js';
import { decodeAssetId } from '../../../client/open-assets.js';
import { BitcoindClient } from '../../../src/rpc/bitcoind.js';
import { snapshotIndex } from '../../support/chain-snapshot.js';
import { freshBulkIndexOf, freshIndexOf } from '../../support/chain-indexer.js';
import { startStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait.js';
import { coinstackAssetId } from '../../../api/dialects/coinstack-assets.js';

type Meta = {
  openassets: { output_type: string; version: { major_version: number; minor_version: number }; asset_id?: string; quantity: number };
};
type CsTx = { outputs: { index: number; value: string; metadata?: Meta }[] };

describe('Open Assets metadata from the indexer', () => {
  let stack: Stack;
  let client: BlockwireClient;
  let rpc: BitcoindClient;
  const get = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${stack.url}${path}`, { headers: { apiKey: stack.apiKey } });
    expect(r.status, `${path}: ${await r.clone().text()}`).toBe(200);
    return (await r.json()) as T;
  };

  beforeAll(async () => {
    stack = await startStack({ stamping: false, worker: false });
    client = new BlockwireClient({ url: stack.url, apiKey: stack.apiKey, network: 'regtest' });
    rpc = new BitcoindClient({ url: stack.devnode.rpcUrl });
  }, 180_000);
  afterAll(async () => stack?.stop());

  /** Every output's metadata as the SDK's coloring engine computes it (or none when uncolored and not in a marker transaction). */
  async function expectMetadataMatchesEngine(txid: string): Promise<CsTx> {
    const tx = await get<CsTx>(`/transactions/${txid}`);
    const engine = new ColoringEngine({ source: client });
    for (const o of tx.outputs) {
      const c = await engine.colorOutput(txid, o.index);
      expect(o.metadata, `${txid}:${o.index}`).toBeDefined();
      const kind =
        c.kind === 'issuance' && c.assetId === null
          ? 'UNCOLORED'
          : c.kind === 'transfer' && c.assetId === null
            ? 'UNCOLORED'
            : c.kind.toUpperCase();
      expect(o.metadata!.openassets.output_type, `${txid}:${o.index}`).toBe(kind);
      expect(o.metadata!.openassets.quantity).toBe(Number(c.quantity));
      expect(o.metadata!.openassets.asset_id).toBe(c.assetId === null ? undefined : coinstackAssetId(Buffer.from(c.assetId, 'hex')));
    }
    return tx;
  }

  it('issuance and transfer: metadata in the mempool and confirmed, equal to the SDK engine; unspent outputs carry it', async () => {
    const issuer = Key.random('regtest');
    const alice = Key.random('regtest');
    const bob = Key.random('regtest').address('p2pkh');
    await stack.devnode.wallet.send(issuer.address('p2wpkh'), 100_000n, { outputs: [{ to: alice.address('p2pkh'), sats: 50_000n }] });
    await stack.mine(1);
    const assets = client.openAssets;
    const { assetId, tx: issue } = await assets.issue({ issuer, quantity: 21_000n, to: alice.address('p2pkh') });
    await issue.send();
    // colored as soon as the indexer has it in its mempool
    const pending = await waitFor('the issuance indexed in the mempool', async () => {
      const r = await fetch(`${stack.url}/transactions/${issue.txid}`, { headers: { apiKey: stack.apiKey } });
      return r.status === 200 ? ((await r.json()) as CsTx) : undefined;
    });
    const marker = pending.outputs.find((o) => o.metadata?.openassets.output_type === 'MARKER')!;
    expect(marker.metadata!.openassets).toEqual({ output_type: 'MARKER', version: { major_version: 1, minor_version: 0 }, quantity: 0 });
    const issued = pending.outputs.find((o) => o.metadata?.openassets.output_type === 'ISSUANCE')!;
    expect(issued.metadata!.openassets).toEqual({
      output_type: 'ISSUANCE',
      version: { major_version: 0, minor_version: 0 },
      asset_id: coinstackAssetId(decodeAssetId(assetId, 'regtest')),
      quantity: 21_000,
    });
    await stack.mine(1);
    expect((await expectMetadataMatchesEngine(issue.txid)).outputs.filter((o) => o.metadata).length).toBe(pending.outputs.length);

    const transfer = await assets.transfer({ from: alice, type: 'p2pkh', assetId, quantity: 5_000n, to: bob });
    await transfer.send();
    await stack.synced();
    await stack.mine(1);
    const t = await expectMetadataMatchesEngine(transfer.txid);
    expect(t.outputs.some((o) => o.metadata?.openassets.output_type === 'TRANSFER' && o.metadata.openassets.quantity === 5_000)).toBe(true);

    const bobUnspent = await get<{ transaction_hash: string; index: number; metadata?: Meta }[]>(`/addresses/${bob}/unspentoutputs`);
    expect(bobUnspent).toHaveLength(1);
    expect(bobUnspent[0]!.metadata!.openassets).toMatchObject({
      output_type: 'TRANSFER',
      quantity: 5_000,
      asset_id: coinstackAssetId(decodeAssetId(assetId, 'regtest')),
    });
    // a plain payment has no metadata at all
    const plain = await get<CsTx>(`/transactions/${(await get<string[]>(`/addresses/${issuer.address('p2wpkh')}/history`)).at(-1)}`);
    expect(plain.outputs.every((o) => o.metadata === undefined)).toBe(true);
  });

  it('a reorg undoes the colors with their block; the index equals a fresh per-block and a fresh bulk index', async () => {
    const before = await snapshotIndex(stack.db.db);
    expect(before.assets.length).toBeGreaterThanOrEqual(2);
    // take the last two blocks out (the transfer's and the issuance's blocks), then a longer empty branch
    const tip = stack.devnode.tip();
    await rpc.call('invalidateblock', [stack.devnode.blockHash(tip.height - 1)]);
    await stack.mine(3); // (waits for the index to hold the new branch's tip)
    const after = await snapshotIndex(stack.db.db);
    // the undone blocks' rows went with them (the transactions, mined again, sit at other tx_nums)
    expect(after.assets).not.toEqual(before.assets);
    // (a bulk batch of the whole chain finds the issuance's first input's script in its own
    // blocks; batches of one block each leave it to the finish, which reads it from utxos)
    const [fresh, bulk, perBlockBatches] = [
      await freshIndexOf(stack.devnode),
      await freshBulkIndexOf(stack.devnode),
      await freshBulkIndexOf(stack.devnode, 1),
    ];
    try {
      expect(after.assets).toEqual((await snapshotIndex(fresh.db)).assets);
      expect(after.assets).toEqual((await snapshotIndex(bulk.db)).assets);
      expect(after.assets).toEqual((await snapshotIndex(perBlockBatches.db)).assets);
    } finally {
      await Promise.all([fresh.drop(), bulk.drop(), perBlockBatches.drop()]);
    }
  });
});
