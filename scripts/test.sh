#!/usr/bin/env bash
# Installs what Blockwire needs (scripts/setup.sh) and what only its tests need
# (scripts/setup-test.sh), then runs the whole suite: type check, lint (architecture rules, no
# cycles) and every vitest project. The tests start their own PostgreSQL, Redis and bitcoind
# stand-in on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-test.sh
export CI="${CI:-1}"
# The compose-stack test needs its images (test/integration/deploy/compose-stack.test.ts): when
# they must be built (a fresh machine, or the Dockerfile or sources changed), that takes minutes,
# so it starts now in the background, nice'd, and the test waits for it (the build script's lock).
core_bin=$(dirname "${BITCOIND_BIN:-../shared/bitcoin-core/bin/bitcoind}")
if [ "$#" = 0 ] && [ "$(id -u)" = 0 ] && command -v podman >/dev/null 2>&1 && [ -x "$core_bin/bitcoind" ]; then
  mkdir -p .blockwire
  nice -n 10 ./scripts/build-compose-images.sh "$core_bin" > .blockwire/compose-images.log 2>&1 &
  images_build=$!
  trap 'kill "$images_build" 2>/dev/null || true' EXIT
fi
npm run typecheck
npm run lint
npx vitest run "$@"
