/**
 * What every connection of this process is subscribed to, and the notifications that follow
 * from the index: the tip (a `blockchain.headers.subscribe` notification per new tip) and each
 * subscribed script hash's status (a `blockchain.scripthash.subscribe` notification when it
 * changes). Changes are found from the outbox's events, read in order after a cursor
 * (`block.connected`: the keys with a history chunk starting in the new blocks;
 * `block.disconnected`: every subscribed key, a reorg may change any status; `mempool.added` /
 * `mempool.removed`: the keys the transaction touches — payments, spends, replacements, drops),
 * and after each block from a fingerprint of each subscribed key's mempool part (a child whose
 * parent confirmed, a mempool transaction a block conflicted), compared again every
 * `mempoolPollMs` only as a safety net. Statuses are computed in batches,
 * one batch at a time, so a status computed later always comes from a later snapshot and a
 * notification is never overtaken by an older status.
 * @module
 */
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/log.js';
import {
  keysAmong,
  keysTouchedByBlocks,
  readMempoolMarks,
  readScriptHistories,
  type ScriptHistory,
  type ScriptRef,
} from '../src/db/queries/script-hash.js';
import { readBlockHashes, readChainEvents, readNewestSeq, readTipHeader } from '../src/db/queries/electrum-chain.js';
import { HeaderProofs } from './header-proof.js';
import { historyItems, statusHash } from './status.js';

/** Whoever receives notifications (a connection). */
export interface Subscriber {
  notify(method: string, params: unknown[]): void;
}

type Sub = {
  ref: ScriptRef;
  hex: string;
  /** The status the subscribers were last told (undefined until first computed). */
  status: string | null | undefined;
  sessions: Set<Subscriber>;
  /** The first computation, while under way. */
  first: Promise<void> | undefined;
};

export type Tip = { height: number; hash: Buffer; header: Buffer };

export type TrackerSettings = {
  /** Interval of the outbox poll (chain events). */
  pollMs: number;
  /** Interval of the safety-net comparison of every subscribed key's mempool fingerprint (mempool changes come from the outbox's events). */
  mempoolPollMs: number;
  /** History entries above which a script is refused (`too_long`). */
  maxHistory: number;
  /** Scripts per status batch. */
  batchSize: number;
  /** Longest a reorg's notifications are held while the index is below the node's tip (default 10 s). */
  reorgHoldMs?: number;
};

export type TrackerStats = {
  scripthashes: number;
  keys: number;
  notifications: number;
  statusComputed: number;
  /** Comparisons of every subscribed key's mempool fingerprint (after blocks, and the safety net). */
  fingerprintScans: number;
};

type Job = { ref: ScriptRef; resolve: (h: ScriptHistory) => void; reject: (err: unknown) => void };

export class Tracker {
  private readonly subs = new Map<string, Sub>();
  private readonly byKey = new Map<string, Set<Sub>>();
  private readonly headerSubs = new Set<Subscriber>();
  private readonly marks = new Map<string, string>();
  private tipNow: Tip | undefined;
  private cursor = 0n;
  private lastMempoolPoll = 0;
  private queue: Job[] = [];
  private flushing = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private ticking: Promise<void> = Promise.resolve();
  /** Since when a reorg's notifications are held (undefined: none is): its blocks undone, the new branch not all applied yet. */
  private reorgSince: number | undefined;
  /** The node's block count read now, to tell a reorg in progress from one applied (set by main.ts; unset: never held). */
  nodeHeight: (() => Promise<number | undefined>) | undefined;
  private readonly log: Logger;
  readonly proofs: HeaderProofs;
  readonly stats: TrackerStats = { scripthashes: 0, keys: 0, notifications: 0, statusComputed: 0, fingerprintScans: 0 };

  constructor(
    private readonly db: Kysely<Database>,
    log: Logger,
    private readonly settings: TrackerSettings,
  ) {
    this.log = log.child({ component: 'electrum.tracker' });
    this.proofs = new HeaderProofs((from, to) => readBlockHashes(db, from, to));
  }

