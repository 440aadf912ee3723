#!/usr/bin/env bash
# Quick start: installs what is missing (scripts/setup.sh), then runs `blockwire start` with
# embedded defaults (embedded PostgreSQL, a redis-server child, and the built-in regtest
# stand-in when no bitcoind is configured).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec ./bin/blockwire.js start "$@"
