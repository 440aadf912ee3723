#!/usr/bin/env bash
# The compose stack brought up for real (test/image/compose-stack.test.ts): installs what the
# tests and the image builds need, builds the images (scripts/build-compose-images.sh: rebuilt
# only when their inputs change; ~25 min from nothing on a 2-core machine, ~2 min after a source
# change, under a second when nothing changed), then runs the test. Not part of scripts/test.sh,
# whose whole suite must stay under 20 minutes. Root (podman), with Bitcoin Core's binaries at
# $(dirname $BITCOIND_BIN) or ../shared/bitcoin-core/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-test.sh
./scripts/setup-image.sh
export CI="${CI:-1}"
core_bin=$(dirname "${BITCOIND_BIN:-../shared/bitcoin-core/bin/bitcoind}")
nice -n 10 ./scripts/build-compose-images.sh "$core_bin"
BLOCKWIRE_IMAGE_TESTS=1 npx vitest run --project image "$@"
