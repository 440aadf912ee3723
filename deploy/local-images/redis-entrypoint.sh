#!/bin/sh
# redis-server without a configuration file, as `redis`; protected mode off, as in the official
# image: the container network is the boundary (compose publishes no Redis port).
set -eu
case "${1:-}" in -*) set -- redis-server "$@" ;; esac
if [ "${1:-}" != redis-server ]; then exec "$@"; fi
if [ "$(id -u)" = 0 ]; then
  chown redis:redis /data
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
shift
exec redis-server --protected-mode no "$@"
