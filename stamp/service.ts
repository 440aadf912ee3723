/**
 * The StampService the API's stamp routes call (api/deps.ts): `create` refuses at once when
 * the wallet cannot pay, persists the request (Idempotency-Key: the same stamp again), wakes the
 * batcher and answers once the signed transaction carrying the stamp is stored and has been sent
 * to the node (by this process's batcher, or by whichever process stored it: its batcher or the
 * tracker's rebroadcast after a crash); `get` answers a
 * stamp id of this key — any id the stamp ever had — from the index: the transaction it is in
 * now (the confirmed version, else the current one), its confirmations and time.
 * @module
 */
import { sql } from 'kysely';
import { hashToHex, hexToHash } from '../src/bitcoin/hash.js';
import { ServiceError } from '../src/errors.js';
import type { StampRecord, StampService, StampStatus } from '../src/stamp-service.js';
import { isoFromUnix, isoTime } from '../src/time.js';
import type { Batcher } from './batcher.js';
import { wasSent } from './ledger.js';
import { findStamp, findStampByOutput, insertStampRequest, type StampRow } from './requests.js';
import type { StampDb } from './tables.js';
import { txRowsByTxids } from '../src/db/tx-reads.js';
import { sqlTxNumHeight } from '../src/db/tx-num.js';

export type StampServiceDeps = {
  db: StampDb;
  batcher: Batcher;
  /** Resolves to a message when the wallet cannot pay for a stamp, else null. */
  cannotPay: () => Promise<string | null>;
  answerTimeoutMs: number;
};

const HASH_RE = /^[0-9a-f]{64}$/;
/** How often a waiting request looks at its row (placed by another process?); this process's own batcher answers at once. */
const POLL_MS = 1000;
const ID_RE = /^([0-9a-f]{64})-(0|[1-9]\d{0,5})$/;

/** `<txid display hex>-<vout>`. */
function formatStampId(txid: Buffer, vout: number): string {
  return `${hashToHex(txid)}-${vout}`;
}

export function createStampService(deps: StampServiceDeps): StampService {
  const { db } = deps;

  /** The answer for a stamp stored in a transaction already sent to the node, else null. */
  async function sentPlacement(row: StampRow): Promise<{ stampid: string } | null> {
    if (row.status !== 'placed' || !row.txid || row.vout === null) return null;
    return (await wasSent(db, row.txid)) ? { stampid: formatStampId(row.txid, row.vout) } : null;
  }

  async function waitPlaced(row: StampRow): Promise<{ stampid: string }> {
    const deadline = Date.now() + deps.answerTimeoutMs;
    const waiter = deps.batcher.placement(row.id);
    try {
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) throw new ServiceError('ERR_STAMP_PENDING');
        const p = await Promise.race([waiter.promise, new Promise<null>((r) => setTimeout(() => r(null), Math.min(left, POLL_MS)))]);
        if (p?.kind === 'placed') return { stampid: formatStampId(p.txid, p.vout) };
        if (p?.kind === 'unpayable') throw new ServiceError('ERR_STAMP_WALLET_EMPTY', { errorCause: p.reason });
        // Placed or dropped by another process (after a restart, or a retried request)? A
        // placed stamp is stored before its transaction is broadcast: answer once it was sent.
        const now = await findStamp(db, row.id);
        if (!now) throw new ServiceError('ERR_STAMP_WALLET_EMPTY');
        const answer = await sentPlacement(now);
        if (answer) return answer;
      }
    } finally {
      waiter.cancel();
    }
  }

  return {
    async create(keyId, hash, idempotencyKey) {
      if (!HASH_RE.test(hash)) throw new TypeError('hash must be 64 lower-case hex characters');
      const reason = await deps.cannotPay();
      if (reason !== null) throw new ServiceError('ERR_STAMP_WALLET_EMPTY', { errorCause: reason });
      const hashBytes = Buffer.from(hash, 'hex');
      const { row, created } = await insertStampRequest(db, { keyId, hash: hashBytes, idempotencyKey });
      if (!created && !row.hash.equals(hashBytes)) throw new ServiceError('ERR_IDEMPOTENCY_CONFLICT');
      const placed = await sentPlacement(row);
      if (placed) return placed;
      deps.batcher.wake();
      return waitPlaced(row);
    },

    async get(keyId, id): Promise<StampRecord> {
      const m = ID_RE.exec(id);
      if (!m) throw new ServiceError('ERR_INVALID_STAMP_ID');
      const txid = Buffer.from(hexToHash(m[1]!));
      const loc = await findStampByOutput(db, keyId, txid, Number(m[2]));
      if (!loc) throw new ServiceError('ERR_STAMP_NOT_FOUND');
      const txids = [...new Set(loc.outputs.map((o) => o.txid.toString('hex')))].map((h) => Buffer.from(h, 'hex'));
      // (the tip in the same statement: one row even when no version is in a block)
      type Row = { txid: Buffer | null; height: number | null; time: number | null; tip: number | null; tip_hash: Buffer | null };
      const r = await sql<Row>`
        SELECT c.txid, c.height, c.time, t.height AS tip, t.hash AS tip_hash
        FROM (SELECT 1) one LEFT JOIN chain_tip t ON t.id = 1
        LEFT JOIN LATERAL (SELECT x.txid, b.height, b.time
          FROM ${txRowsByTxids(txids)} x JOIN blocks b ON b.height = ${sqlTxNumHeight(sql.ref('x.tx_num'))} LIMIT 1) c ON true`.execute(db);
      const row = r.rows[0]!;
      const tip = { height: row.tip ?? -1, hash: row.tip_hash };
      const confirmed = row.txid === null ? undefined : { txid: row.txid, height: row.height!, time: row.time! };
      const s = loc.stamp;
      let status: StampStatus & { txid: Buffer };
      if (confirmed) {
        const out = loc.outputs.find((o) => o.txid.equals(confirmed.txid))!;
        status = {
          txid: out.txid,
          tx: hashToHex(out.txid),
          vout: out.vout,
          confirmations: tip.height - confirmed.height + 1,
          timestamp: isoFromUnix(confirmed.time),
        };
      } else {
        const cur = s.status === 'placed' && s.txid && s.vout !== null ? { txid: s.txid, vout: s.vout } : { txid, vout: Number(m[2]) };
        status = { txid: cur.txid, tx: hashToHex(cur.txid), vout: cur.vout, confirmations: 0, timestamp: isoTime(s.created_at) };
      }
      // (every transaction a stamp id names was stored, signed, before it was answered)
      const stored = await db.selectFrom('stamp_txs').select('raw').where('txid', '=', status.txid).executeTakeFirstOrThrow();
      const { txid: _txid, ...answer } = status;
      return { ...answer, hash: s.hash.toString('hex'), raw: stored.raw, tip };
    },
  };
}
