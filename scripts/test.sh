#!/usr/bin/env bash
# Installs what Blockwire needs (scripts/setup.sh) and what only its tests need
# (scripts/setup-test.sh), then runs the whole suite: type check, lint (architecture rules, no
# cycles) and every vitest project. The tests start their own PostgreSQL, Redis, throwaway
# regtest Bitcoin Core nodes (BITCOIND_BIN, else ../shared/bitcoin-core/bin/bitcoind; missing
# under CI=1 fails the suite) and the devnode stand-in, on loopback ports, and bring the compose
# stack up with podman (its images built from this machine's files; scripts/test-image.sh runs
# that test alone). The whole suite (no arguments) then runs the unit tests, the quick start and the
# SDK examples once more on Node 24 (scripts/test-node24.sh), so a Node-24-only break fails too.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-test.sh
export CI="${CI:-1}"
# The type check and the lint one after the other: each already keeps ~1.5 cores busy (tsc's and
# V8's helper threads), and side by side on two cores they took longer, not less (42.7 s against
# 37.2 s one after the other, load 4-6).
npm run typecheck
npm run lint
npx vitest run "$@"
if [ "$#" -eq 0 ]; then ./scripts/test-node24.sh; fi
