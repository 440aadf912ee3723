#!/usr/bin/env bash
# Installs what Blockwire needs (scripts/setup.sh) and what only its tests need
# (scripts/setup-test.sh), then runs the whole suite: type check, lint (architecture rules, no
# cycles) and every vitest project. The tests start their own PostgreSQL, Redis, throwaway
# regtest Bitcoin Core nodes (BITCOIND_BIN, else ../shared/bitcoin-core/bin/bitcoind; missing
# under CI=1 fails the suite) and the devnode stand-in, on loopback ports, and bring the compose
# stack up with podman (its images built from this machine's files; scripts/test-image.sh runs
# that test alone). The whole suite (no arguments) also runs, beside it, the unit tests, the quick
# start and the SDK examples once more on Node 24 (scripts/test-node24.sh), so a Node-24-only
# break fails too.
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
# Beside the suite (unit and integration), each in a vitest process of its own, with their output
# printed after the suite's and any failing failing the run:
# - the compose stack test (the vitest project `image`): its image build (minutes, at nice 10)
#   and its waits on the containers held one of the suite's two workers for ~8 minutes, in which
#   that worker ran nothing else; beside the suite, the build takes only the CPU the suite's
#   files leave and both workers keep running them;
# - the benchmarks' quick run (every bench script end to end, ~4 min; BLOCKWIRE_BENCH_SMOKE=1
#   selects it: vitest.config.ts), then the unit tests, the quick start and the SDK examples once
#   more on Node 24 (scripts/test-node24.sh, ~2-3 min), which after the suite added its whole
#   length to the run.
# With arguments (a file, a project), only what they name runs.
if [ "$#" -gt 0 ]; then
  exec npx vitest run "$@"
fi
image_log="$(mktemp -t blockwire-image.XXXXXX)"
bench_log="$(mktemp -t blockwire-bench-smoke.XXXXXX)"
node24_log="$(mktemp -t blockwire-node24.XXXXXX)"
image_status="$(mktemp -t blockwire-image-status.XXXXXX)"
side_status="$(mktemp -t blockwire-side-status.XXXXXX)"
(
  i=0
  npx vitest run --project image >"$image_log" 2>&1 || i=$?
  echo "$i" >"$image_status"
) &
image_pid=$!
(
  b=0
  BLOCKWIRE_BENCH_SMOKE=1 npx vitest run >"$bench_log" 2>&1 || b=$?
  n=0
  ./scripts/test-node24.sh >"$node24_log" 2>&1 || n=$?
  echo "$b $n" >"$side_status"
) &
side_pid=$!
suite_log="$(mktemp -t blockwire-suite.XXXXXX)"
status=0
npx vitest run --project unit --project integration 2>&1 | tee "$suite_log" || status=$?
wait "$image_pid" || true
wait "$side_pid" || true
read -r image_status_code <"$image_status" || image_status_code=1
read -r bench_status node24_status <"$side_status" || { bench_status=1; node24_status=1; }
rm -f "$image_status" "$side_status"
echo "== the compose stack (vitest --project image), exit $image_status_code:"
cat "$image_log"
echo "== the unit tests, the quick start and the SDK examples on Node 24 (scripts/test-node24.sh), exit $node24_status:"
cat "$node24_log"
rm -f "$node24_log"
echo "== the benchmarks' quick run (npm run bench -- --quick), exit $bench_status:"
cat "$bench_log"
rm -f "$bench_log"
# CI keeps only the tail of this output: a failure of the suite is repeated last, its failing
# files and tests and the first lines of each error, so the tail names what failed.
failures() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^ *(FAIL|×|❯ .*\.test\.ts|AssertionError|Error:|Expected|Received|[-+] )' | head -n 60 || true
}
if [ "$image_status_code" -ne 0 ]; then
  echo "== the compose stack test failed (exit $image_status_code); its failures again:"
  failures "$image_log"
fi
if [ "$status" -ne 0 ]; then
  echo "== the suite failed (exit $status); its failures again:"
  failures "$suite_log"
fi
rm -f "$suite_log" "$image_log"
if [ "$status" -ne 0 ]; then exit "$status"; fi
if [ "$image_status_code" -ne 0 ]; then exit "$image_status_code"; fi
if [ "$node24_status" -ne 0 ]; then exit "$node24_status"; fi
exit "$bench_status"
