/**
 * The quick start run twice, as a newcomer does:
 * - two quick starts at once, each on its own data directory (two checkouts): both check the
 *   default ports while neither listens yet and both find them free; the one that binds second
 *   finds its port taken and must take a free one instead of dying with EADDRINUSE;
 * - `./scripts/start.sh` again in the same checkout while the first runs: refused at once, naming
 *   the running instance (pid, API address), and nothing of the first changed — its node file
 *   still points at its node, so the faucet still pays through it. The lock file
 *   goes when the first stops.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../../src/config.js';
import { quickStartNodeFile } from '../../../cli/quickstart-node.js';
import { projectRoot } from '../../support/fixtures.js';
import { spawnBlockwire, type BlockwireProcess } from './processes.js';
import { banner, runCurl } from './quickstart-banner.js';

const execFileP = promisify(execFile);
const dirs: string[] = [];
const procs: BlockwireProcess[] = [];

afterAll(async () => {
  for (const p of procs) await p.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
}, 120_000);

/** True when nothing listens on 127.0.0.1:`port` now. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

describe('the quick start started twice', () => {
  it('two at once both start; a second one on the same data directory refuses and changes nothing', async () => {
    const defaults = loadConfig({});
    // The ports both will want and only one can have (a devnode's are bound early, the API's and
    // Electrum's only after PostgreSQL and the index: both check those while neither listens).
    const contested = [];
    for (const port of [defaults.port, 50001, 50002]) if (await free(port)) contested.push(port);
    expect(contested.length, 'none of 3000, 50001, 50002 is free on this machine: nothing to contend for').toBeGreaterThan(0);

    const path = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d && !existsSync(join(d, 'bitcoind')));
    const envFor = (dataDir: string) => ({ BLOCKWIRE_DATA_DIR: dataDir, BLOCKWIRE_DEVNODE_MINE_EVERY: '0', PATH: path.join(':') });
    for (let i = 0; i < 2; i++) dirs.push(await mkdtemp(join(tmpdir(), `blockwire-twice-${i}-`)));
    const [one, two] = [
      spawnBlockwire('quickstart-a', ['start'], envFor(dirs[0]!)),
      spawnBlockwire('quickstart-b', ['start'], envFor(dirs[1]!)),
    ];
    procs.push(one, two);
    const [a, b] = await Promise.all([banner(one, 600_000), banner(two, 600_000)]);
    expect(one.child.exitCode, one.output().slice(-3000)).toBeNull();
    expect(two.child.exitCode, two.output().slice(-3000)).toBeNull();
    expect(a.apiBase).not.toBe(b.apiBase);
    // One of them found a port taken after its check and says so, in the log and the banner.
    const late = [one, two].filter((p) => p.lines.some((l) => /was taken while starting/.test(l.msg)));
    expect(late.length, `${one.output().slice(-2000)}\n${two.output().slice(-2000)}`).toBeGreaterThan(0);
    expect(late[0]!.output()).toMatch(/ {2}note {7}\S+ \d+ was in use: .* took a free port/);
    for (const banners of [a, b])
      expect(((await runCurl(banners.curls[0]!)) as { best_height: number }).best_height).toBeGreaterThanOrEqual(101);

    // The same checkout again, while the first runs.
    const nodeFile = quickStartNodeFile(dirs[0]!);
    const before = {
      node: await readFile(nodeFile, 'utf8'),
      mtime: (await stat(nodeFile)).mtimeMs,
      key: await readFile(join(dirs[0]!, 'quickstart-api-key'), 'utf8'),
    };
    const again = spawnBlockwire('quickstart-again', ['start'], envFor(dirs[0]!));
    procs.push(again);
    expect(await again.exited).toBe(1);
    const said = again.output();
    expect(said).toContain(`another Blockwire is running on the data directory ${dirs[0]} (pid ${one.child.pid}, API ${a.apiBase})`);
    // Refused before anything else: no port warnings, no node started.
    expect(said).not.toMatch(/in use|devnode|NO BITCOIND/);
    expect(await readFile(nodeFile, 'utf8')).toBe(before.node);
    expect((await stat(nodeFile)).mtimeMs).toBe(before.mtime);
    expect(await readFile(join(dirs[0]!, 'quickstart-api-key'), 'utf8')).toBe(before.key);
    // The faucet still reaches the first instance's node.
    const paid = await execFileP(
      process.execPath,
      [join(projectRoot, 'bin', 'blockwire.js'), 'faucet', 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080', '0.1'],
      { cwd: projectRoot, env: { PATH: process.env.PATH ?? '', BLOCKWIRE_DATA_DIR: dirs[0]! }, timeout: 120_000 },
    );
    expect(paid.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(((await runCurl(a.curls[0]!)) as { best_height: number }).best_height).toBeGreaterThanOrEqual(101);

    expect(await one.stop()).toBe(0);
    expect(existsSync(join(dirs[0]!, 'instance.json'))).toBe(false);
    expect(await two.stop()).toBe(0);
  }, 1_200_000);
});
