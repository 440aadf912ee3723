// bench/baseline.ts's choice between linking the current node_modules into a baseline checkout
// and installing its own: the baseline's direct dependencies must resolve to the same versions.
import { describe, expect, it } from 'vitest';
import { differingDeps } from '../../../bench/baseline.js';

describe('bench baseline dependencies', () => {
  const lock = (root: Record<string, string>, versions: Record<string, string>) => ({
    packages: {
      '': { dependencies: root },
      ...Object.fromEntries(Object.entries(versions).map(([n, v]) => [`node_modules/${n}`, { version: v }])),
    },
  });

  it('names the direct dependencies whose versions differ, ignoring transitive ones and our additions', () => {
    const theirs = lock({ pg: '^8.0.0', kysely: '^0.28.0' }, { pg: '8.23.1', kysely: '0.28.18', 'pg-types': '4.0.1' });
    expect(
      differingDeps(
        theirs,
        lock({ pg: '^8.0.0', kysely: '^0.28.0', ws: '^8' }, { pg: '8.23.1', kysely: '0.28.18', 'pg-types': '4.0.2', ws: '8.0.0' }),
      ),
    ).toEqual([]);
    expect(differingDeps(theirs, lock({ pg: '^8.0.0' }, { pg: '8.24.0' }))).toEqual(['pg', 'kysely']);
  });
});
