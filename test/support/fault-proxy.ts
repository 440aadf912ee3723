/**
 * A TCP proxy on 127.0.0.1 in front of a server the tests cannot SIGKILL or SIGSTOP because it
 * lives in the test process (a webhook receiver, the SNS endpoint): the port Blockwire is given
 * is the proxy's, and the proxy plays the server's faults.
 * - `kill()`: what the kernel does when the process dies — every open connection reset, the
 *   port refusing new ones until `restore()`;
 * - `stall()`: what a stopped process (SIGSTOP) looks like from outside — connections are still
 *   accepted (the backlog) and bytes sent are taken, but nothing comes back, until `restore()`
 *   forwards what was held both ways.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export type FaultProxy = {
  /** The proxy's port (give this to Blockwire). */
  port: number;
  readonly mode: 'pass' | 'killed' | 'stalled';
  kill(): Promise<void>;
  stall(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
};

type Pair = { down: Socket; up: Socket; held: [Socket, Buffer][] };

/** Starts a proxy to `targetPort` on 127.0.0.1. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  let mode: FaultProxy['mode'] = 'pass';
  const pairs = new Set<Pair>();
  let server: Server;
  let port = 0;

  const flush = (p: Pair) => {
    for (const [to, chunk] of p.held.splice(0)) to.write(chunk);
  };

  const listen = async () => {
    server = createServer((down) => {
      const up = connect(targetPort, '127.0.0.1');
      const pair: Pair = { down, up, held: [] };
      pairs.add(pair);
      // Chunks are forwarded one by one, or held while stalled (in order, both ways).
      const forward = (to: Socket) => (chunk: Buffer) => {
        if (mode === 'stalled' || pair.held.length > 0) pair.held.push([to, chunk]);
        else to.write(chunk);
      };
      down.on('data', forward(up));
      up.on('data', forward(down));
      const end = () => {
        pairs.delete(pair);
        down.destroy();
        up.destroy();
      };
      down.on('error', end).on('close', end);
      up.on('error', end).on('close', end);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server.address() as { port: number }).port;
  };
  await listen();

  const closeServer = () => new Promise<void>((resolve) => server.close(() => resolve()));

  return {
    get port() {
      return port;
    },
    get mode() {
      return mode;
    },
    async kill() {
      mode = 'killed';
      const closed = closeServer();
      for (const p of [...pairs]) {
        p.down.resetAndDestroy();
        p.up.destroy();
      }
      await closed;
    },
    stall() {
      mode = 'stalled';
    },
    async restore() {
      if (mode === 'killed') await listen();
      mode = 'pass';
      for (const p of pairs) flush(p);
    },
    async close() {
      for (const p of [...pairs]) {
        p.down.destroy();
        p.up.destroy();
      }
      if (mode !== 'killed') await closeServer();
      mode = 'killed';
    },
  };
}
