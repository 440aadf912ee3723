/**
 * `blockwire status [--json] [--max-lag N] [--max-relay-delay S] [--max-heartbeat-age S]
 * [--fail-on-dead]`: reads the deployment's state from Postgres (DATABASE_URL, or the embedded
 * server a running `blockwire start` keeps under BLOCKWIRE_DATA_DIR) and prints the index tip,
 * the node tip (from the indexer's heartbeat), the lag, the outbox backlog, deliveries and
 * stamps. Exit 0 when healthy, 1 when not (each reason printed), 2 on a usage or config error.
 * @module
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../src/config.js';
import { createDb } from '../src/db/connect.js';
import { findRunningPostgres } from './embedded/postgres.js';
import { readDeploymentState, stuckStampReason, type DeploymentState } from '../src/ops/state.js';

const USAGE = `usage: blockwire status [--json] [--max-lag N] [--max-relay-delay SECONDS] [--max-heartbeat-age SECONDS] [--fail-on-dead]

Reads the deployment's state from PostgreSQL (DATABASE_URL, or the embedded server of a running
\`blockwire start\`) and prints index tip, node tip, lag, outbox backlog and delivery failures.
Exits 0 when healthy, 1 when not.

  --max-lag N              blocks the index may be behind the node (default API_MAX_LAG_BLOCKS)
  --max-relay-delay S      age in seconds of the oldest undelivered outbox event (default 60)
  --max-heartbeat-age S    age in seconds of the indexer's last heartbeat (default 60)
  --fail-on-dead           dead-lettered deliveries in the last 24 h make it unhealthy too
  --json                   print the state and the verdict as JSON
`;

export type Thresholds = { maxLag: number; maxRelayDelaySeconds: number; maxHeartbeatAgeSeconds: number; failOnDead: boolean };

export type Verdict = { healthy: boolean; problems: string[]; warnings: string[] };

/** Judges a state against the thresholds (pure). */
export function assessHealth(s: DeploymentState, t: Thresholds): Verdict {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (s.index.height < 0) problems.push('nothing is indexed yet');
  const hb = s.heartbeat;
  if (!hb) problems.push('no indexer has ever reported to this database (is `blockwire start --role indexer` running?)');
  else {
    if (hb.mode === 'stopped') problems.push(`the indexer stopped (pid ${hb.pid} on ${hb.host}, ${Math.round(hb.ageSeconds)} s ago)`);
    else if (hb.ageSeconds > t.maxHeartbeatAgeSeconds)
      problems.push(`the indexer's last heartbeat is ${Math.round(hb.ageSeconds)} s old (pid ${hb.pid} on ${hb.host}): is it running?`);
    if (hb.nodeHeight === null) problems.push(`the indexer cannot reach the node${hb.lastError ? `: ${hb.lastError}` : ''}`);
    else {
      const lag = Math.max(0, hb.nodeHeight - s.index.height);
      if (lag > t.maxLag) problems.push(`the index is ${lag} blocks behind the node (more than ${t.maxLag})`);
    }
    if (hb.lastError && hb.nodeHeight !== null) warnings.push(`indexer's last error: ${hb.lastError}`);
    if (hb.zmqSilent && hb.mode !== 'stopped') {
      warnings.push(
        `ZMQ at ${hb.zmqSilent.url} is silent: ${hb.zmqSilent.blocks} blocks arrived that no message announced (check BITCOIND_ZMQ_URL and bitcoind's -zmqpub… options; blocks are found by polling meanwhile)`,
      );
    }
  }
  if (s.outbox.pending > 0 && s.outbox.oldestPendingSeconds > t.maxRelayDelaySeconds) {
    problems.push(
      `${s.outbox.pending} events wait in the outbox, the oldest for ${Math.round(s.outbox.oldestPendingSeconds)} s: is a streams process (the relay) running?`,
    );
  }
  if (s.deliveries.dead24h > 0) {
    const msg = `${s.deliveries.dead24h} deliveries were dead-lettered in the last 24 h (GET /hooks/{id}/deliveries; redeliver when the receiver is back)`;
    if (t.failOnDead) problems.push(msg);
    else warnings.push(msg);
  }
  if (s.stamps.stuck) problems.push(stuckStampReason(s.stamps.stuck));
  if (s.deliveries.failed24h > 0)
    warnings.push(`${s.deliveries.failed24h} deliveries failed permanently in the last 24 h (receiver answered 4xx)`);
  return { healthy: problems.length === 0, problems, warnings };
}

