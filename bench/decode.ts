/**
 * Decode throughput on the large mainnet fixture blocks, one core: Blockwire's decoder (block
 * walk + txid of every transaction) against the floor of hashing the same txids alone
 * (node:crypto double SHA-256 over each transaction's non-witness bytes, prepared beforehand),
 * and against @scure/btc-signer. Prints a markdown table.
 *
 *   node --import tsx bench/decode.ts [--rounds N] [--scure-rounds N]
 *
 * Each variant runs interleaved with the others, round after round; the table shows the
 * median round (and the ratio of medians), so a burst of load on the shared machine moves
 * every column alike. Times are this process's CPU time (process.cpuUsage), not wall time:
 * on a machine shared with other work, time spent descheduled would otherwise count; the
 * wall/CPU ratio printed above the table says how contended the run was.
 */
import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './args.js';
import { RawTx, Transaction } from '@scure/btc-signer';
import { outputAddresses } from '../src/bitcoin/address.js';
import { decodeBlock } from '../src/bitcoin/block.js';
import { encodeTx } from '../src/bitcoin/encode.js';
import { fixturesRoot } from '../test/support/fixtures.js';

const HEIGHTS = [413567, 540107, 574200, 702861, 866342];

const { values } = benchArgs(import.meta.url, {
  options: { rounds: { type: 'string', default: '41' }, 'scure-rounds': { type: 'string', default: '3' } },
});
const rounds = Number(values.rounds);
const scureRounds = Number(values['scure-rounds']);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

let wallTotal = 0;
let cpuTotal = 0;

/** CPU milliseconds (user + system) spent in `fn`; also accumulates wall time for the report. */
function time(fn: () => void): number {
  const w0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1000;
  wallTotal += Number(process.hrtime.bigint() - w0) / 1e6;
  cpuTotal += cpu;
  return cpu;
}

let sink = 0;

interface Row {
  height: number;
  bytes: number;
  txs: number;
  ms: Record<string, number>;
}

const rows: Row[] = [];
for (const height of HEIGHTS) {
  const bytes = new Uint8Array(readFileSync(join(fixturesRoot, 'mainnet', 'blocks', `mainnet_h${height}.raw`)));
  const txBytes = decodeBlock(bytes).txs.map((t) => t.bytes.slice());
  // Non-witness serializations, back to back in one buffer (views into it, as the decoder's are).
  const parts = decodeBlock(bytes).txs.map((t) => encodeTx(t, { witness: false }));
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  const stripped = parts.map((p) => {
    joined.set(p, at);
    at += p.length;
    return joined.subarray(at - p.length, at);
  });
  const variants: Record<string, () => void> = {
    // The floor: txid hashing alone, over non-witness bytes already laid out contiguously.
    floor: () => {
      for (const s of stripped) sink ^= hash('sha256', hash('sha256', s, 'buffer'), 'buffer')[0]!;
    },
    // Blockwire: walk and validate the block, txid of every transaction.
    decode: () => {
      for (const tx of decodeBlock(bytes).txs) sink ^= tx.txid[0]!;
    },
    // Blockwire with every field built: inputs, outputs, witness stacks, txid and wtxid.
    all: () => {
      for (const tx of decodeBlock(bytes).txs) {
        sink ^= tx.txid[0]! ^ tx.wtxid[0]!;
        for (const i of tx.inputs) sink ^= i.vout ^ i.witness.length ^ i.prevTxid[0]!;
        for (const o of tx.outputs) sink ^= o.script.length ^ Number(o.value & 1n);
      }
    },
    // What the indexer does per block: txids, inputs, outputs and each output's addresses.
    index: () => {
      for (const tx of decodeBlock(bytes).txs) {
        sink ^= tx.txid[0]!;
        for (const i of tx.inputs) sink ^= i.vout ^ i.prevTxid[0]!;
        for (const o of tx.outputs) sink ^= outputAddresses(o.script, 'main').length ^ Number(o.value & 1n);
      }
    },
    // @scure/btc-signer's raw decoder, no txid.
    scureRaw: () => {
      for (const t of txBytes) sink ^= RawTx.decode(t).inputs.length;
    },
  };
  const samples: Record<string, number[]> = Object.fromEntries([...Object.keys(variants), 'scureTxid'].map((k) => [k, []]));
  for (let r = 0; r < rounds + 3; r++) {
    for (const [name, fn] of Object.entries(variants)) {
      const ms = time(fn);
      if (r >= 3) samples[name]!.push(ms); // the first rounds warm up the JIT
    }
  }
  // @scure/btc-signer with txids (Transaction.fromRaw + id): slow, so fewer rounds.
  for (let r = 0; r < scureRounds; r++) {
    samples.scureTxid!.push(
      time(() => {
        for (const t of txBytes)
          sink ^= Transaction.fromRaw(t, { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: true }).id.length;
      }),
    );
  }
  rows.push({
    height,
    bytes: bytes.length,
    txs: txBytes.length,
    ms: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])),
  });
}

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const mbps = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000);
const txps = (txs: number, ms: number) => txs / (ms / 1000);

console.log(
  `decode benchmark — node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, wall/CPU ${(wallTotal / cpuTotal).toFixed(2)}, median CPU ms of ${rounds} rounds (scure with txids: ${scureRounds})\n`,
);
console.log(
  '| block | txs | MB | floor ms | decode ms | decode / floor | decode tx/s | decode MB/s | all fields ms | + addresses ms | scure RawTx ms | scure txid ms | scure txid tx/s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
const total = { bytes: 0, txs: 0, ms: {} as Record<string, number> };
for (const r of rows) {
  total.bytes += r.bytes;
  total.txs += r.txs;
  for (const [k, v] of Object.entries(r.ms)) total.ms[k] = (total.ms[k] ?? 0) + v;
}
for (const r of [...rows, { height: 'all 5', bytes: total.bytes, txs: total.txs, ms: total.ms }]) {
  const m = r.ms;
  console.log(
    `| ${r.height} | ${fmt(r.txs)} | ${fmt(r.bytes / 1e6, 2)} | ${fmt(m.floor!, 2)} | ${fmt(m.decode!, 2)} | **${fmt(m.floor! / m.decode!, 2)}** | ${fmt(txps(r.txs, m.decode!))} | ${fmt(mbps(r.bytes, m.decode!), 1)} | ${fmt(m.all!, 2)} | ${fmt(m.index!, 2)} | ${fmt(m.scureRaw!, 1)} | ${fmt(m.scureTxid!, 1)} | ${fmt(txps(r.txs, m.scureTxid!))} |`,
  );
}
console.log(`\n(sink ${sink & 1})`);
