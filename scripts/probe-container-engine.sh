#!/usr/bin/env bash
# Says whether a container engine can run containers here, the way the compose stack will use
# it: podman with deploy/local-images/containers.conf (unless CONTAINERS_CONF names another),
# running a trivial image — the base of the stack's service images (scripts/lib/image.sh), made
# from this machine's files, so no registry is needed — with `podman run --rm IMAGE true`.
# Exit 0: it runs. Exit 2: podman is not installed. Exit 1: podman is installed but could not
# import or run the image; the failing command and its output are printed on stderr.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/image.sh
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/deploy/local-images/containers.conf}
base=localhost/bw-host:base

if ! command -v podman >/dev/null 2>&1; then
  echo "probe: podman is not installed (scripts/setup-test.sh installs it with apt-get)" >&2
  exit 2
fi
mkdir -p "$image_work"
if ! out=$( (flock 9; image_base "$base") 9>"$image_work/build.lock" 2>&1); then
  printf 'probe: importing the trivial image %s failed:\n%s\n' "$base" "$out" >&2
  exit 1
fi
if ! out=$(podman run --rm "$base" true 2>&1); then
  printf 'probe: `CONTAINERS_CONF=%s podman run --rm %s true` failed:\n%s\n' "$CONTAINERS_CONF" "$base" "$out" >&2
  exit 1
fi
echo "probe: podman runs containers (podman run --rm $base true: exit 0)"
