#!/usr/bin/env bash
# Quick start: installs what is missing (scripts/setup.sh), then runs `blockwire start` with
# embedded defaults (embedded PostgreSQL, a redis-server child and, when no bitcoind is
# configured, a regtest node: Bitcoin Core when installed - BITCOIND_BIN or bitcoind on the
# PATH - else the built-in regtest stand-in).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec ./bin/blockwire.js start "$@"
