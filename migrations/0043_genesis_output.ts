/**
 * The genesis block's coinbase pays nobody (indexer/writer/derive-tx.ts): Core never adds its output to
 * the UTXO set, so it can never be spent. An index written before that rule holds the output as
 * unspent under its P2PK key's P2PKH address — in `utxos`, in that address's `balances` row and
 * `history`, and in the summary of any wallet deriving that address. This removes exactly those
 * rows: the genesis coinbase is `tx_num` 0 (height 0, position 0), its unspent rows are found by
 * their txid (the primary key, no scan of `utxos`), and the keys they carried lead to the
 * balances, history chunks (the entry 0 is a chunk's first: the chunk is deleted when it held
 * nothing else, else its next entry becomes the first) and wallets to correct. An index without
 * those rows (empty, or written by the rule) is left as it is.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TEMP TABLE genesis_gone (addr_key uuid, value int8, n int4) ON COMMIT DROP;
    WITH gone AS (
        DELETE FROM utxos u WHERE u.txid = (SELECT t.txid FROM txs t WHERE t.tx_num = 0) AND u.tx_num = 0
        RETURNING u.addr_key, u.value)
    INSERT INTO genesis_gone SELECT addr_key, sum(value)::int8 AS value, count(*)::int4 AS n FROM gone WHERE addr_key IS NOT NULL GROUP BY addr_key;
    UPDATE balances b SET balance = b.balance - g.value, utxo_count = b.utxo_count - g.n FROM genesis_gone g WHERE b.addr_key = g.addr_key;
    DELETE FROM balances b USING genesis_gone g WHERE b.addr_key = g.addr_key AND b.balance = 0 AND b.utxo_count = 0;
    DELETE FROM history h USING genesis_gone g WHERE h.addr_key = g.addr_key AND h.first_tx_num = 0 AND length(h.rest) = 0;
    UPDATE history h SET first_tx_num = ('x' || encode(substring(h.rest FROM 1 FOR 8), 'hex'))::bit(64)::int8, rest = substring(h.rest FROM 9)
      FROM genesis_gone g WHERE h.addr_key = g.addr_key AND h.first_tx_num = 0;
    UPDATE wallets w SET confirmed = w.confirmed - s.value
      FROM (SELECT wk.wallet_id, sum(g.value)::int8 AS value
              FROM genesis_gone g CROSS JOIN LATERAL (SELECT DISTINCT wa.wallet_id FROM wallet_addresses wa WHERE wa.addr_key = g.addr_key) wk
             GROUP BY wk.wallet_id) s
     WHERE w.id = s.wallet_id AND w.deleted_at IS NULL;
    DROP TABLE genesis_gone;
  `.execute(db);
}

/** Nothing to restore: the rows removed described an output that can never be spent. */
export async function down(): Promise<void> {}
