#!/usr/bin/env bash
# Installs what only the tests need, beyond what scripts/setup.sh installs to start Blockwire
# (scripts/test.sh runs both): Debian's docker-compose, Chromium, Prometheus's promtool, Electrum,
# redis-sentinel. What builds and runs the compose stack's images: scripts/setup-image.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

# Debian's docker-compose checks compose.yaml against the Compose Specification without a
# Docker engine (scripts/validate-compose.sh, run by the tests).
apt_install docker-compose docker-compose 'compose.yaml validation'
# Debian's Chromium runs the SDK in a real browser (test/integration/client/browser.test.ts,
# driven by playwright-core without a browser download).
apt_install chromium chromium 'the SDK browser test'
# promtool (Debian's prometheus package) checks the alert rules and the Prometheus configuration
# of deploy/ (test/integration/ops/monitoring.test.ts).
apt_install promtool prometheus 'alert rules validation'
# Debian's Electrum wallet (4.3), run headless against Blockwire's Electrum server
# (test/integration/electrum/electrum-wallet.test.ts).
apt_install electrum electrum 'the real Electrum client test'
# Debian's redis-sentinel: three Sentinels watch a real primary and replica in the failover test
# (test/integration/streams/redis-failover.test.ts).
apt_install redis-sentinel redis-sentinel 'the Redis Sentinel failover test'
