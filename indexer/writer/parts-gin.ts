/**
 * The parts' spends GIN through a bulk sync (`tx_parts_spent_groups`, src/db/chain-indexes.ts).
 * Built from scratch by the finish it was the finish's longest step (on one core, beside the
 * others). Instead it is kept while the batches load: their rows' keys go into its pending list
 * (a plain append, whatever the list's size up to PENDING_LIMIT_KB, so the batch's COPY never
 * stops to merge it), and after each batch commits a connection of its own moves the list into
 * the index's tree (`gin_clean_pending_list`: one sorted pass, as a build does) while the
 * importer derives the next batch. The load leaves part of a core idle, which these merges
 * use; the finish only merges the last batch's list and restores the definition's storage
 * parameters. An index that does not exist (dropped by an older version's begin, or by a crash
 * in its finish) is built by the finish as before.
 * @module
 */
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import { chainIndex, createIndexSql } from '../../src/db/chain-indexes.js';

const GIN = chainIndex('tx_parts_spent_groups');
if (GIN.with !== undefined) throw new Error(`${GIN.name}: RESET would not restore its storage parameters (${GIN.with})`);

/** The largest pending list PostgreSQL allows (kB): the inserting COPY never merges it itself. */
export const PENDING_LIMIT_KB = 2_097_151;
/** The statements that make the GIN take a bulk load's rows into its pending list. */
const PARTS_GIN_LOADING = `ALTER INDEX ${GIN.name} SET (fastupdate = on, gin_pending_list_limit = ${PENDING_LIMIT_KB})`;
/** Moves the pending list into the index's tree (a sort in maintenance_work_mem: a batch's keys take ~100 MB). */
export const PARTS_GIN_MERGE = `SELECT gin_clean_pending_list('${GIN.name}'::regclass)`;
/** The definition's storage parameters again (the migrations' index: chain-indexes.test.ts). */
export const PARTS_GIN_LOADED = `ALTER INDEX ${GIN.name} RESET (fastupdate, gin_pending_list_limit)`;

/** Whether the GIN exists. */
export async function partsGinExists(client: pg.ClientBase): Promise<boolean> {
  const r = await client.query<{ ok: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS ok`, [GIN.name]);
  return r.rows[0]?.ok === true;
}

/** At the begin of a bulk sync with parts on: the GIN built if missing, then set to load. */
export async function keepPartsGin(client: pg.ClientBase): Promise<void> {
  if (!(await partsGinExists(client))) await client.query(createIndexSql(GIN));
  await client.query(PARTS_GIN_LOADING);
}

/**
 * Merges the GIN's pending list after each committed batch, on a connection of its own (`connect`
 * gives it with the memory its sort needs: maintenance_work_mem), one merge at a time: a batch
 * committed during a merge is merged once that one ends. A failed merge is logged and ends the
 * merging (the finish merges what is left).
 */
export class PartsGinMerger {
  private client: pg.Client | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  /** Set by a failed merge or by close: no merge starts after. */
  private stopped = false;
  /** Merges done, and their total time (ms). */
  merges = 0;
  ms = 0;

  constructor(
    private readonly connect: () => Promise<pg.Client>,
    private readonly log: Logger,
  ) {}

  /** A batch has committed: merge its keys (now, or after the merge under way). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => (this.running = null));
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      const t0 = performance.now();
      try {
        this.client ??= await this.connect();
        await this.client.query(PARTS_GIN_MERGE);
      } catch (err) {
        this.stopped = true;
        this.log.warn({ err }, 'bulk sync: merging the spends index pending list failed; the finish merges it');
        return;
      }
      this.merges++;
      this.ms += performance.now() - t0;
    } while (this.again);
  }

  /** Waits for the merge under way (none is started after) and closes the connection. */
  async close(): Promise<void> {
    this.stopped = true;
    await this.running;
    await this.client?.end().catch(() => {});
    this.client = null;
  }
}
