/**
 * The ports a process will listen on, checked before anything starts: each one busy is named
 * with its setting (`PORT 3000 on 127.0.0.1 is in use`) instead of surfacing as `Address already
 * in use` after PostgreSQL, migrations and the indexer have started. Where the user did not
 * choose a port (the quick start's defaults), a free one is taken instead and reported.
 * @module
 */
import { createServer } from 'node:net';

/** A port the process will listen on. */
export type PortClaim = {
  /** The setting that chooses it (`PORT`, `BLOCKWIRE_DEVNODE_ZMQ_PORT`…). */
  setting: string;
  /** What listens there, for messages (`the REST API`). */
  what: string;
  host: string;
  port: number;
  /** True when the user set it; a busy default may be replaced by a free port, a chosen one not. */
  explicit: boolean;
};

/** A claim after the check: `port` is the one to use (0 = let the listener pick), `requested` the one claimed. */
export type ResolvedPort = PortClaim & { replaced: boolean; requested: number };

/** Resolves with null when `port` can be bound on `host`, else with the error code (EADDRINUSE, EACCES…). */
function probePort(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(null)));
  });
}

function why(code: string): string {
  if (code === 'EADDRINUSE') return 'is in use by another process';
  if (code === 'EACCES') return 'needs privileges this user lacks';
  if (code === 'EADDRNOTAVAIL') return 'is on an address this machine does not have';
  return `cannot be bound (${code})`;
}

/**
 * Checks every claim (port 0 needs no check). A busy port the user did not choose becomes 0
 * (`replaced`) when `takeFreeWhenDefault`; any other busy port, and two claims of one port, are
 * problems naming the setting and the fix.
 */
export async function checkPorts(
  claims: readonly PortClaim[],
  opts: { takeFreeWhenDefault: boolean },
): Promise<{ ports: ResolvedPort[]; problems: string[] }> {
  const problems: string[] = [];
  const ports: ResolvedPort[] = [];
  const seen = new Map<number, PortClaim>();
  for (const c of claims) {
    if (c.port === 0) {
      ports.push({ ...c, replaced: false, requested: 0 });
      continue;
    }
    const twin = seen.get(c.port);
    if (twin) {
      problems.push(`${c.setting} and ${twin.setting} are both ${c.port}: give ${c.explicit ? c.setting : twin.setting} another port`);
      continue;
    }
    seen.set(c.port, c);
    const code = await probePort(c.host, c.port);
    if (code === null) ports.push({ ...c, replaced: false, requested: c.port });
    else if (opts.takeFreeWhenDefault && !c.explicit && code === 'EADDRINUSE')
      ports.push({ ...c, port: 0, replaced: true, requested: c.port });
    else
      problems.push(
        `${c.setting} ${c.port} on ${c.host} (${c.what}) ${why(code)}: stop what holds it or set ${c.setting} to a free port (0 = any free port)`,
      );
  }
  return { ports, problems };
}