  /** Reads the tip and the newest event, then follows the outbox. */
  async start(): Promise<void> {
    this.cursor = await readNewestSeq(this.db);
    this.tipNow = await readTipHeader(this.db);
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
  }

  /** The indexed tip (undefined while nothing is indexed). */
  tip(): Tip | undefined {
    return this.tipNow;
  }

  /** The history of one script, read in the next batch. */
  history(ref: ScriptRef): Promise<ScriptHistory> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ref, resolve, reject });
      if (!this.flushing) setImmediate(() => void this.flush());
    });
  }

  /** Subscribes `s` to a script hash; resolves to its status as `s` is told it. */
  async subscribe(s: Subscriber, hex: string, ref: ScriptRef): Promise<string | null> {
    let sub = this.subs.get(hex);
    if (!sub) {
      sub = { ref, hex, status: undefined, sessions: new Set(), first: undefined };
      const created = sub;
      created.first = this.compute(created).finally(() => {
        created.first = undefined;
      });
      this.subs.set(hex, created);
      let set = this.byKey.get(ref.key);
      if (!set) this.byKey.set(ref.key, (set = new Set()));
      set.add(created);
    }
    if (sub.first) {
      try {
        await sub.first;
      } catch (err) {
        if (sub.sessions.size === 0) this.remove(sub);
        throw err;
      }
    }
    if (sub.status === undefined) {
      if (sub.sessions.size === 0) this.remove(sub);
      throw new TooLongError();
    }
    sub.sessions.add(s);
    return sub.status;
  }

  /** Ends `s`'s subscription to a script hash; false when it had none. */
  unsubscribe(s: Subscriber, hex: string): boolean {
    const sub = this.subs.get(hex);
    if (!sub || !sub.sessions.delete(s)) return false;
    if (sub.sessions.size === 0 && !sub.first) this.remove(sub);
    return true;
  }

  subscribeHeaders(s: Subscriber): void {
    this.headerSubs.add(s);
  }

  /** Forgets everything `s` subscribed to (its connection closed). */
  drop(s: Subscriber, hexes: Iterable<string>): void {
    this.headerSubs.delete(s);
    for (const hex of hexes) this.unsubscribe(s, hex);
  }

  private remove(sub: Sub): void {
    this.subs.delete(sub.hex);
    const set = this.byKey.get(sub.ref.key);
    set?.delete(sub);
    if (set && set.size === 0) {
      this.byKey.delete(sub.ref.key);
      this.marks.delete(sub.ref.key);
    }
  }

  /** Recomputes `sub`'s status and notifies its subscribers when it changed. */
  private async compute(sub: Sub): Promise<void> {
    const h = await this.history(sub.ref);
    this.stats.statusComputed++;
    if (h.kind !== 'ok') {
      if (sub.status !== undefined)
        this.log.warn({ scripthash: sub.hex, count: h.count }, 'subscribed history grew past the limit: status kept');
      return;
    }
    const status = statusHash(historyItems(h));
    if (status === sub.status) return;
    const known = sub.status !== undefined;
    sub.status = status;
    if (!known) return;
    for (const s of sub.sessions) {
      s.notify('blockchain.scripthash.subscribe', [sub.hex, status]);
      this.stats.notifications++;
    }
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const jobs = this.queue.splice(0, this.settings.batchSize);
        try {
          const hs = await readScriptHistories(
            this.db,
            jobs.map((j) => j.ref),
            this.settings.maxHistory,
          );
          jobs.forEach((j, i) => j.resolve(hs[i]!));
        } catch (err) {
          for (const j of jobs) j.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.log.error({ err }, 'electrum tracker turn failed'))
        .finally(() => this.schedule());
    }, this.settings.pollMs);
  }

  /** True while a reorg's new branch is not all indexed (the index below the node's tip), for at most reorgHoldMs. */
  private async reorgInProgress(): Promise<boolean> {
    if (this.reorgSince === undefined || !this.nodeHeight) return false;
    if (Date.now() - this.reorgSince > (this.settings.reorgHoldMs ?? 10_000)) return false;
    const [node, index] = await Promise.all([this.nodeHeight(), readTipHeader(this.db)]);
    return node !== undefined && (index?.height ?? -1) < node;
  }

  /**
   * One turn: the outbox's events after the cursor (blocks, and the mempool's transactions with
   * the address keys they touch), the fingerprints of every subscribed key after a block or when
   * the safety-net interval has passed, then the statuses that may have changed.
   */
  async tick(): Promise<void> {
    const dirty = new Set<string>();
    let all = false;
    let connectedFrom = Infinity;
    let connectedTo = -1;
    let blocks = 0;
    const touched = new Set<string>();
    for (;;) {
      const r = await readChainEvents(this.db, this.cursor, 1000);
      this.cursor = r.upTo;
      for (const e of r.events) {
        if (e.type === 'block.disconnected') {
          blocks++;
          all = true;
          this.proofs.forgetFrom(e.height);
        } else if (e.type === 'block.connected') {
          blocks++;
          connectedFrom = Math.min(connectedFrom, e.height);
          connectedTo = Math.max(connectedTo, e.height);
        } else if ('keys' in e) for (const k of e.keys) touched.add(k);
      }
      if (r.read < 1000) break;
    }
    // A reorg is applied block by block (each undo and each new block its own transaction): until
    // the index reaches the node's tip again, notifications would tell the intermediate lower tip
    // and statuses that change again. They are held (at most reorgHoldMs) and, once the reorg is
    // applied, every subscribed key is looked at once: one header and one status notification.
    if (all) this.reorgSince ??= Date.now();
    if (this.reorgSince !== undefined) {
      if (await this.reorgInProgress()) return;
      this.reorgSince = undefined;
      all = true;
      blocks = Math.max(blocks, 1);
    }
    if (blocks > 0) {
      const tip = await readTipHeader(this.db);
      if (tip && (!this.tipNow || !tip.hash.equals(this.tipNow.hash))) {
        this.tipNow = tip;
        const params = [{ hex: tip.header.toString('hex'), height: tip.height }];
        for (const s of this.headerSubs) s.notify('blockchain.headers.subscribe', params);
      } else if (tip) this.tipNow = tip;
    }
    const keys = [...this.byKey.keys()];
    if (keys.length === 0) return;
    // A bulk catch-up writes chunks spanning many blocks: treat a long run of blocks as a reorg.
    if (connectedTo >= 0 && connectedTo - connectedFrom > 100) all = true;
    if (!all && connectedTo >= 0) for (const k of await keysTouchedByBlocks(this.db, keys, connectedFrom, connectedTo)) dirty.add(k);
    // Mempool transactions added or removed (paid, spent, replaced, dropped): their keys, from the event.
    if (!all && touched.size > 0) for (const k of await keysAmong(this.db, keys, [...touched])) dirty.add(k);
    // After a block, a mempool transaction's height can change without an event of its own (its
    // parent confirmed), and a block's conflict removes mempool transactions of other keys: every
    // key's fingerprint is compared then. Otherwise only as a safety net, every mempoolPollMs.
    const now = Date.now();
    if (blocks > 0 || now - this.lastMempoolPoll >= this.settings.mempoolPollMs) {
      this.lastMempoolPoll = now;
      this.stats.fingerprintScans++;
      const marks = await readMempoolMarks(this.db, keys);
      for (const k of keys) {
        const mark = marks.get(k) ?? '';
        if ((this.marks.get(k) ?? '') !== mark) dirty.add(k);
        if (mark === '') this.marks.delete(k);
        else this.marks.set(k, mark);
      }
    }
    const subs: Sub[] = [];
    for (const k of all ? keys : dirty) for (const sub of this.byKey.get(k) ?? []) subs.push(sub);
    await Promise.all(
      subs.map(async (sub) => {
        if (sub.first) await sub.first.catch(() => {});
        await this.compute(sub);
      }),
    );
    this.stats.scripthashes = this.subs.size;
    this.stats.keys = this.byKey.size;
  }
}

/** A script's history is longer than the server answers. */
export class TooLongError extends Error {
  constructor() {
    super('history too large');
    this.name = 'TooLongError';
  }
}
