/**
 * One `blockwire start` per data directory: the quick start keeps its node, PostgreSQL, Redis and
 * the files the faucet reads (quickstart-node.json) in BLOCKWIRE_DATA_DIR, and a second start on
 * the same directory would start a second node on the same chain files, die on the indexer lock
 * and leave those files pointing at its dead node. The first start holds `instance.json` there
 * (created exclusively: of two starts at once, one wins) with its pid and, once it listens, its
 * API address; a later start reads it and refuses at once, naming them, before it touches
 * anything. A file left by a process that is gone (killed, machine restarted) is taken over.
 * @module
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from './embedded/process-alive.js';

const FILE = 'instance.json';

/** What a running start says about itself. */
export type Instance = { pid: number; startedAt: string; apiUrl?: string };

export type InstanceLock = {
  readonly file: string;
  /** Records where the API listens, for the message a second start prints. */
  announce(apiUrl: string): Promise<void>;
  /** Removes the file (only while it is still this process's). */
  release(): Promise<void>;
};

/** The error of a start that finds another one running on its data directory. */
export class InstanceRunningError extends Error {
  constructor(
    readonly dataDir: string,
    readonly other: Instance,
  ) {
    const where = other.apiUrl ? `API ${other.apiUrl}` : 'still starting';
    super(
      `another Blockwire is running on the data directory ${dataDir} (pid ${other.pid}, ${where}): stop it first (Ctrl-C in its terminal, or kill ${other.pid}), or set BLOCKWIRE_DATA_DIR to another directory`,
    );
    this.name = 'InstanceRunningError';
  }
}

async function readInstance(file: string): Promise<Instance | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<Instance>;
    return typeof parsed.pid === 'number' ? (parsed as Instance) : undefined;
  } catch {
    return undefined;
  }
}

/** True when `pid` is a live Blockwire (a pid reused by another program after a restart is not). */
function isBlockwire(pid: number): boolean {
  if (pid === process.pid || !processAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('blockwire');
  } catch {
    return true; // no /proc: trust the pid
  }
}

/**
 * Takes the data directory for this process, or throws InstanceRunningError naming the one that
 * holds it. Changes nothing in the directory when it throws.
 */
export async function lockDataDir(dataDir: string): Promise<InstanceLock> {
  const file = join(dataDir, FILE);
  await mkdir(dataDir, { recursive: true });
  const mine: Instance = { pid: process.pid, startedAt: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, `${JSON.stringify(mine)}\n`, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
    }
    // A start that began a moment ago may not have written its pid yet: read again shortly.
    const other = (await readInstance(file)) ?? (await new Promise((r) => setTimeout(r, 200)).then(() => readInstance(file)));
    if (other && isBlockwire(other.pid)) throw new InstanceRunningError(dataDir, other);
    // Left by a process that is gone (or unreadable): take it over.
    await unlink(file).catch(() => {});
  }
  let released = false;
  const ours = () => {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as Instance).pid === process.pid;
    } catch {
      return false;
    }
  };
  const onExit = () => {
    if (!released && ours()) unlinkSync(file);
  };
  process.once('exit', onExit);
  return {
    file,
    async announce(apiUrl) {
      mine.apiUrl = apiUrl;
      if (!released && ours()) writeFileSync(file, `${JSON.stringify(mine)}\n`);
    },
    async release() {
      process.off('exit', onExit);
      if (!released && ours()) await unlink(file).catch(() => {});
      released = true;
    },
  };
}
