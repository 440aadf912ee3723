# Helpers of the image scripts (sourced; run as root). Where no container registry is reachable,
# the bases are assembled from this machine's own files — a shell, a few utilities, Node 20 and
# the shared libraries `ldd` names for each — and imported into the local image store: no
# package download, seconds instead of the minutes of a debootstrap'ed base with apt-get inside.
# Every image is labelled with a hash of its inputs, so that an unchanged image is never built
# twice.
image_work=${BLOCKWIRE_IMAGE_WORKDIR:-/tmp/blockwire-image}
image_label=org.blockwire.inputs
image_lib=$(readlink -f "${BASH_SOURCE[0]}")

# What the bases hold besides the libraries: a POSIX shell (dash as /bin/sh), the utilities the
# entrypoints, the Dockerfile's RUN lines and npm's scripts call, setpriv (a root entrypoint
# drops to its service's user), and the CA certificates.
image_base_files=(
  /usr/bin/dash /usr/bin/env /usr/bin/cat /usr/bin/chmod /usr/bin/chown /usr/bin/cp /usr/bin/id
  /usr/bin/ln /usr/bin/ls /usr/bin/mkdir /usr/bin/mktemp /usr/bin/mv /usr/bin/rm /usr/bin/rmdir
  /usr/bin/sleep /usr/bin/true /usr/bin/false /usr/bin/touch /usr/bin/dirname /usr/bin/basename
  /usr/bin/head /usr/bin/tail /usr/bin/cut /usr/bin/tr /usr/bin/sort /usr/bin/wc /usr/bin/uname
  /usr/bin/readlink /usr/bin/grep /usr/bin/sed /usr/bin/setpriv
  /etc/ssl/certs/ca-certificates.crt
)

# image_inputs_hash PATH...: one sha256 over the contents and names of every file under PATHs
# (READMEs aside: they change no image), symbolic links followed.
image_inputs_hash() {
  find -L "$@" -type f -not -name "*.md" -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
}

