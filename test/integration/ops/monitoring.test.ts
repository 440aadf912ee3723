/**
 * The operations kit of deploy/: Prometheus's configuration and alert rules pass `promtool
 * check` (Debian's prometheus package; scripts/setup-test.sh installs it), the alerts are those
 * docs/operations.md describes, and every metric the rules and the Grafana dashboard query is one
 * a Blockwire process exposes (read from a real /metrics rendering, not a list kept by hand). The
 * dashboard is well-formed Grafana JSON on the provisioned data source, and compose provisions
 * both under the `monitoring` profile.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../../cli/ops/metrics.js';
import { silentLogger } from '../../../src/log.js';
import { createMigratedDatabase, type TestDatabase } from '../../support/db.js';
import { projectRoot } from '../../support/fixtures.js';

const run = promisify(execFile);
const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p));
const deploy = (...p: string[]) => join(projectRoot, 'deploy', ...p);

type Rule = { alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
type Panel = {
  id: number;
  type: string;
  title: string;
  datasource: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { refId: string; expr: string }[];
};

let db: TestDatabase;
let exposed: Set<string>;

/** The metric names of a PromQL expression (identifiers followed by `{`, `[`, `)` or an operator, not functions or labels). */
function metricsIn(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '{}').replace(/"[^"]*"/g, '""');
  return [...withoutLabels.matchAll(/\b(blockwire_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

beforeAll(async () => {
  db = await createMigratedDatabase('monitoring');
  const metrics = createMetrics({ db: db.db, log: silentLogger(), roles: ['indexer', 'api', 'streams', 'worker'] });
  const text = await metrics.render();
  exposed = new Set();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [name, type] = [m[1]!, m[2]!];
    exposed.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exposed.add(`${name}${s}`);
    if (type === 'summary') for (const s of ['_sum', '_count']) exposed.add(`${name}${s}`);
  }
});
afterAll(async () => db?.drop());

describe('monitoring kit', () => {
  it('promtool accepts the Prometheus configuration and the alert rules', async () => {
    if (!PROMTOOL) {
      if (process.env.CI) throw new Error("promtool not found; CI requires it (./scripts/setup-test.sh installs Debian's prometheus)");
      process.stderr.write(
        'notice: promtool not found (./scripts/setup-test.sh installs it): the rules are checked by the schema checks below only\n',
      );
      return;
    }
    const rules = await run(PROMTOOL, ['check', 'rules', deploy('prometheus', 'alerts.yml')]);
    expect(rules.stdout).toMatch(/SUCCESS: 7 rules found/);
    const config = await run(PROMTOOL, ['check', 'config', deploy('prometheus', 'prometheus.yml')]);
    expect(config.stdout).toMatch(/is valid prometheus config file syntax/);
    // And it refuses a broken rule, so the check can fail.
    const dir = await mkdtemp(join(tmpdir(), 'bw-rules-'));
    try {
      await writeFile(
        join(dir, 'broken.yml'),
        'groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: max(blockwire_index_lag_blocks > 6\n',
      );
      const broken = await run(PROMTOOL, ['check', 'rules', join(dir, 'broken.yml')]).catch((err: { code: number }) => err);
      expect('code' in broken ? broken.code : 0).not.toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the alert rules are the ones docs/operations.md describes, on metrics that exist', async () => {
    const doc = parse(await readFile(deploy('prometheus', 'alerts.yml'), 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
    const rules = doc.groups.flatMap((g) => g.rules);
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
    const operations = await readFile(join(projectRoot, 'docs', 'operations.md'), 'utf8');
    // The prose of docs/operations.md, rule by rule.
    expect(byName.BlockwireIndexLagging).toMatchObject({ expr: 'max(blockwire_index_lag_blocks) > 6', for: '10m' });
    expect(byName.BlockwireIndexerDown).toMatchObject({ expr: 'max(blockwire_indexer_heartbeat_age_seconds) > 60' });
    expect(byName.BlockwireRelayDown!.expr).toBe('max(blockwire_outbox_pending_events) > 0 and on() max(blockwire_relay_active) == 0');
    expect(byName.BlockwireDeliveriesDeadLettered!.expr).toBe('increase(blockwire_deliveries{status="dead"}[1h]) > 0');
    expect(byName.BlockwireApiSlow!.expr).toBe(
      'histogram_quantile(0.99, sum by (le) (rate(blockwire_api_request_duration_seconds_bucket[5m]))) > 0.1',
    );
    for (const r of rules) {
      expect(r.alert).toMatch(/^Blockwire[A-Z]\w+$/);
      expect(['warning', 'critical']).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(operations, `docs/operations.md names ${r.alert}`).toContain(r.alert);
      const names = metricsIn(r.expr);
      expect(names.length, r.alert).toBeGreaterThan(0);
      for (const n of names) expect(exposed.has(n), `${r.alert}: ${n} is not exposed by /metrics`).toBe(true);
    }
  });

  it('the Grafana dashboard: panels on the provisioned data source, queries on metrics that exist', async () => {
    const dash = JSON.parse(await readFile(deploy('grafana', 'dashboards', 'blockwire.json'), 'utf8')) as {
      uid: string;
      title: string;
      schemaVersion: number;
      panels: Panel[];
    };
    const datasources = parse(await readFile(deploy('grafana', 'provisioning', 'datasources', 'prometheus.yml'), 'utf8')) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    const ds = datasources.datasources[0]!;
    expect(ds).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
    expect(dash.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dash.title).toBe('Blockwire');
    expect(dash.schemaVersion).toBeGreaterThanOrEqual(30);
    expect(dash.panels.length).toBeGreaterThanOrEqual(10);
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    const used = new Set<string>();
    for (const p of dash.panels) {
      expect(['timeseries', 'stat', 'gauge', 'table']).toContain(p.type);
      expect(p.datasource.uid, p.title).toBe(ds.uid);
      expect(p.gridPos.w).toBeGreaterThan(0);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets)
        for (const n of metricsIn(t.expr)) {
          expect(exposed.has(n), `${p.title}: ${n} is not exposed by /metrics`).toBe(true);
          used.add(n);
        }
    }
    // The dashboard covers the index, the relay, deliveries, the API and stamps.
    for (const n of [
      'blockwire_index_lag_blocks',
      'blockwire_outbox_pending_events',
      'blockwire_deliveries',
      'blockwire_api_request_duration_seconds_bucket',
      'blockwire_stamps_queued',
    ])
      expect(used).toContain(n);
  });

  it('compose provisions Prometheus and Grafana with these files under the monitoring profile', async () => {
    const compose = parse(await readFile(join(projectRoot, 'compose.yaml'), 'utf8')) as {
      services: Record<string, { profiles?: string[]; volumes?: string[] }>;
    };
    const prom = compose.services.prometheus!;
    const grafana = compose.services.grafana!;
    expect(prom.profiles).toEqual(['monitoring']);
    expect(grafana.profiles).toEqual(['monitoring']);
    expect(prom.volumes).toEqual([
      './deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
      './deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro',
    ]);
    expect(grafana.volumes).toEqual([
      './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
      './deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro',
    ]);
    const provider = parse(await readFile(deploy('grafana', 'provisioning', 'dashboards', 'blockwire.yml'), 'utf8')) as {
      providers: { options: { path: string } }[];
    };
    expect(provider.providers[0]!.options.path).toBe('/var/lib/grafana/dashboards');
    const scrape = parse(await readFile(deploy('prometheus', 'prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    expect(scrape.rule_files).toEqual(['alerts.yml']);
    expect(scrape.scrape_configs[0]!.static_configs[0]!.targets.sort()).toEqual([
      'api:9464',
      'indexer:9464',
      'streams:9464',
      'worker:9464',
    ]);
  });
});
