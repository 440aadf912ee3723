#!/usr/bin/env bash
# Builds every image of the compose stack where no container registry is reachable: Blockwire's
# (scripts/build-image.sh) and, from Debian packages on a debootstrap'ed Debian bookworm base,
# the third-party services compose.yaml names — PostgreSQL 15, Redis 7.0 and Bitcoin Core (the
# binaries of the directory given, copied into the image) — tagged as
# deploy/local-images/compose.local.yaml names them. An image whose inputs are unchanged (label
# org.blockwire.inputs) is not rebuilt; a second run waits for the first (a lock), then finds
# its images current. Run as root.
# Usage: scripts/build-compose-images.sh BITCOIN_CORE_BIN_DIR   (holding bitcoind, bitcoin-cli)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh
source scripts/lib/image.sh

core_bin=${1:?usage: scripts/build-compose-images.sh BITCOIN_CORE_BIN_DIR}
base=localhost/bw-bookworm:base
dir=deploy/local-images

mkdir -p "$image_work"
exec 9>"$image_work/build.lock"
flock 9

apt_install podman podman 'the compose stack images'
apt_install buildah buildah 'the compose stack images'
apt_install debootstrap debootstrap 'the base image of the compose stack images'

./scripts/build-image.sh localhost/blockwire:local

# service NAME TAG CONTEXT INPUTS...: builds $dir/NAME.Containerfile in CONTEXT unless current.
service() {
  local name=$1 tag=$2 context=$3; shift 3
  local hash
  hash=$(image_inputs_hash "$dir/$name.Containerfile" "$dir/$name-entrypoint.sh" "$@")
  if image_current "$tag" "$hash"; then
    echo "image $tag: up to date (inputs $hash)"
    return 0
  fi
  image_base "$base"
  image_build "$tag" "$hash" "$context" -f "$dir/$name.Containerfile" --build-arg BASE_IMAGE="$base"
}

service postgres localhost/bw-postgres:15 "$dir"
service redis localhost/bw-redis:7.0 "$dir"
# Bitcoin Core's binaries join the entrypoint in a context of their own (never in the repository).
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$core_bin/bitcoind" "$core_bin/bitcoin-cli" "$dir/bitcoind-entrypoint.sh" "$context/"
# The hash reads the binaries where they are (the context is a new directory each run).
service bitcoind localhost/bw-bitcoind:30.0 "$context" "$core_bin/bitcoind" "$core_bin/bitcoin-cli"
