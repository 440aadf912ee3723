import { defineConfig } from 'vitest/config';

// Two projects: `unit` is pure (no services, no sockets beyond loopback fakes), `integration`
// runs against a real PostgreSQL and Redis that test/support/global-setup.ts starts on free
// loopback ports and tears down. A third, `image` (the compose stack brought up with podman),
// exists only when BLOCKWIRE_IMAGE_TESTS=1 (scripts/test-image.sh): building its images on a
// fresh 2-core machine takes ~25 min, more than the whole suite may.
const imageProject = {
  test: {
    name: 'image',
    sequence: { groupOrder: 2 },
    include: ['test/image/**/*.test.ts'],
    environment: 'node',
    testTimeout: 600_000,
    hookTimeout: 3_600_000,
    pool: 'forks',
    maxWorkers: 1,
  },
};

export default defineConfig({
  test: {
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
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: 'forks',
          // Two cores: more workers only make the services contend.
          maxWorkers: 2,
        },
      },
      ...(process.env.BLOCKWIRE_IMAGE_TESTS === '1' ? [imageProject] : []),
    ],
  },
});
