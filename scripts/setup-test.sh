#!/usr/bin/env bash
# Installs what only the tests need, beyond what scripts/setup.sh installs to start Blockwire
# (scripts/test.sh runs both): Debian's docker-compose, Chromium, Prometheus's promtool, Electrum,
# redis-sentinel, and what builds and runs the compose stack's images (podman and its helpers,
# pg_isready).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

# Debian's docker-compose checks compose.yaml against the Compose Specification without a
# Docker engine (scripts/validate-compose.sh, run by the tests).
apt_install docker-compose docker-compose 'compose.yaml validation'
# Debian's Chromium runs the SDK and the console in a real browser
# (test/integration/client/browser.test.ts, test/integration/api/console.test.ts), driven by
# playwright-core without a browser download.
apt_install chromium chromium 'the browser tests (SDK, console)'
# promtool (Debian's prometheus package) checks the alert rules and the Prometheus configuration
# of deploy/ (test/integration/ops/monitoring.test.ts).
apt_install promtool prometheus 'alert rules validation'
# Debian's Electrum wallet (4.3), run headless against Blockwire's Electrum server
# (test/integration/electrum/electrum-wallet.test.ts).
apt_install electrum electrum 'the real Electrum client test'
# Debian's redis-sentinel: three Sentinels watch a real primary and replica in the failover test
# (test/integration/streams/redis-failover.test.ts).
apt_install redis-sentinel redis-sentinel 'the Redis Sentinel failover test'
# The compose stack brought up for real (test/image/compose-stack.test.ts): podman (its Docker
# API serves the docker-compose above), buildah to build the images without an OCI runtime
# (scripts/build-compose-images.sh), runc (crun fails in some sandboxes:
# deploy/local-images/containers.conf), catatonit for compose's `init: true`, the CNI dnsname
# plugin so that services find each other by name, and Debian's pg_isready (postgresql-client:
# the PostgreSQL image's healthcheck; the server itself is embedded-postgres's, from npm).
apt_install podman podman 'the compose stack test'
apt_install buildah buildah 'the compose stack test'
apt_install runc runc 'the compose stack test'
apt_install catatonit catatonit 'the compose stack test'
apt_install_libs 'the compose stack test (service names on the compose network)' golang-github-containernetworking-plugin-dnsname
if ! ls /usr/lib/postgresql/*/bin/pg_isready >/dev/null 2>&1; then apt_get 'the compose stack test (the PostgreSQL image'"'"'s healthcheck)' postgresql-client; fi
