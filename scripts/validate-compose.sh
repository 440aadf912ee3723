#!/usr/bin/env bash
# Validates compose.yaml the way `docker compose config` does, without a Docker engine: with
# Debian's docker-compose (the Compose Specification schema, variable interpolation, env files,
# profiles, references between services), once plain and once per deploy/*.env. Installs
# docker-compose with apt-get when it is missing and we are root. Exit 0 when all are valid.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker-compose >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "validate-compose: installing docker-compose with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  else
    echo "validate-compose: docker-compose is missing (apt-get install docker-compose)" >&2
    exit 2
  fi
fi

file="${1:-compose.yaml}"
status=0
check() {
  local label="$1"; shift
  if out=$(docker-compose "$@" -f "$file" --profile regtest-miner --profile monitoring config -q 2>&1); then
    echo "valid: $file ($label)"
  else
    echo "INVALID: $file ($label)"; echo "$out" | sed 's/^/  /'
    status=1
  fi
}
# Plain: defaults only, no .env of the checkout.
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
check defaults --env-file "$empty"
for env in deploy/*.env; do check "$env" --env-file "$env"; done
exit $status
