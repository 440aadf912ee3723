/**
 * The quick start's banner, read as a user reads it: the URLs, the API key and the curl lines it
 * prints, and the curl lines run as printed.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from '../../support/wait.js';
import type { BlockwireProcess } from './processes.js';

const execFileP = promisify(execFile);

export type Banner = { apiBase: string; streamUrl: string; key: string; consoleUrl: string; curls: string[] };

/** Waits for the "Try:" banner on stdout and reads the URLs, the key and the curl lines from it. */
export async function banner(proc: BlockwireProcess, timeoutMs: number): Promise<Banner> {
  await waitFor(
    'the quick-start banner',
    () => /\nTry:\n(?:  curl .*\n)+/.test(proc.output()) || proc.child.exitCode !== null,
    timeoutMs,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; output:\n${proc.output().slice(-4000)}`);
  });
  const out = proc.output();
  const api = /REST API {3}(http:\/\/\S+)\/v1\//.exec(out);
  const stream = /stream {5}(ws:\/\/\S+)/.exec(out);
  const key = /API key {4}(\S+)/.exec(out);
  const consoleAt = /console {4}(http:\/\/\S+)/.exec(out);
  const curls = [...out.matchAll(/^ {2}(curl .*)$/gm)].map((m) => m[1]!);
  if (!api || !stream || !key || !consoleAt) throw new Error(`banner incomplete:\n${out.slice(-3000)}`);
  return { apiBase: api[1]!, streamUrl: stream[1]!, key: key[1]!, consoleUrl: consoleAt[1]!, curls };
}

/** Runs a printed curl line as a shell would (it is what the user copies). */
export async function runCurl(line: string): Promise<unknown> {
  const { stdout } = await execFileP('sh', ['-c', `${line} --silent --show-error --fail`], { timeout: 30_000 });
  return JSON.parse(stdout) as unknown;
}

export async function getJson(url: string, key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { headers: { apiKey: key } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
