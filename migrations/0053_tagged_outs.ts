/**
 * `txs.outs` in the tagged form (src/db/packed.ts): each output's value and tag instead of its
 * script (docs/sync.md "Size"), the form the writer writes since this migration. Tags need
 * SHA-256 and, for P2PK keys, HASH160, which PostgreSQL lacks without an extension: the rows
 * are rewritten here, in tx_num order, range by range.
 *
 * They are copied into a new table that then takes the place of `txs`, its keys and indexes
 * built afterwards from the definitions the bulk finish uses (src/db/chain-indexes.ts), rather
 * than updated in place: an UPDATE of every row leaves the old versions as dead tuples, so the
 * table would keep its size (it only shrinks when rewritten, and VACUUM FULL cannot run in the
 * migration's transaction), and every new version would add an entry to each of its three
 * indexes. The copy gives the space back when the migration commits; meanwhile the disk holds
 * both tables (docs/operations.md "Upgrading").
 *
 * An index in the middle of a bulk sync has no key on `txs` to read it by range: it is refused,
 * to be finished by the release that began it first.
 */
import { sql, type Kysely } from 'kysely';
import { decodeOuts, encodeOutTags, isTaggedOuts } from '../src/db/packed.js';
import { CHAIN_INDEXES, createIndexSteps } from '../src/db/chain-indexes.js';

/** Rows read, rewritten and inserted at a time. */
const RANGE = 4096;

export async function up(db: Kysely<unknown>): Promise<void> {
  const bulk = await sql<{
    active: boolean | null;
  }>`SELECT (value->>'active')::boolean AS active FROM sync_state WHERE key = 'bulk'`.execute(db);
  if (bulk.rows[0]?.active === true)
    throw new Error('a bulk sync is under way: let it finish (blockwire start or import) with the release that began it, then migrate');
  const columns = await sql<{ name: string }>`
    SELECT attname AS name FROM pg_attribute WHERE attrelid = 'txs'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(
    db,
  );
  const names = columns.rows.map((c) => sql.ref(c.name));
  const picked = columns.rows.map((c) => (c.name === 'outs' ? sql.ref('n.outs') : sql.ref(`t.${c.name}`)));
  const options = await sql<{ opts: string[] | null }>`SELECT reloptions AS opts FROM pg_class WHERE oid = 'txs'::regclass`.execute(db);
  // (its triggers, 0019_chain_notify's, are made again on the new table: LIKE copies none)
  const triggers = await sql<{
    def: string;
  }>`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = 'txs'::regclass AND NOT tgisinternal ORDER BY tgname`.execute(db);
  await sql`CREATE TABLE txs_tagged (LIKE txs INCLUDING ALL EXCLUDING INDEXES)`.execute(db);
  const opts = options.rows[0]?.opts;
  if (opts && opts.length > 0) await sql.raw(`ALTER TABLE txs_tagged SET (${opts.join(', ')})`).execute(db);
  let after = -1n;
  for (;;) {
    const rows = await sql<{ n: string; outs: Buffer }>`
      SELECT tx_num::text AS n, outs FROM txs WHERE tx_num > ${after.toString()}::int8 ORDER BY tx_num LIMIT ${RANGE}`.execute(db);
    if (rows.rows.length === 0) break;
    const nums = rows.rows.map((r) => r.n);
    const outs = rows.rows.map((r) => (isTaggedOuts(r.outs) ? r.outs : encodeOutTags(decodeOuts(r.outs))));
    await sql`
      INSERT INTO txs_tagged (${sql.join(names)})
      SELECT ${sql.join(picked)} FROM unnest(${nums}::int8[], ${outs}::bytea[]) AS n(tx_num, outs) JOIN txs t ON t.tx_num = n.tx_num
       ORDER BY t.tx_num`.execute(db);
    after = BigInt(nums[nums.length - 1]!);
  }
  await sql`DROP TABLE txs; ALTER TABLE txs_tagged RENAME TO txs`.execute(db);
  for (const t of triggers.rows) await sql.raw(t.def).execute(db);
  for (const ix of CHAIN_INDEXES.filter((i) => i.table === 'txs')) for (const step of createIndexSteps(ix)) await sql.raw(step).execute(db);
  await sql`ANALYZE txs`.execute(db);
}

/** The scripts are gone from a tagged row (the node keeps them): down only goes back over an index without one. */
export async function down(db: Kysely<unknown>): Promise<void> {
  const tagged = await sql<{ n: number }>`SELECT count(*)::int4 AS n FROM txs WHERE substr(outs, 1, 2) = decode('8000', 'hex')`.execute(db);
  if ((tagged.rows[0]?.n ?? 0) > 0)
    throw new Error('txs rows in the tagged form keep no scripts to go back to: rebuild the index (blockwire import) instead');
}