# image_current TAG HASH: true when TAG exists and was built from inputs hashing to HASH.
image_current() {
  [ "$(podman image inspect "$1" --format "{{index .Labels \"$image_label\"}}" 2>/dev/null)" = "$2" ]
}

# image_id TAG: the image's id (an input of every image built on it).
image_id() {
  podman image inspect "$1" --format '{{.Id}}'
}

# rootfs_init DIR: an empty root filesystem with Debian's merged /usr (/bin, /sbin, /lib and
# /lib64 link into /usr), so that every path `ldd` names lands where the loader looks.
rootfs_init() {
  local root=$1 d
  rm -rf "$root"
  mkdir -p "$root"/usr/{bin,sbin,lib,lib64,local/bin} "$root"/{etc,root,home,run,tmp,var/tmp}
  for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 0700 "$root/root"
}

# rootfs_path PATH: PATH as it lies under a merged /usr (/lib/x → /usr/lib/x, /bin/x → /usr/bin/x).
rootfs_path() {
  case "$1" in
    /bin/* | /sbin/* | /lib/* | /lib64/*) echo "/usr$1" ;;
    *) echo "$1" ;;
  esac
}

# rootfs_libs DIR FILE...: copies into DIR the system libraries (under /lib or /usr/lib) `ldd`
# names for each FILE. The libraries a program finds beside itself (an RPATH such as
# $ORIGIN/../lib) travel with the directory that holds them.
rootfs_libs() {
  local root=$1 file lib dest; shift
  for file in "$@"; do
    for lib in $(ldd "$file" 2>/dev/null | awk '{ p = ($2 == "=>") ? $3 : $1 } p ~ /^\/(usr\/)?lib(64)?\// { print p }'); do
      dest=$root$(rootfs_path "$lib")
      [ -e "$dest" ] && continue
      mkdir -p "$(dirname "$dest")"
      cp -L "$lib" "$dest"
    done
  done
}

# rootfs_add DIR FILE...: copies each FILE (through symbolic links) to its own path under DIR,
# with its libraries (rootfs_libs).
rootfs_add() {
  local root=$1 file dest; shift
  for file in "$@"; do
    [ -e "$file" ] || { echo "image: $file is missing on this machine" >&2; return 1; }
    dest=$root$(rootfs_path "$file")
    mkdir -p "$(dirname "$dest")"
    cp -L "$file" "$dest"
    rootfs_libs "$root" "$file"
  done
}

# rootfs_users DIR: root, `node` (uid 1000, as in the official node image) and the users the
# service images run as (bitcoin, postgres, redis), with /bin/sh as /usr/bin/dash and name
# lookups from files and DNS.
rootfs_users() {
  local root=$1
  ln -sf dash "$root/usr/bin/sh"
  cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
bitcoin:x:997:997::/home/bitcoin:/usr/sbin/nologin
redis:x:998:998::/data:/usr/sbin/nologin
postgres:x:999:999::/var/lib/postgresql:/bin/sh
node:x:1000:1000::/home/node:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
  cat > "$root/etc/group" <<'EOF'
root:x:0:
bitcoin:x:997:
redis:x:998:
postgres:x:999:
node:x:1000:
nogroup:x:65534:
EOF
  printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' > "$root/etc/nsswitch.conf"
  mkdir -p "$root/home/node" "$root/home/bitcoin" "$root/var/lib/postgresql"
  chown 1000:1000 "$root/home/node"
  chown 997:997 "$root/home/bitcoin"
  chown 999:999 "$root/var/lib/postgresql"
}

# image_base TAG [node]: imports a base assembled from this machine's files as TAG, unless TAG
# is current. With `node`, this machine's Node 20 and npm go in too, as in the official image
# (/usr/local/bin/node, npm and npx), npm trusting the machine's CA bundle (a machine behind a
# TLS-inspecting proxy has its proxy's CA there).
image_base() {
  local tag=$1 with_node=${2:-} node_bin npm_dir inputs hash root
  inputs=("${image_base_files[@]}" "$image_lib")
  if [ "$with_node" = node ]; then
    node_bin=$(readlink -f "$(command -v node)")
    case "$("$node_bin" --version)" in v20.*) ;; *) echo "image: Node 20 is needed on this machine to copy into the base" >&2; return 1 ;; esac
    npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
    inputs+=("$node_bin" "$npm_dir")
  fi
  hash=$(image_inputs_hash "${inputs[@]}")
  if image_current "$tag" "$hash"; then return 0; fi
  root="$image_work/rootfs-$$"
  rootfs_init "$root"
  rootfs_add "$root" "${image_base_files[@]}"
  rootfs_users "$root"
  if [ "$with_node" = node ]; then
    install -m 0755 "$node_bin" "$root/usr/local/bin/node"
    rootfs_libs "$root" "$node_bin"
    mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/local/etc"
    cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
    printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nupdate-notifier=false\n' > "$root/usr/local/etc/npmrc"
  fi
  tar -C "$root" --numeric-owner -c . | podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL $image_label=$hash" \
    --change 'CMD ["/bin/sh"]' - "$tag" >/dev/null
  rm -rf "$root"
  podman image inspect "$tag" --format "image $tag: {{.Size}} bytes (from this machine's files)"
}

# image_build TAG HASH CONTEXT [buildah args...]: builds CONTEXT (chroot isolation: no OCI
# runtime needed; Docker format: the OCI format drops HEALTHCHECK) labelled with HASH.
image_build() {
  local tag=$1 hash=$2 context=$3; shift 3
  buildah bud --isolation chroot --format docker --layers --jobs 2 \
    --label "$image_label=$hash" "$@" -t "$tag" "$context"
  podman image inspect "$tag" --format "image $tag: {{.Size}} bytes, user '{{.Config.User}}'{{if .Config.Healthcheck}}, healthcheck {{.Config.Healthcheck.Test}}{{end}}"
}
