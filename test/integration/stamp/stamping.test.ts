/**
 * Stamping end to end, with the indexer following the node, on the devnode and on a real regtest
 * Bitcoin Core 30 (its wallet funding, `generateblock` for blocks a miner makes without the
 * stamps or with a chosen transaction, `invalidateblock` for the reorg): a wallet with no coins is
 * refused clearly; 100 concurrent stamps over 20 coins end in few transactions, each hash in
 * exactly one OP_RETURN output equal to it, no coin spent twice, broadcast bytes = stored bytes;
 * Idempotency-Key and tenancy; a stamp stuck for 3 blocks is fee-bumped by replacement (BIP125)
 * and its old id tells the new one; a reorg makes confirmations fall back and recover, with
 * stamp.confirmed / stamp.unconfirmed events for the key that made the stamp. The stamp
 * transactions are the node's mempool entries as stored (fee and vsize). On Core, a stamp's GET
 * carries its transaction and, once mined, its inclusion proof (header, branch, gettxoutproof
 * bytes) as Core makes them; the SDK verifies it offline and refuses each tampered link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { hashToHex, hexToHash } from '../../../src/bitcoin/hash.js';
import { nullData } from '../../../src/bitcoin/script.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import { encodeWif } from '../../../src/bitcoin/wif.js';
import { rateOf } from '../../../stamp/fee.js';
import type { StampNode } from '../../../stamp/node.js';
import { startStamper } from '../../../stamp/stamper.js';
import { buildApi } from '../../../api/app.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/wait.js';
import { BlockwireClient, StampProofError, verifyStampProof, type StampStatus } from '../../../client/index.js';

/** The reason of the StampProofError `fn` throws (it must throw one). */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof StampProofError) return err.reason;
    throw err;
  }
  throw new Error('the proof was accepted');
}

let h: StampHarness;

type StampTx = { txid: Buffer; raw: Buffer; fee: bigint; vsize: number; status: string; replaces: Buffer | null };

async function storedTxs(): Promise<StampTx[]> {
  const r = await sql<StampTx>`SELECT txid, raw, fee, vsize, status, replaces FROM stamp_txs ORDER BY created_at`.execute(h.t.db);
  return r.rows;
}

async function outboxFor(
  type: string,
  txid: Buffer,
): Promise<{ key_id: bigint; confirmations: number; data: { stampid: string; hash: string } }[]> {
  const r = await sql<{ key_id: bigint; confirmations: number; data: { stampid: string; hash: string } }>`
    SELECT key_id, confirmations, data FROM outbox WHERE type = ${type} AND txid = ${txid} ORDER BY seq`.execute(h.t.db);
  return r.rows;
}

