#!/usr/bin/env bash
# Builds the container image where no container registry is reachable (node:20-bookworm-slim
# cannot be pulled): a Debian bookworm base made with debootstrap from the Debian mirror, with
# this machine's Node 20 and npm copied in and a `node` user (uid 1000, as in the official
# image), imported into the local image store; then the Dockerfile built on it
# (`--build-arg NODE_IMAGE=…`) with buildah in chroot isolation, which needs no OCI runtime.
# Run as root. Usage: scripts/build-image.sh [image tag, default localhost/blockwire:local]
#
# Running the image with podman here needs runc and lower limits than podman's defaults, which
# this sandbox refuses to set (docs/scaling.md "The container image"):
#   podman --runtime runc run --rm --ulimit nofile=4096:4096 --ulimit nproc=1024:1024 IMAGE --help
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

tag=${1:-localhost/blockwire:local}
base=localhost/bw-node20-bookworm:base
work=${BLOCKWIRE_IMAGE_WORKDIR:-/tmp/blockwire-image}

apt_install podman podman 'the container image build'
apt_install buildah buildah 'the container image build'
apt_install debootstrap debootstrap 'the base image of the container image'
apt_install runc runc 'running the container image'

node_bin=$(command -v node)
case "$("$node_bin" --version)" in v20.*) ;; *) echo "build-image: Node 20 is needed on this machine to copy into the base" >&2; exit 1 ;; esac
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")

if ! podman image exists "$base"; then
  rootfs="$work/rootfs"
  rm -rf "$rootfs"
  mkdir -p "$work"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
  install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  chroot "$rootfs" sh -c 'groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/sh node'
  # npm inside the build trusts the CA bundle of this machine, mounted read-only by the build
  # below (a machine behind a TLS-inspecting proxy needs its own CA).
  mkdir -p "$rootfs/usr/local/etc"
  echo 'cafile=/run/build-ca.crt' > "$rootfs/usr/local/etc/npmrc"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import - "$base"
fi

# Docker format: the OCI format has no HEALTHCHECK.
buildah bud --isolation chroot --format docker --layers --volume /etc/ssl/certs/ca-certificates.crt:/run/build-ca.crt:ro --build-arg NODE_IMAGE="$base" -t "$tag" .
podman image inspect "$tag" --format 'image {{.RepoTags}}: {{.Size}} bytes, user {{.Config.User}}, healthcheck {{.Config.Healthcheck.Test}}'
