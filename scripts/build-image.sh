#!/usr/bin/env bash
# Builds the container image where no container registry is reachable (node:20-bookworm-slim
# cannot be pulled): a Debian bookworm base made with debootstrap from the Debian mirror, with
# this machine's Node 20 and npm copied in and a `node` user (uid 1000, as in the official
# image), imported into the local image store; then the Dockerfile built on it
# (`--build-arg NODE_IMAGE=…`) with buildah in chroot isolation, which needs no OCI runtime.
# The image carries a hash of its inputs (label org.blockwire.inputs): when the Dockerfile and
# the sources it copies are unchanged, nothing is built.
# Run as root. Usage: scripts/build-image.sh [image tag, default localhost/blockwire:local]
#
# Running the image with podman here needs runc and lower limits than podman's defaults, which
# this sandbox refuses to set (docs/scaling.md "The container image"):
#   podman --runtime runc run --rm --ulimit nofile=4096:4096 --ulimit nproc=1024:1024 IMAGE --help
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh
source scripts/lib/image.sh

tag=${1:-localhost/blockwire:local}
base=localhost/bw-node20-bookworm:base

apt_install podman podman 'the container image build'
apt_install buildah buildah 'the container image build'
apt_install debootstrap debootstrap 'the base image of the container image'
apt_install runc runc 'running the container image'

# What the Dockerfile copies, and the Dockerfile itself.
hash=$(image_inputs_hash Dockerfile package.json package-lock.json tsconfig.json tsconfig.build.json \
  src indexer api streams stamp electrum devnode cli migrations bin client/network.ts client/event-types.ts)
if image_current "$tag" "$hash"; then
  echo "image $tag: up to date (inputs $hash)"
  exit 0
fi
image_base "$base" node
image_build "$tag" "$hash" . --build-arg NODE_IMAGE="$base"
