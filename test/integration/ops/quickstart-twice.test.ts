/**
 * The quick start run twice, as a newcomer does:
 * - `./scripts/start.sh` again in the same checkout while the first runs: refused at once, naming
 *   the running instance (pid, API address), and nothing of the first changed — its node file
 *   still points at its node, so the faucet still pays through it (issue 35.15). The lock file
 *   goes when the first stops.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

describe('the quick start started twice', () => {
  it('a second one on the same data directory refuses and changes nothing', async () => {
    const path = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d && !existsSync(join(d, 'bitcoind')));
    const envFor = (dataDir: string) => ({ BLOCKWIRE_DATA_DIR: dataDir, BLOCKWIRE_DEVNODE_MINE_EVERY: '0', PATH: path.join(':') });
    dirs.push(await mkdtemp(join(tmpdir(), 'blockwire-twice-')));
    const one = spawnBlockwire('quickstart-a', ['start'], envFor(dirs[0]!));
    procs.push(one);
    const a = await banner(one, 600_000);

    // The same checkout again, while the first runs.
    const nodeFile = quickStartNodeFile(dirs[0]!);
    const before = { node: await readFile(nodeFile, 'utf8'), mtime: (await stat(nodeFile)).mtimeMs, key: await readFile(join(dirs[0]!, 'quickstart-api-key'), 'utf8') };
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
    const paid = await execFileP(process.execPath, [join(projectRoot, 'bin', 'blockwire.js'), 'faucet', 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080', '0.1'], { cwd: projectRoot, env: { PATH: process.env.PATH ?? '', BLOCKWIRE_DATA_DIR: dirs[0]! }, timeout: 120_000 });
    expect(paid.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(((await runCurl(a.curls[0]!)) as { best_height: number }).best_height).toBeGreaterThanOrEqual(101);

    expect(await one.stop()).toBe(0);
    expect(existsSync(join(dirs[0]!, 'instance.json'))).toBe(false);
  }, 1_200_000);
});