for (const core of [false, true]) {
  (core ? describeBitcoind : describe)(`stamping on ${core ? 'a real bitcoind' : 'the devnode'}`, () => {
    beforeAll(async () => {
      h = await createStampHarness({}, { core });
    });
    afterAll(async () => {
      await h?.close();
    });

    it('a wallet with no coins answers a clear error and accepts no stamp', async () => {
      const empty = encodeWif(randomBytes(32), 'regtest');
      const stamper = await h.startStamper({ config: { ...h.config, stampWalletWif: empty } });
      const status = await stamper.status();
      expect(status.can_pay).toBe(false);
      expect(status.balance.spendable).toBe(0);
      const res = await h.post(randomHash());
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ error_code: 'ERR_STAMP_WALLET_EMPTY', error_message: 'stamping wallet cannot pay', retry: false });
      expect(res.json().error_cause).toContain(status.address);
      const n = await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamps`.execute(h.t.db);
      expect(n.rows[0]!.n).toBe('0');
    });

    it('100 concurrent stamps over 20 coins: few transactions, each hash in exactly one output, no coin spent twice', async () => {
      const stamper = await h.startStamper();
      await h.fund(20, 100_000n);
      const status = await stamper.status();
      expect(status.can_pay).toBe(true);
      expect(status.balance.confirmed).toBe(2_000_000);
      expect(status.addresses).toContain(status.address);

      const hashes = Array.from({ length: 100 }, randomHash);
      const answers = await Promise.all(hashes.map((x) => h.post(x)));
      for (const a of answers) expect(a.statusCode, a.body).toBe(200);
      const ids = answers.map((a) => a.json().stampid as string);
      expect(new Set(ids).size).toBe(100);
      const txids = new Set(ids.map((id) => id.split('-')[0]!));
      expect(txids.size).toBeLessThanOrEqual(3);

      const stored = await storedTxs();
      expect(stored).toHaveLength(txids.size);
      const seenPayloads = new Map<string, number>();
      const spent = new Set<string>();
      for (const tx of stored) {
        // What the node holds is exactly what was stored before broadcast.
        const fromNode = Buffer.from(await h.rpc.getRawTransaction(hashToHex(tx.txid)));
        expect(fromNode.equals(tx.raw)).toBe(true);
        const entry = await h.rpc.getMempoolEntry(hashToHex(tx.txid));
        expect([entry.vsize, Math.round(entry.fees.base * 1e8)]).toEqual([tx.vsize, Number(tx.fee)]);
        const d = decodeTx(tx.raw);
        for (const input of d.inputs) {
          const k = `${hashToHex(input.prevTxid)}:${input.vout}`;
          expect(spent.has(k)).toBe(false);
          spent.add(k);
        }
        d.outputs.forEach((o) => {
          const payload = nullData(o.script);
          if (payload)
            seenPayloads.set(Buffer.from(payload).toString('hex'), (seenPayloads.get(Buffer.from(payload).toString('hex')) ?? 0) + 1);
        });
      }
      expect([...seenPayloads.values()].every((n) => n === 1)).toBe(true);
      expect([...seenPayloads.keys()].sort()).toEqual([...hashes].sort());
      // Each stamp id names the output whose payload is its hash.
      for (const [i, id] of ids.entries()) {
        const [txid, vout] = id.split('-');
        const tx = decodeTx(stored.find((s) => hashToHex(s.txid) === txid)!.raw);
        expect(Buffer.from(nullData(tx.outputs[Number(vout)]!.script)!).toString('hex')).toBe(hashes[i]);
      }

      const [block] = await h.mine(1);
      const mined = await h.rpc.call<{ tx: string[] }>('getblock', [block, 1]);
      for (const tx of stored) expect(mined.tx).toContain(hashToHex(tx.txid));
      await waitFor(
        'stamps confirmed',
        async () => (await h.stamper!.track()) && (await storedTxs()).every((t) => t.status === 'confirmed'),
      );
      const g = await h.get(ids[0]!);
      expect(g.statusCode).toBe(200);
      expect(g.json()).toMatchObject({ tx: ids[0]!.split('-')[0], vout: Number(ids[0]!.split('-')[1]), confirmations: 1 });
      expect(g.json().timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      // One stamp.confirmed event per stamp, for the key that made it.
      let events = 0;
      for (const txid of txids) {
        const rows = await outboxFor('stamp.confirmed', Buffer.from(hexToHash(txid)));
        events += rows.length;
        for (const r of rows) expect(r.key_id).toBe(h.keyId);
      }
      expect(events).toBe(100);
      await h.mine(2);
      const deep = await h.get(ids[99]!);
      expect(deep.json().confirmations).toBe(3);
      // the tip its confirmations were counted at: Core's
      expect([deep.headers['blockwire-tip-height'], deep.headers['blockwire-tip-hash']]).toEqual([
        String(await h.rpc.call<number>('getblockcount')),
        await h.rpc.call<string>('getbestblockhash'),
      ]);
    });

    it('STAMP_MAX_TX_FEE splits a large batch into several transactions, none paying more', async () => {
      await h.startStamper({ config: { ...h.config, stampMaxTxFee: 3000 } });
      try {
        const before = new Set((await storedTxs()).map((t) => t.txid.toString('hex')));
        const answers = await Promise.all(Array.from({ length: 60 }, () => h.post(randomHash())));
        for (const a of answers) expect(a.statusCode, a.body).toBe(200);
        const fresh = (await storedTxs()).filter((t) => !before.has(t.txid.toString('hex')));
        expect(fresh.length).toBeGreaterThan(1);
        for (const t of fresh) expect(t.fee).toBeLessThanOrEqual(3000n);
        expect(new Set(answers.map((a) => (a.json().stampid as string).split('-')[0])).size).toBe(fresh.length);
      } finally {
        await h.startStamper();
      }
      await h.mine(1);
    });

    it('two stampers on one database (two processes) never spend the same coin', async () => {
      const second = await startStamper({ db: h.t.db, log: h.log, config: h.config, network: 'regtest', node: h.rpc });
      const app2 = await buildApi({ db: h.t.db, log: h.log, network: 'regtest', stamps: second.service });
      try {
        const before = new Set((await storedTxs()).map((t) => t.txid.toString('hex')));
        const post2 = (hash: string) =>
          app2.inject({
            method: 'POST',
            url: '/v1/stamps',
            headers: { apiKey: h.key, 'content-type': 'application/json' },
            payload: { hash },
          });
        // Several waves, so that batches of both overlap.
        for (let wave = 0; wave < 3; wave++) {
          const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? h.post(randomHash()) : post2(randomHash()))));
          for (const a of answers) expect(a.statusCode, a.body).toBe(200);
        }
        const fresh = (await storedTxs()).filter((t) => !before.has(t.txid.toString('hex')));
        expect(fresh.length).toBeGreaterThanOrEqual(2);
        const spent = new Set<string>();
        for (const t of fresh) {
          for (const input of decodeTx(t.raw).inputs) {
            const k = `${hashToHex(input.prevTxid)}:${input.vout}`;
            expect(spent.has(k), `${k} spent twice`).toBe(false);
            spent.add(k);
          }
        }
        await waitFor('all in the mempool', async () => {
          const pool = await h.mempool();
          return fresh.every((t) => pool.includes(hashToHex(t.txid)));
        });
      } finally {
        await app2.close();
        await second.stop();
      }
      await h.mine(1);
    });

    it('a wallet that pays for only some stamps places those and refuses the rest', async () => {
      const poor = encodeWif(randomBytes(32), 'regtest');
      const stamper = await h.startStamper({ config: { ...h.config, stampWalletWif: poor, stampAnswerTimeoutMs: 3000 } });
      try {
        await h.fund(1, 1000n);
        const answers = await Promise.all(Array.from({ length: 20 }, () => h.post(randomHash())));
        const placed = answers.filter((a) => a.statusCode === 200);
        const refused = answers.filter((a) => a.statusCode !== 200);
        expect(placed.length).toBeGreaterThan(0);
        expect(refused.length).toBeGreaterThan(0);
        for (const r of refused) expect(['ERR_STAMP_WALLET_EMPTY', 'ERR_STAMP_PENDING']).toContain(r.json().error_code);
        const txids = new Set(placed.map((a) => (a.json().stampid as string).split('-')[0]));
        expect(txids.size).toBe(1);
        await h.mine(1);
        // Once nothing of the wallet is pending, what it cannot pay for is dropped, never paid.
        await waitFor('the unpaid stamps dropped', async () => {
          await stamper.track();
          const q = await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamps WHERE status = 'queued'`.execute(h.t.db);
          return q.rows[0]!.n === '0';
        });
        const after = await h.post(randomHash());
        expect(after.statusCode).toBe(503);
        expect(after.json().error_code).toBe('ERR_STAMP_WALLET_EMPTY');
      } finally {
        await h.startStamper();
      }
    });

    it('Idempotency-Key returns the same stamp; another hash under it conflicts; keys see only their own stamps; ids are validated', async () => {
      const hash = randomHash();
      const a = await h.post(hash, { idem: 'order-1' });
      const b = await h.post(hash, { idem: 'order-1' });
      expect(a.statusCode).toBe(200);
      expect(b.json().stampid).toBe(a.json().stampid);
      const c = await h.post(randomHash(), { idem: 'order-1' });
      expect(c.statusCode).toBe(409);
      expect(c.json().error_code).toBe('ERR_IDEMPOTENCY_CONFLICT');
      const other = await h.newKey();
      // The same Idempotency-Key under another API key is another stamp.
      const d = await h.post(hash, { idem: 'order-1', key: other.key });
      expect(d.json().stampid).not.toBe(a.json().stampid);
      const foreign = await h.get(a.json().stampid, other.key);
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json().error_code).toBe('ERR_STAMP_NOT_FOUND');
      expect((await h.get(`${'0'.repeat(64)}-0`)).statusCode).toBe(404);
      const bad = await h.get('nothex-1');
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error_code).toBe('ERR_INVALID_STAMP_ID');
      const mine = await h.get(a.json().stampid);
      expect(mine.json()).toMatchObject({ confirmations: 0 });
      await h.mine(1);
    });

    it('a stamp unconfirmed for 3 blocks is fee-bumped by replacement; the old id tells the new one', async () => {
      const hash = randomHash();
      const res = await h.post(hash);
      const oldId: string = res.json().stampid;
      const [oldTxid, vout] = oldId.split('-');
      const original = (await storedTxs()).find((t) => hashToHex(t.txid) === oldTxid)!;
      expect(original.status).toBe('broadcast');
      await h.mine(3, { includeMempool: false });
      const replacement = await waitFor('a replacement', async () => {
        await h.stamper!.track();
        return (await storedTxs()).find((t) => t.replaces && hashToHex(t.replaces) === oldTxid && t.status === 'broadcast');
      });
      const newTxid = hashToHex(replacement.txid);
      // BIP125: more absolute fee (rule 3) by at least the incremental relay fee for its size (rule 4), ≥ 25% more feerate.
      const info = await h.rpc.getNetworkInfo();
      expect(replacement.fee - original.fee).toBeGreaterThanOrEqual(BigInt(Math.ceil(info.incrementalfee * 1e5 * replacement.vsize)));
      expect(rateOf(replacement.fee, replacement.vsize) * 100n).toBeGreaterThanOrEqual(rateOf(original.fee, original.vsize) * 125n);
      expect(replacement.fee).toBeLessThanOrEqual(BigInt(h.config.stampMaxTxFee));
      const pool = await h.mempool();
      expect(pool).toContain(newTxid);
      expect(pool).not.toContain(oldTxid);
      // Same OP_RETURN at the same vout.
      const d = decodeTx(replacement.raw);
      expect(Buffer.from(nullData(d.outputs[Number(vout)]!.script)!).toString('hex')).toBe(hash);
      const viaOld = await h.get(oldId);
      expect(viaOld.json()).toMatchObject({ tx: newTxid, vout: Number(vout), confirmations: 0 });
      await h.mine(1);
      await waitFor('the replacement confirmed', async () => (await h.stamper!.track()) && (await h.get(oldId)).json().confirmations === 1);
      expect((await h.get(`${newTxid}-${vout}`)).json()).toMatchObject({ tx: newTxid, confirmations: 1 });
      expect(await outboxFor('stamp.confirmed', replacement.txid)).toHaveLength(1);
      expect(await outboxFor('stamp.confirmed', original.txid)).toHaveLength(0);
    });

    it('no bump above STAMP_MAX_FEE_RATE: the stuck transaction stays as it is', async () => {
      await h.startStamper({ config: { ...h.config, stampMaxFeeRate: 2.2 } });
      try {
        const id: string = (await h.post(randomHash())).json().stampid;
        const txid = id.split('-')[0]!;
        await h.mine(3, { includeMempool: false });
        for (let i = 0; i < 5; i++) await h.stamper!.track();
        const rows = await storedTxs();
        expect(rows.filter((t) => t.replaces && hashToHex(t.replaces) === txid)).toHaveLength(0);
        expect(rows.find((t) => hashToHex(t.txid) === txid)!.status).toBe('broadcast');
        expect(await h.mempool()).toContain(txid);
      } finally {
        await h.startStamper();
      }
      await h.mine(1);
    });

    it('if the replaced version confirms instead of its replacement, the stamp follows it', async () => {
      const hash = randomHash();
      const oldId: string = (await h.post(hash)).json().stampid;
      const [oldTxid, vout] = oldId.split('-');
      const original = (await storedTxs()).find((t) => hashToHex(t.txid) === oldTxid)!;
      await h.mine(3, { includeMempool: false });
      const replacement = await waitFor('a replacement', async () => {
        await h.stamper!.track();
        return (await storedTxs()).find((t) => t.replaces && hashToHex(t.replaces) === oldTxid && t.status === 'broadcast');
      });
      // A miner that never saw the replacement mines the original.
      await h.mine(1, { txs: [original.raw.toString('hex')], includeMempool: false });
      await waitFor('the family settled on the original', async () => {
        await h.stamper!.track();
        const rows = await storedTxs();
        return (
          rows.find((t) => t.txid.equals(original.txid))?.status === 'confirmed' &&
          rows.find((t) => t.txid.equals(replacement.txid))?.status === 'replaced'
        );
      });
      const newId = `${hashToHex(replacement.txid)}-${vout}`;
      for (const id of [oldId, newId])
        expect((await h.get(id)).json()).toMatchObject({ tx: oldTxid, vout: Number(vout), confirmations: 1 });
      expect(await outboxFor('stamp.confirmed', original.txid)).toHaveLength(1);
      expect(await outboxFor('stamp.confirmed', replacement.txid)).toHaveLength(0);
      const placed = await sql<{ txid: Buffer }>`SELECT txid FROM stamps WHERE hash = ${Buffer.from(hash, 'hex')}`.execute(h.t.db);
      expect(placed.rows.map((r) => hashToHex(r.txid))).toEqual([oldTxid]);
    });

    it('a node older than Core 30 gets one stamp per transaction', async () => {
      const rpc = h.rpc;
      const core29: StampNode = {
        sendRawTransaction: (hex) => rpc.sendRawTransaction(hex),
        estimateSmartFee: (n) => rpc.estimateSmartFee(n),
        getNetworkInfo: async () => ({ ...(await rpc.getNetworkInfo()), version: 290100 }),
      };
      const stamper = await h.startStamper({ node: core29 });
      try {
        const hashes = Array.from({ length: 4 }, randomHash);
        const ids = (await Promise.all(hashes.map((x) => h.post(x)))).map((r) => r.json().stampid as string);
        expect(ids.every((id) => id.endsWith('-0'))).toBe(true);
        const txids = new Set(ids.map((id) => id.split('-')[0]!));
        expect(txids.size).toBe(4);
        for (const txid of txids) {
          const tx = decodeTx(Buffer.from(await rpc.getRawTransaction(txid)));
          expect(tx.outputs.filter((o) => nullData(o.script) !== null)).toHaveLength(1);
          expect(hashes).toContain(Buffer.from(nullData(tx.outputs[0]!.script)!).toString('hex'));
        }
        expect((await stamper.status()).stamps_per_tx).toBe(1);
      } finally {
        await h.startStamper();
      }
      await h.mine(1);
    });

    it('after a reorg confirmations fall back and recover, with stamp.unconfirmed then stamp.confirmed', async () => {
      const res = await h.post(randomHash());
      const id: string = res.json().stampid;
      const txid = Buffer.from(hexToHash(id.split('-')[0]!));
      await h.mine(1);
      await waitFor('confirmed', async () => (await h.stamper!.track()) && (await outboxFor('stamp.confirmed', txid)).length === 1);
      expect((await h.get(id)).json().confirmations).toBe(1);

      await h.reorg(1);
      await waitFor('unconfirmed', async () => (await h.stamper!.track()) && (await outboxFor('stamp.unconfirmed', txid)).length === 1);
      const back = await h.get(id);
      expect(back.json()).toMatchObject({ tx: id.split('-')[0], confirmations: 0 });
      await waitFor('back in the mempool', async () => (await h.mempool()).includes(id.split('-')[0]!));

      await h.mine(1);
      await waitFor('confirmed again', async () => (await h.stamper!.track()) && (await outboxFor('stamp.confirmed', txid)).length === 2);
      expect((await h.get(id)).json().confirmations).toBe(1);
      const [un] = await outboxFor('stamp.unconfirmed', txid);
      expect(un!.key_id).toBe(h.keyId);
      expect(un!.confirmations).toBe(0);
      expect(un!.data.stampid).toBe(id);
    });

    // (Core only: the devnode has no gettxoutproof to compare with)
    if (core)
      it("GET /stamps/{id} answers the stamp's transaction and, once mined, its proof as Core makes it; the SDK verifies it offline and refuses every tampered link", async () => {
        await h.startStamper();
        await h.fund(2, 200_000n);
        const hash = randomHash();
        const other = randomHash();
        const [a, b] = await Promise.all([h.post(hash), h.post(other)]);
        expect(a.statusCode, a.body).toBe(200);
        expect(b.statusCode, b.body).toBe(200);
        const id = a.json().stampid as string;
        const [txid, vout] = [id.split('-')[0]!, Number(id.split('-')[1])];

        // Unconfirmed: the transaction as Core holds it, no proof yet; the SDK says so.
        await h.synced();
        const client = async () => {
          await h.app.listen({ port: 0, host: '127.0.0.1' });
          const { port } = h.app.server.address() as { port: number };
          return new BlockwireClient({ url: `http://127.0.0.1:${port}`, apiKey: h.key, network: 'regtest' });
        };
        const sdk = await client();
        const pending = await sdk.getStamp(id);
        expect(pending).toEqual({
          tx: txid,
          vout,
          confirmations: 0,
          timestamp: expect.any(String),
          hash,
          tx_hex: await h.rpc.call<string>('getrawtransaction', [txid]),
          proof: null,
        });
        expect(refusal(() => verifyStampProof(pending, hash))).toBe('unconfirmed');

        // Mined: the proof's block, header and gettxoutproof bytes are Core's; Core verifies them.
        const [block] = await h.mine(1);
        const stamp = await sdk.getStamp(id);
        const height = await h.rpc.getBlockCount();
        const headerHex = await h.rpc.call<string>('getblockheader', [block, false]);
        expect(stamp).toMatchObject({ tx: txid, vout, confirmations: 1, hash });
        expect(stamp.proof).toMatchObject({
          block_hash: block,
          block_height: height,
          header: headerHex,
          txoutproof: await h.rpc.call<string>('gettxoutproof', [[txid], block]),
        });
        expect(await h.rpc.call<string[]>('verifytxoutproof', [stamp.proof!.txoutproof])).toEqual([txid]);
        expect(await sdk.getTxOutProof(txid)).toBe(stamp.proof!.txoutproof);
        expect(await sdk.getMerkleProof(txid)).toEqual({
          block_height: stamp.proof!.block_height,
          merkle: stamp.proof!.merkle,
          pos: stamp.proof!.pos,
        });
        const coreBlock = await h.rpc.call<{ tx: string[]; merkleroot: string; time: number }>('getblock', [block, 1]);
        expect(stamp.proof!.pos).toBe(coreBlock.tx.indexOf(txid));
        const esplora = await h.app.inject({ method: 'GET', url: `/v1/transactions/${txid}/merkle-proof`, headers: { apiKey: h.key } });
        expect(esplora.json()).toEqual({ block_height: height, merkle: stamp.proof!.merkle, pos: stamp.proof!.pos });
        // The Coinstack dialect answers the spec's status object only.
        const bare = await h.app.inject({ method: 'GET', url: `/stamps/${id}`, headers: { apiKey: h.key } });
        expect(bare.statusCode, bare.body).toBe(200);
        expect(bare.json()).toEqual({ tx: txid, vout, confirmations: 1, timestamp: stamp.timestamp });
        await h.app.close();

        // Offline (the server is closed): hash → OP_RETURN → txid → Merkle root → header.
        const ok = verifyStampProof(stamp, hash, { header: headerHex });
        expect(ok).toEqual({
          hash,
          txid,
          vout,
          blockHash: block,
          blockHeight: height,
          merkleRoot: coreBlock.merkleroot,
          time: coreBlock.time,
          header: headerHex,
        });
        expect(verifyStampProof(stamp, hash.toUpperCase(), { blockHash: block }).txid).toBe(txid);
        expect(verifyStampProof(stamp, hash).blockHash).toBe(block);

        // Every tampered link fails, each with its reason.
        const fails = (
          s: StampStatus,
          reason: string,
          docHash = hash,
          opts: Parameters<typeof verifyStampProof>[2] = { header: headerHex },
        ) =>
          expect(
            refusal(() => verifyStampProof(s, docHash, opts)),
            reason,
          ).toBe(reason);
        const flip = (hex: string, at: number) => hex.slice(0, at) + (parseInt(hex[at]!, 16) ^ 1).toString(16) + hex.slice(at + 1);
        const proof = stamp.proof!;
        fails(stamp, 'hash', other); // another document
        fails({ ...stamp, vout: vout === 0 ? 1 : 0 }, 'hash'); // another output of the transaction
        // the transaction's OP_RETURN rewritten to the other document: its txid is no longer the proven one
        const rewritten = stamp.tx_hex.replace(`6a20${hash}`, `6a20${other}`);
        expect(rewritten).not.toBe(stamp.tx_hex);
        fails({ ...stamp, tx_hex: rewritten }, 'txid', other);
        fails({ ...stamp, tx_hex: flip(stamp.tx_hex, stamp.tx_hex.length - 1) }, 'txid'); // lock time
        fails({ ...stamp, proof: { ...proof, merkle: [flip(proof.merkle[0]!, 5), ...proof.merkle.slice(1)] } }, 'merkle');
        fails({ ...stamp, proof: { ...proof, pos: proof.pos ^ 1 } }, 'merkle');
        fails({ ...stamp, proof: { ...proof, merkle: proof.merkle.slice(1) } }, proof.merkle.length > 1 ? 'merkle' : 'malformed');
        fails({ ...stamp, proof: { ...proof, header: flip(proof.header, 36 * 2 + 3) } }, 'merkle'); // its Merkle root field
        fails({ ...stamp, proof: { ...proof, header: flip(proof.header, 68 * 2 + 1) } }, 'header'); // its time: another hash
        const parent = await h.rpc.call<string>('getblockheader', [await h.rpc.call<string>('getblockhash', [height - 1]), false]);
        fails(
          { ...stamp, proof: { ...proof, header: parent, block_hash: await h.rpc.call<string>('getblockhash', [height - 1]) } },
          'merkle',
        ); // a real header of another block
        fails(stamp, 'header', hash, { header: parent }); // not the header the caller trusts
        fails(stamp, 'header', hash, { blockHash: await h.rpc.call<string>('getblockhash', [0]) });
        fails({ ...stamp, proof: { ...proof, header: proof.header.slice(0, 150) } }, 'malformed');
        fails({ ...stamp, tx_hex: 'zz' }, 'malformed');
      });
  });
}
