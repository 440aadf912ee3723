import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';

// Three projects: `unit` is pure (no services, no sockets beyond loopback fakes), `integration`
// runs against a real PostgreSQL and Redis that test/support/global-setup.ts starts on free
// loopback ports and tears down, and `image` brings the compose stack up with podman (its images
// built from this machine's files: ~3-4 min from nothing, nothing when they are current).
// `image` shares `integration`'s group, so its one long file runs beside the integration files,
// not after them: projects of one group share its workers (hence the same maxWorkers), and a
// group's files start longest first (test/support/sequencer.ts; a file test/durations.json
// does not know yet, as `image`'s, first of all), so `image` takes a worker first and the
// integration files share the other until it ends.
const sharedGroup = { groupOrder: 1, maxWorkers: 2 };

export default defineConfig({
  test: {
    // Longest files first (test/durations.json): a fresh clone has no vitest cache to order by.
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          // Generous: the suite must pass on a loaded machine (a timeout is a failure, not a speed target).
          // Hooks too: a beforeEach that mines a devnode chain took over vitest's default 10 s at load 20.
          testTimeout: 120_000,
          hookTimeout: 120_000,
          pool: 'forks',
          // Both cores (vitest's default leaves one to itself): this group holds up the next.
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: sharedGroup.groupOrder },
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
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
