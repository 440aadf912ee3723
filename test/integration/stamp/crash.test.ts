/**
 * kill -9 of a process running the stamper at each point of a batch:
 * after claiming the stamps, after reserving coins, between signing (stored) and broadcast, and
 * between broadcast and the answer. The client retries with its Idempotency-Key against a
 * restarted process; every stamp ends in exactly one transaction, broadcast with the stored
 * bytes, no coin is spent by two of our transactions, nothing is paid twice. On the devnode and
 * on a real regtest Bitcoin Core 30 (whose answer to a broadcast repeated after the kill is its own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { hashToHex } from '../../../src/bitcoin/hash.js';
import { nullData } from '../../../src/bitcoin/script.js';
import { decodeTx } from '../../../src/bitcoin/tx.js';
import type { StampPhase } from '../../../stamp/batcher.js';
import { describeBitcoind } from '../../support/bitcoind.js';
import { createStampHarness, randomHash, type StampHarness } from './harness.js';
import { waitFor } from '../../support/wait.js';
import { txRowsByTxid } from '../../../src/db/tx-reads.js';

type Child = { port: number; exited: Promise<number | null>; kill(): Promise<void> };

async function spawnStamper(h: StampHarness, crashAt?: StampPhase): Promise<Child> {
  const script = new URL('./stamper-child.ts', import.meta.url).pathname;
  const config = {
    network: 'regtest',
    stampWalletWif: h.wif,
    stampBatchWindowMs: 200,
    stampPollMs: 100,
    stampLeaseMs: 1500,
    stampAnswerTimeoutMs: 20_000,
  };
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, JSON.stringify({ databaseUrl: h.t.url, rpcUrl: h.rpcUrl, config, crashAt })],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code, signal) => r(signal === 'SIGKILL' ? -9 : code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stamper child not ready: ${err}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      const m = /ready (\d+)/.exec(d.toString());
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`stamper child exited with ${code}: ${err}`)));
  });
  return {
    port,
    exited,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

async function post(
  port: number,
  key: string,
  hash: string,
  idem: string,
): Promise<{ status: number; body: Record<string, unknown> } | 'connection lost'> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v1/stamps`, {
      method: 'POST',
      headers: { apiKey: key, 'content-type': 'application/json', 'idempotency-key': idem },
      body: JSON.stringify({ hash }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } catch {
    return 'connection lost';
  }
}

let h: StampHarness;

for (const core of [false, true]) {
  (core ? describeBitcoind : describe)(
    `kill -9 of the stamper never pays twice nor loses a stamp (${core ? 'a real bitcoind' : 'the devnode'})`,
    () => {
      beforeAll(async () => {
        h = await createStampHarness({}, { core, txindex: true });
        const s = await h.startStamper();
        await h.fund(20, 200_000n);
        await s.stop(); // from here on only child processes run the stamper
      });
      afterAll(async () => {
        await h?.close();
      });

      const phases: StampPhase[] = ['claimed', 'reserved', 'persisted', 'broadcast'];
      const all: { hash: string; stampid: string }[] = [];

      for (const phase of phases) {
        it(`killed after '${phase}': retried requests get their stamps, each in exactly one transaction`, async () => {
          const requests = Array.from({ length: 5 }, (_, i) => ({ hash: randomHash(), idem: `${phase}-${i}` }));
          const crashing = await spawnStamper(h, phase);
          const first = await Promise.all(requests.map((r) => post(crashing.port, h.key, r.hash, r.idem)));
          expect(await crashing.exited).toBe(-9);
          // A stamp is answered only once its transaction was sent to the node: killed before any
          // broadcast, every request loses its connection. Killed right after the broadcast, a
          // request polling the rows may have had its answer in between (checked below: the retry
          // gives the same id).
          if (phase !== 'broadcast') expect(first).toEqual(requests.map(() => 'connection lost'));
          const answeredFirst = first.map((a) => (a === 'connection lost' ? null : ((a.body as { stampid?: string }).stampid ?? null)));

          const before = await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamp_txs`.execute(h.t.db);
          // Stamps stored in a signed transaction before the kill. Under load the five requests can
          // reach two batches; the kill comes after the first one, and the others are still queued.
          const placedBefore = await sql<{ idem: string; txid: Buffer; vout: number }>`
          SELECT idempotency_key AS idem, txid, vout FROM stamps WHERE idempotency_key LIKE ${phase + '-%'} AND status = 'placed'`.execute(
            h.t.db,
          );
          const restarted = await spawnStamper(h);
          try {
            const again = await Promise.all(requests.map((r) => post(restarted.port, h.key, r.hash, r.idem)));
            for (const a of again) {
              expect(a).not.toBe('connection lost');
              if (a === 'connection lost') continue;
              expect(a.status, JSON.stringify(a.body)).toBe(200);
            }
            const ids = again.map((a) => (a === 'connection lost' ? '' : String(a.body.stampid)));
            answeredFirst.forEach((id, i) => id !== null && expect(ids[i]).toBe(id));
            requests.forEach((r, i) => all.push({ hash: r.hash, stampid: ids[i]! }));
            // A retry of a stored stamp gets the stamp stored before the kill and makes no new
            // transaction; only stamps still queued at the kill may go into new ones.
            for (const p of placedBefore.rows) {
              const i = requests.findIndex((r) => r.idem === p.idem);
              expect(ids[i], p.idem).toBe(`${hashToHex(p.txid)}-${p.vout}`);
            }
            const after = await sql<{ n: string }>`SELECT count(*)::text AS n FROM stamp_txs`.execute(h.t.db);
            const newTxids = new Set(ids.map((id) => id.split('-')[0]!));
            for (const p of placedBefore.rows) newTxids.delete(hashToHex(p.txid));
            const queuedAtKill = requests.length - placedBefore.rows.length;
            if (phase === 'persisted' || phase === 'broadcast') {
              expect(placedBefore.rows.length).toBeGreaterThan(0);
              if (queuedAtKill === 0) expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
              expect(Number(after.rows[0]!.n) - Number(before.rows[0]!.n)).toBe(newTxids.size);
              expect(newTxids.size).toBeLessThanOrEqual(queuedAtKill);
            }
            // The stored bytes are what the node has (after the restart's rebroadcast).
            const txids = [...new Set(ids.map((id) => id.split('-')[0]!))];
            await waitFor('stamp transactions in the mempool', async () => {
              const pool = await h.mempool();
              return txids.every((t) => pool.includes(t));
            });
            for (const txid of txids) {
              const stored = await sql<{ raw: Buffer }>`SELECT raw FROM stamp_txs WHERE txid = decode(${txid}, 'hex')`.execute(h.t.db);
              expect(stored.rows).toHaveLength(0); // stored in internal byte order, not display order
              const rows = await sql<{ raw: Buffer }>`SELECT raw FROM stamp_txs WHERE txid = ${Buffer.from(txid, 'hex').reverse()}`.execute(
                h.t.db,
              );
              expect(Buffer.from(await h.rpc.getRawTransaction(txid)).equals(rows.rows[0]!.raw)).toBe(true);
            }
            const stamps = await sql<{
              n: string;
            }>`SELECT count(*)::text AS n FROM stamps WHERE idempotency_key LIKE ${phase + '-%'}`.execute(h.t.db);
            expect(stamps.rows[0]!.n).toBe('5');
          } finally {
            await restarted.kill();
          }
        });
      }

      it('after mining: every hash in exactly one confirmed output, no coin spent by two transactions', async () => {
        await h.mine(1);
        const live = await sql<{ raw: Buffer; status: string }>`SELECT raw, status FROM stamp_txs WHERE status <> 'abandoned'`.execute(
          h.t.db,
        );
        const confirmedPayloads = new Map<string, number>();
        const spent = new Set<string>();
        for (const row of live.rows) {
          const tx = decodeTx(row.raw);
          const inBlock = await sql<{ n: string }>`SELECT count(*)::text AS n FROM ${txRowsByTxid(Buffer.from(tx.txid))} t`.execute(h.t.db);
          if (inBlock.rows[0]!.n !== '1') continue;
          for (const i of tx.inputs) {
            const k = `${hashToHex(i.prevTxid)}:${i.vout}`;
            expect(spent.has(k)).toBe(false);
            spent.add(k);
          }
          for (const o of tx.outputs) {
            const p = nullData(o.script);
            if (p) confirmedPayloads.set(Buffer.from(p).toString('hex'), (confirmedPayloads.get(Buffer.from(p).toString('hex')) ?? 0) + 1);
          }
        }
        expect(all).toHaveLength(20);
        for (const s of all) {
          expect(confirmedPayloads.get(s.hash)).toBe(1);
          const [txid, vout] = s.stampid.split('-');
          const tx = decodeTx(Buffer.from(await h.rpc.getRawTransaction(txid!)));
          expect(Buffer.from(nullData(tx.outputs[Number(vout)]!.script)!).toString('hex')).toBe(s.hash);
        }
        // Nothing else was paid for: every confirmed payload is one of ours.
        expect(confirmedPayloads.size).toBe(all.length);
      });
    },
  );
}
