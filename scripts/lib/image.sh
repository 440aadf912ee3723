# Helpers of the image scripts (sourced; run as root): a Debian bookworm base made with
# debootstrap where no container registry is reachable, and images labelled with a hash of
# their inputs so that an unchanged image is never built twice.
image_work=${BLOCKWIRE_IMAGE_WORKDIR:-/tmp/blockwire-image}
image_label=org.blockwire.inputs

# image_inputs_hash PATH...: one sha256 over the contents and names of every file under PATHs
# (READMEs aside: they change no image).
image_inputs_hash() {
  find "$@" -type f -not -name "*.md" -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
}

# image_current TAG HASH: true when TAG exists and was built from inputs hashing to HASH.
image_current() {
  [ "$(podman image inspect "$1" --format "{{index .Labels \"$image_label\"}}" 2>/dev/null)" = "$2" ]
}

# image_base TAG [NODE]: imports a debootstrap'ed Debian bookworm (minbase) as TAG unless it
# exists; with NODE=node, this machine's Node 20 and npm go in too, with a `node` user (uid 1000,
# as in the official node image). Services are never started inside (policy-rc.d), so that
# Debian packages install quietly in image builds.
image_base() {
  local tag=$1 with_node=${2:-}
  if podman image exists "$tag"; then return 0; fi
  local rootfs="$image_work/rootfs-$$"
  rm -rf "$rootfs"
  mkdir -p "$image_work"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
  printf '#!/bin/sh\nexit 101\n' > "$rootfs/usr/sbin/policy-rc.d"
  chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
  if [ "$with_node" = node ]; then
    local node_bin npm_dir
    node_bin=$(command -v node)
    case "$("$node_bin" --version)" in v20.*) ;; *) echo "image: Node 20 is needed on this machine to copy into the base" >&2; return 1 ;; esac
    npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
    install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
    mkdir -p "$rootfs/usr/local/lib/node_modules"
    cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
    chroot "$rootfs" sh -c 'groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/sh node'
    # npm inside the build trusts the CA bundle of this machine, mounted read-only by the build
    # (a machine behind a TLS-inspecting proxy needs its own CA).
    mkdir -p "$rootfs/usr/local/etc"
    echo 'cafile=/run/build-ca.crt' > "$rootfs/usr/local/etc/npmrc"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import - "$tag"
  rm -rf "$rootfs"
}

# image_build TAG HASH CONTEXT [buildah args...]: builds CONTEXT (chroot isolation: no OCI
# runtime needed; Docker format: the OCI format drops HEALTHCHECK) labelled with HASH.
image_build() {
  local tag=$1 hash=$2 context=$3; shift 3
  buildah bud --isolation chroot --format docker --layers \
    --volume /etc/ssl/certs/ca-certificates.crt:/run/build-ca.crt:ro \
    --label "$image_label=$hash" "$@" -t "$tag" "$context"
  podman image inspect "$tag" --format "image $tag: {{.Size}} bytes, user '{{.Config.User}}'{{if .Config.Healthcheck}}, healthcheck {{.Config.Healthcheck.Test}}{{end}}"
}
