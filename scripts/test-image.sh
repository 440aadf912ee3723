#!/usr/bin/env bash
# The compose stack brought up for real, alone (test/image/compose-stack.test.ts, the vitest
# project `image`; scripts/test.sh runs it with the rest of the suite): installs what it needs,
# then builds the images (scripts/build-compose-images.sh: ~3-4 min from nothing, nothing when
# their inputs are unchanged) and runs the test. Root (podman), with Bitcoin Core's binaries at
# $(dirname $BITCOIND_BIN) or ../shared/bitcoin-core/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-test.sh
export CI="${CI:-1}"
npx vitest run --project image "$@"
