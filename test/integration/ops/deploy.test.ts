/**
 * The deployment files, checked without a Docker engine: compose.yaml resolved by Debian's
 * docker-compose (scripts/validate-compose.sh) for the defaults and each deploy/*.env, then what
 * the resolved configuration must hold (Core flags, noeviction, one-shot migrate, one image for
 * every role, every variable a real setting that loadConfig accepts); the Dockerfile linted by
 * dockerfile-utils and read for its stages, user and entrypoint.
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { validate } from 'dockerfile-utils';
import { DockerfileParser } from 'dockerfile-ast';
import { projectRoot } from '../../support/fixtures.js';
import { ConfigError, loadConfig, settings } from '../../../src/config.js';

const run = promisify(execFile);

type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  entrypoint?: string[];
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  restart?: string;
  profiles?: string[];
  user?: string;
  deploy?: { replicas?: number };
  scale?: number;
};
type Compose = { services: Record<string, Service>; volumes?: Record<string, unknown> };

const ROLES = ['indexer', 'api', 'streams', 'worker'] as const;
const ENV_FILES = ['regtest', 'signet', 'mainnet'] as const;
const CHAIN = { regtest: 'regtest', signet: 'signet', mainnet: 'main' } as const;

async function resolved(envFile: string): Promise<Compose> {
  const { stdout } = await run('docker-compose', ['--env-file', envFile, '-f', 'compose.yaml', '--profile', 'regtest-miner', 'config'], {
    cwd: projectRoot,
  });
  return parse(stdout) as Compose;
}

const known = new Set(Object.values(settings).map((s) => s.env));

describe('compose.yaml', () => {
  it('validates with docker-compose config: defaults and every deploy/*.env (scripts/validate-compose.sh)', async () => {
    const { stdout } = await run('bash', ['scripts/validate-compose.sh'], { cwd: projectRoot, timeout: 170_000 });
    expect(stdout).toContain('valid: compose.yaml (defaults)');
    for (const e of ENV_FILES) expect(stdout).toContain(`valid: compose.yaml (deploy/${e}.env)`);
    const envs = (await readdir(join(projectRoot, 'deploy'))).filter((f) => f.endsWith('.env'));
    expect(envs.sort()).toEqual(ENV_FILES.map((e) => `${e}.env`).sort());
  }, 180_000);

  it('the validator refuses a broken file (unknown key, dependency on a missing service)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bw-compose-'));
    const good = await readFile(join(projectRoot, 'compose.yaml'), 'utf8');
    const cases = [
      good.replace('    stop_grace_period: 60s\n', '    stop_grace_periodd: 60s\n'),
      good.replace(
        '      migrate:\n        condition: service_completed_successfully\n      bitcoind:',
        '      migrat:\n        condition: service_completed_successfully\n      bitcoind:',
      ),
    ];
    for (const [i, text] of cases.entries()) {
      expect(text).not.toBe(good);
      const f = join(dir, `bad-${i}.yaml`);
      await writeFile(f, text);
      await expect(run('bash', [join(projectRoot, 'scripts/validate-compose.sh'), f], { cwd: projectRoot })).rejects.toMatchObject({
        code: 1,
      });
    }
  });

  for (const name of ENV_FILES) {
    it(`${name}: Core with REST, RPC and ZMQ; noeviction Redis; one-shot migrate; one image for every role`, async () => {
      const c = await resolved(join('deploy', `${name}.env`));
      const s = c.services;
      const bitcoind = s.bitcoind!;
      const major = Number(/^bitcoin\/bitcoin:(\d+)/.exec(bitcoind.image ?? '')?.[1]);
      expect(major).toBeGreaterThanOrEqual(28);
      const args = bitcoind.command as string[];
      expect(args).toContain(`-chain=${CHAIN[name]}`);
      for (const a of [
        '-server=1',
        '-rest=1',
        '-zmqpubsequence=tcp://0.0.0.0:28332',
        '-zmqpubhashblock=tcp://0.0.0.0:28332',
        '-zmqpubrawtx=tcp://0.0.0.0:28332',
      ])
        expect(args).toContain(a);
      expect(args.some((a) => /^-txindex=1/.test(a) || /^-prune=[1-9]/.test(a))).toBe(false);
      expect(bitcoind.healthcheck?.test).toContain('getblockchaininfo');

      const redis = (s.redis!.command as string[]).join(' ');
      expect(redis).toMatch(/--maxmemory-policy noeviction/);

      const migrate = s.migrate!;
      expect(migrate.command).toEqual(['migrate', 'latest']);
      expect(migrate.restart).toBe('no');
      expect(migrate.depends_on?.postgres?.condition).toBe('service_healthy');

      const image = migrate.image;
      for (const role of ROLES) {
        const svc = s[role]!;
        expect(svc.image, role).toBe(image);
        expect(svc.command, role).toEqual(['start', '--role', role]);
        expect(svc.depends_on?.migrate?.condition, role).toBe('service_completed_successfully');
        expect(svc.healthcheck?.test?.join(' '), role).toContain('/healthz');
        expect(svc.restart, role).toBe('unless-stopped');
      }
      expect(s.indexer!.deploy?.replicas ?? s.indexer!.scale ?? 1).toBe(1);
      expect(s['regtest-miner']!.profiles).toEqual(['regtest-miner']);
      for (const svc of ['bitcoind', 'postgres', 'redis']) expect(s[svc]!.healthcheck?.test, svc).toBeDefined();

      // Every variable given to Blockwire is a real setting, and loadConfig accepts them all.
      for (const role of ['migrate', ...ROLES]) {
        const env = s[role]!.environment ?? {};
        for (const k of Object.keys(env)) expect(known.has(k), `${role}: ${k} is not a setting of src/config.ts`).toBe(true);
        const asEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v ?? '']));
        let problems: string[] = [];
        try {
          loadConfig(asEnv);
        } catch (err) {
          if (err instanceof ConfigError) problems = err.problems;
          else throw err;
        }
        expect(problems, role).toEqual([]);
        expect(asEnv.BITCOIN_NETWORK).toBe(CHAIN[name]);
      }
      expect(Object.keys(c.volumes ?? {}).sort()).toEqual(['bitcoind-cookie', 'bitcoind-data', 'postgres-data', 'redis-data']);
    });
  }
});

describe('Dockerfile', () => {
  it('lints clean, builds in stages with npm ci and npm prune --omit=dev, runs non-root from dist', async () => {
    const text = await readFile(join(projectRoot, 'Dockerfile'), 'utf8');
    const problems = validate(text).filter((d) => d.severity === 1);
    expect(problems.map((d) => `${d.range.start.line + 1}: ${d.message}`)).toEqual([]);

    const df = DockerfileParser.parse(text);
    const stages = df.getFROMs();
    expect(stages.length).toBeGreaterThanOrEqual(3);
    const runs = df
      .getInstructions()
      .filter((i) => i.getKeyword() === 'RUN')
      .map((i) => i.getArgumentsContent() ?? '');
    expect(runs.some((r) => /npm ci --no-audit/.test(r))).toBe(true);
    expect(runs.some((r) => /npm prune --omit=dev/.test(r))).toBe(true);
    expect(runs.some((r) => /tsc -p tsconfig\.build\.json/.test(r))).toBe(true);

    // The last stage: what the image runs.
    const lastFrom = stages.at(-1)!.getRange().start.line;
    const last = df.getInstructions().filter((i) => i.getRange().start.line > lastFrom);
    const user = last
      .filter((i) => i.getKeyword() === 'USER')
      .at(-1)
      ?.getArgumentsContent();
    expect(user).toBe('node');
    expect(last.find((i) => i.getKeyword() === 'ENTRYPOINT')?.getArgumentsContent()).toBe('["node", "/app/dist/cli/main.js"]');
    expect(last.some((i) => i.getKeyword() === 'HEALTHCHECK')).toBe(true);
    expect(last.some((i) => i.getKeyword() === 'RUN' && /apt-get install/.test(i.getArgumentsContent() ?? ''))).toBe(false);

    // Every COPY source from the build context exists and is not excluded by .dockerignore.
    const allowed = (await readFile(join(projectRoot, '.dockerignore'), 'utf8'))
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    const lines = text.split('\n');
    for (const copy of df
      .getInstructions()
      .filter((i) => i.getKeyword() === 'COPY' && !/--from=/.test(lines[i.getRange().start.line] ?? ''))) {
      const args = copy
        .getArguments()
        .map((a) => a.getValue())
        .filter((a) => !a.startsWith('--'));
      for (const src of args.slice(0, -1)) {
        expect(existsSync(join(projectRoot, src)), `COPY ${src}`).toBe(true);
        expect(allowed, `.dockerignore keeps ${src} out`).toContain(src.replace(/\/$/, ''));
      }
    }
  });
});
