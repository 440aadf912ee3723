/**
 * Summarizes V8 CPU profiles (`node --cpu-prof`, as bench/sync --cpu-prof DIR writes them for
 * the importer): self time by function and by source file, and the share of idle time (the
 * process waiting on PostgreSQL or the disk).
 * Run: `node --import tsx bench/profile.ts FILE.cpuprofile|DIR [--top N]`.
 * @module
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { benchArgs } from './args.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  gcMs: number;
  functions: { name: string; ms: number; share: number }[];
  files: { file: string; ms: number; share: number }[];
}

/** Self time per function and per file of one profile. */
export function summarizeProfile(p: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let gc = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const f = n.callFrame;
    total += us;
    if (f.functionName === '(idle)') idle += us;
    if (f.functionName === '(garbage collector)') gc += us;
    const where = f.url ? `${basename(f.url.replace(/^file:\/\//, ''))}:${f.lineNumber + 1}` : '';
    const name = `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const key = f.url ? f.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules\/[^/]+|src|indexer|bench)\//, '$1/') : f.functionName;
    file.set(key, (file.get(key) ?? 0) + us);
  }
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((us / total) * 1000) / 10 }));
  return {
    totalMs: Math.round(total / 1000),
    idleMs: Math.round(idle / 1000),
    gcMs: Math.round(gc / 1000),
    functions: list(fn),
    files: list(file).map((x) => ({ file: x.name, ms: x.ms, share: x.share })),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = benchArgs(import.meta.url, {
    options: { top: { type: 'string', default: '25' } },
    allowPositionals: true,
  });
  const target = positionals[0];
  if (!target) {
    process.stderr.write('usage: profile.ts FILE.cpuprofile|DIR [--top N]\n');
    process.exit(2);
  }
  const files = statSync(target).isDirectory()
    ? readdirSync(target)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(target, f))
    : [target];
  for (const f of files) {
    const s = summarizeProfile(JSON.parse(readFileSync(f, 'utf8')) as CpuProfile, Number(values.top));
    process.stdout.write(
      `\n${f}: ${s.totalMs} ms sampled, idle ${s.idleMs} ms (${Math.round((s.idleMs / s.totalMs) * 100)} %), GC ${s.gcMs} ms\n\n| self ms | % | function |\n|---|---|---|\n`,
    );
    for (const x of s.functions) process.stdout.write(`| ${x.ms} | ${x.share} | ${x.name} |\n`);
    process.stdout.write('\n| self ms | % | file |\n|---|---|---|\n');
    for (const x of s.files) process.stdout.write(`| ${x.ms} | ${x.share} | ${x.file} |\n`);
  }
}
