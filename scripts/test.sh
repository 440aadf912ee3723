#!/usr/bin/env bash
# Installs what Blockwire needs (scripts/setup.sh) and what only its tests need
# (scripts/setup-test.sh), then runs the whole suite: type check, lint (architecture rules, no
# cycles) and every vitest project. The tests start their own PostgreSQL, Redis, throwaway
# regtest Bitcoin Core nodes (BITCOIND_BIN, else ../shared/bitcoin-core/bin/bitcoind; missing
# under CI=1 fails the suite) and the devnode stand-in, on loopback ports, and bring the compose
# stack up with podman (its images built from this machine's files; scripts/test-image.sh runs
# that test alone).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-test.sh
export CI="${CI:-1}"
# The type check and the lint are independent and each mostly one core: side by side on the
# two cores (the type check's output follows the lint's; either failing fails the run).
typecheck_log="$(mktemp)"
trap 'rm -f "$typecheck_log"' EXIT
npm run typecheck >"$typecheck_log" 2>&1 &
typecheck=$!
lint=0
npm run lint || lint=$?
typecheck_status=0
wait "$typecheck" || typecheck_status=$?
cat "$typecheck_log"
if [ "$lint" -ne 0 ] || [ "$typecheck_status" -ne 0 ]; then
  echo "test: type check exit $typecheck_status, lint exit $lint" >&2
  exit 1
fi
npx vitest run "$@"
