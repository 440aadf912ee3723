import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';

// Three projects: `unit` is pure (no services, no sockets beyond loopback fakes), `integration`
// runs against a real PostgreSQL and Redis that test/support/global-setup.ts starts on free
// loopback ports and tears down, and `image` brings the compose stack up with podman (its images
// built from this machine's files: ~3-4 min from nothing, nothing when they are current).
// All three share one group, so that no project waits for another: projects of one group share
// its workers (hence the same maxWorkers), and the group's files start longest first
// (test/support/sequencer.ts, by test/durations.json; a file it does not know yet, as `image`'s,
// first of all). So in a plain `npx vitest run` `image` takes a worker first, the other
// integration files follow, and the unit files, seconds each, fill the end. scripts/test.sh (so
// CI) runs `image` in a vitest process of its own beside `unit` and `integration`, so that its
// niced image build and its waits on the containers hold neither of their two workers.
const sharedGroup = { groupOrder: 1, maxWorkers: 2 };

// The benchmarks' quick run (`npm run bench -- --quick`, ~5 minutes) is not part of the default
// suite: scripts/test.sh runs it as a step of its own, beside the suite, with
// BLOCKWIRE_BENCH_SMOKE=1, which selects the `bench` project alone.
const benchSmoke = process.env.BLOCKWIRE_BENCH_SMOKE === '1';

const benchProject = {
  test: {
    name: 'bench',
    include: ['test/bench/**/*.test.ts'],
    environment: 'node',
    testTimeout: 1_800_000,
    hookTimeout: 600_000,
    pool: 'forks' as const,
    maxWorkers: 1,
  },
};

export default defineConfig({
  test: {
    // Longest files first (test/durations.json): a fresh clone has no vitest cache to order by.
    sequence: { sequencer: LongestFirstSequencer },
    projects: benchSmoke
      ? [benchProject]
      : [
          {
            test: {
              name: 'unit',
              sequence: { groupOrder: sharedGroup.groupOrder },
              include: ['test/unit/**/*.test.ts'],
              environment: 'node',
              // Generous: the suite must pass on a loaded machine (a timeout is a failure, not a speed target).
              // Hooks too: a beforeEach that mines a devnode chain took over vitest's default 10 s at load 20.
              testTimeout: 120_000,
              hookTimeout: 120_000,
              pool: 'forks',
              maxWorkers: sharedGroup.maxWorkers,
            },
          },
          {
            test: {
              name: 'integration',
              sequence: { groupOrder: sharedGroup.groupOrder },
              include: ['test/integration/**/*.test.ts'],
              environment: 'node',
              globalSetup: ['test/support/global-setup.ts'],
              // Limits are for hangs, not speed: at load 30 a beforeAll that starts a node, a database and
              // an indexer and waits for a hundred blocks took over 3 minutes.
              testTimeout: 300_000,
              hookTimeout: 600_000,
              pool: 'forks',
              // Two cores: more workers only make the services contend.
              maxWorkers: sharedGroup.maxWorkers,
            },
          },
          {
            test: {
              name: 'image',
              sequence: { groupOrder: sharedGroup.groupOrder },
              include: ['test/image/**/*.test.ts'],
              environment: 'node',
              testTimeout: 900_000,
              hookTimeout: 3_600_000,
              pool: 'forks',
              maxWorkers: sharedGroup.maxWorkers,
            },
          },
        ],
  },
});
