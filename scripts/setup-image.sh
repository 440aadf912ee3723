#!/usr/bin/env bash
# Installs what builds and runs the compose stack's images (scripts/test-image.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apt.sh

# The compose stack brought up for real (test/image/compose-stack.test.ts): podman
# (its Docker API serves Debian's docker-compose), buildah and debootstrap to build the images
# where no registry is reachable (scripts/build-compose-images.sh), runc (crun fails here),
# catatonit for compose's `init: true`, and the CNI dnsname plugin so that services find each
# other by name.
apt_install podman podman 'the compose stack test'
apt_install buildah buildah 'the compose stack test'
apt_install debootstrap debootstrap 'the compose stack test'
apt_install runc runc 'the compose stack test'
apt_install catatonit catatonit 'the compose stack test'
apt_install_libs 'the compose stack test (service names on the compose network)' golang-github-containernetworking-plugin-dnsname
