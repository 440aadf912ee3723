/**
 * Signals to a process and every process under it (Linux /proc), for fault tests: PostgreSQL's
 * backends each run in a session of their own, so a signal to the postmaster's process group
 * does not reach them; `stopTree`/`continueTree` stall or resume the whole server.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** `pid` and its descendants, parents first. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

/** SIGSTOP to `pid` and every descendant (parents first, so none forks a new one meanwhile); returns them for `continueTree`. */
export function stopTree(pid: number): number[] {
  const pids = processTree(pid);
  for (const p of pids) process.kill(p, 'SIGSTOP');
  return pids;
}

/** SIGCONT to each of `pids` still alive. */
export function continueTree(pids: readonly number[]): void {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGCONT');
    } catch {
      // exited
    }
  }
}
