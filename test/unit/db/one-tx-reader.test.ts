/**
 * One reader of the confirmed transactions: outside the writer (indexer/writer/), every statement
 * reads them through src/db/tx-reads.ts, so that their layout can change there alone
 * (docs/lean-layout.md "Transaction parts: the plan"). The sources of every server role and the
 * kernel are scanned for SQL naming `txs` as a table (FROM, JOIN, a comma join, the Kysely
 * builders; SQL keywords in capitals, as everywhere here, so that prose is not taken for a
 * statement), and for `tx_parts` and `txid_buckets`, where the folded ones are; none may outside those
 * two places. The same scanner must find them in
 * src/db/tx-reads.ts, so a pattern that matches nothing fails here too. Migrations, tests and
 * bench are not scanned.
 */
import { describe, expect, it } from 'vitest';
import { sourceFiles, sourceText } from '../../support/source-files.js';

const SCANNED = ['src', 'indexer', 'api', 'streams', 'stamp', 'electrum', 'cli', 'devnode'];
const ALLOWED = ['indexer/writer/', 'src/db/tx-reads.ts'];

/** The tables holding confirmed transactions: rows, parts, and the parts' txid buckets. */
const TABLES = String.raw`(?:txs|tx_parts|txid_buckets)\b(?!_)`;
const READS: readonly RegExp[] = [
  new RegExp(String.raw`\b(?:FROM|JOIN)\s+(?:ONLY\s+)?(?:public\.)?${TABLES}`, 'g'),
  new RegExp(String.raw`\bFROM\s+[a-z_]+(?:\s+[a-z_]+)?\s*,\s*${TABLES}`, 'g'),
  new RegExp(String.raw`\.(?:selectFrom|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*['"\x60]${TABLES}`, 'g'),
];

/** Each read of `txs` in a source: the file and the matched text. */
function readsIn(file: string): { file: string; text: string }[] {
  const text = sourceText(file);
  return READS.flatMap((re) => [...text.matchAll(re)].map((m) => ({ file, text: m[0] })));
}

describe('one reader of the confirmed transactions', () => {
  const files = sourceFiles(SCANNED);
  const reads = files.flatMap(readsIn);

  it('reads txs, tx_parts and txid_buckets only in src/db/tx-reads.ts and the writer', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(reads.filter((r) => !ALLOWED.some((a) => r.file.startsWith(a)))).toEqual([]);
  });

  it('finds the reads of src/db/tx-reads.ts and of the writer (the scan sees what it looks for)', () => {
    const inReads = reads.filter((r) => r.file === 'src/db/tx-reads.ts');
    expect(inReads.length).toBeGreaterThanOrEqual(6);
    expect(inReads.some((r) => r.text.includes('tx_parts'))).toBe(true);
    expect(inReads.some((r) => r.text.includes('txid_buckets'))).toBe(true);
    expect(reads.some((r) => r.file.startsWith('indexer/writer/'))).toBe(true);
  });

  it('matches the forms it looks for, and not the tables whose names start with txs', () => {
    const hits = (s: string) => READS.some((re) => new RegExp(re.source, re.flags).test(s));
    expect(hits('SELECT 1 FROM txs t WHERE')).toBe(true);
    expect(hits('x LEFT JOIN txs t ON t.tx_num = p.n')).toBe(true);
    expect(hits('FROM blocks b, txs t')).toBe(true);
    expect(hits(".selectFrom('txs')")).toBe(true);
    expect(hits('FROM tx_parts bw_tp')).toBe(true);
    expect(hits('JOIN txid_buckets bw_tb ON')).toBe(true);
    expect(hits('FROM txid_bucket_params p')).toBe(false);
    expect(hits('FROM txs_parts p')).toBe(false);
    expect(hits('FROM mempool_txs m')).toBe(false);
    expect(hits('FROM watched_txs w')).toBe(false);
    expect(hits('// the prevouts, from txs.spent_group')).toBe(false);
  });
});