function ago(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

/** The human-readable report. */
export function formatStatus(s: DeploymentState, v: Verdict, now = new Date()): string {
  const hb = s.heartbeat;
  const tipAge = (now.getTime() - s.index.updatedAt.getTime()) / 1000;
  const lines = [
    `index tip     ${s.index.height}${s.index.hash ? `  ${s.index.hash}` : ''}  (updated ${ago(tipAge)})`,
    // The node's tip is the heartbeat's (every few seconds): older than the index tip when a
    // block was indexed since. Then it is at least the index's, not the heartbeat's lower one.
    hb && hb.nodeHeight !== null && hb.nodeHeight < s.index.height
      ? `node tip      ${s.index.height} or more  (the heartbeat's ${hb.nodeHeight} is older than the index tip; indexer ${hb.mode}, pid ${hb.pid} on ${hb.host}, heartbeat ${ago(hb.ageSeconds)})`
      : hb
        ? `node tip      ${hb.nodeHeight ?? 'unreachable'}${hb.nodeHash ? `  ${hb.nodeHash}` : ''}  (indexer ${hb.mode}, pid ${hb.pid} on ${hb.host}, heartbeat ${ago(hb.ageSeconds)})`
        : 'node tip      unknown  (no indexer heartbeat)',
    `lag           ${hb && hb.nodeHeight !== null ? `${Math.max(0, hb.nodeHeight - s.index.height)} blocks` : 'unknown'}`,
    `outbox        ${s.outbox.pending} events pending${s.outbox.pending ? `, oldest ${Math.round(s.outbox.oldestPendingSeconds)} s` : ''}  (relay cursor ${s.outbox.cursor}, newest event ${s.outbox.newest})`,
    `deliveries    ${s.deliveries.pending} pending, ${s.deliveries.failed24h} failed and ${s.deliveries.dead24h} dead in the last 24 h`,
    `stamps        ${s.stamps.queued} queued, ${s.stamps.unconfirmedTxs} transactions unconfirmed${s.stamps.stuck ? `, 1 stuck (${s.stamps.stuck.txid})` : ''}`,
    '',
    v.healthy ? 'status        HEALTHY' : 'status        UNHEALTHY',
    ...v.problems.map((p) => `  - ${p}`),
    ...v.warnings.map((w) => `  warning: ${w}`),
    '',
  ];
  return lines.join('\n');
}

function nonNegative(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new TypeError(`--${name} must be a non-negative integer, got '${raw}'`);
  return Number(raw);
}

/** Resolves the database URL: DATABASE_URL, or a running embedded server; null when neither. */
async function databaseUrl(config: Config): Promise<string | null> {
  if (config.databaseUrl) return config.databaseUrl;
  const running = await findRunningPostgres(join(config.dataDir, 'postgres'));
  return running ? running.urlFor('blockwire') : null;
}

export async function run(argv: string[]): Promise<number> {
  let thresholds: Thresholds;
  let json = false;
  let config: Config;
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean' },
        'max-lag': { type: 'string' },
        'max-relay-delay': { type: 'string' },
        'max-heartbeat-age': { type: 'string' },
        'fail-on-dead': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    config = loadConfig(process.env);
    json = values.json === true;
    thresholds = {
      maxLag: nonNegative('max-lag', values['max-lag'], config.apiMaxLagBlocks),
      maxRelayDelaySeconds: nonNegative('max-relay-delay', values['max-relay-delay'], 60),
      maxHeartbeatAgeSeconds: nonNegative('max-heartbeat-age', values['max-heartbeat-age'], 60),
      failOnDead: values['fail-on-dead'] === true,
    };
  } catch (err) {
    const msg = err instanceof ConfigError ? err.message : `${(err as Error).message}\n\n${USAGE}`;
    process.stderr.write(`blockwire status: ${msg}\n`);
    return 2;
  }

  const url = await databaseUrl(config);
  if (!url) {
    const msg = `DATABASE_URL is unset and no embedded PostgreSQL runs under ${join(config.dataDir, 'postgres')}: is \`blockwire start\` running (with the same BLOCKWIRE_DATA_DIR)?`;
    if (json) process.stdout.write(`${JSON.stringify({ healthy: false, problems: [msg] })}\n`);
    else process.stderr.write(`blockwire status: ${msg}\n`);
    return 1;
  }
  const db = createDb(url, { max: 1, applicationName: 'blockwire-status', statementTimeoutMs: 15_000 });
  try {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 15 s')), 15_000);
    });
    const state = await Promise.race([readDeploymentState(db), timeout]).finally(() => clearTimeout(timer));
    const verdict = assessHealth(state, thresholds);
    if (json) {
      process.stdout.write(`${JSON.stringify({ ...verdict, state }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
    } else {
      process.stdout.write(formatStatus(state, verdict));
    }
    return verdict.healthy ? 0 : 1;
  } catch (err) {
    const msg = `cannot read the database (${new URL(url).host}): ${(err as Error).message}`;
    if (json) process.stdout.write(`${JSON.stringify({ healthy: false, problems: [msg] })}\n`);
    else process.stderr.write(`blockwire status: ${msg}\n`);
    return 1;
  } finally {
    await db.destroy();
  }
}
