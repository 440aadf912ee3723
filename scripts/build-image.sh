#!/usr/bin/env bash
# Builds the container image where no container registry is reachable (node:20-bookworm-slim
# cannot be pulled): the Dockerfile, unchanged, on a base assembled from this machine's own files
# (scripts/lib/image.sh: its Node 20 and npm, a shell, the libraries they load, a `node` user of
# uid 1000 as in the official image) — `--build-arg NODE_IMAGE=… --build-arg BUILD_PACKAGES=`
# — with buildah in chroot isolation, which needs no OCI runtime. `npm ci` inside reads this
# machine's npm cache through an overlay (what it writes there is dropped), so packages the
# machine already has are not downloaded again. The image carries a hash of its inputs (label
# org.blockwire.inputs): when the Dockerfile, the sources it copies and the base are unchanged,
# nothing is built.
# Run as root. Usage: scripts/build-image.sh [image tag, default localhost/blockwire:local]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/image.sh

tag=${1:-localhost/blockwire:local}
base=localhost/bw-host-node20:base

image_base "$base" node
# What the Dockerfile copies, the Dockerfile itself, and the base.
hash=$( (image_inputs_hash Dockerfile package.json package-lock.json tsconfig.json tsconfig.build.json \
  src indexer api streams stamp electrum devnode cli migrations bin client/network.ts client/event-types.ts; image_id "$base") | sha256sum | cut -c1-32)
if image_current "$tag" "$hash"; then
  echo "image $tag: up to date (inputs $hash)"
  exit 0
fi
cache=()
npm_cache=$(npm config get cache 2>/dev/null || true)
if [ -d "$npm_cache/_cacache" ]; then cache=(--volume "$npm_cache:/root/.npm:O"); fi
image_build "$tag" "$hash" . --build-arg NODE_IMAGE="$base" --build-arg BUILD_PACKAGES= "${cache[@]}"
