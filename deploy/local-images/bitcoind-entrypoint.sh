#!/bin/sh
# `-flags` are bitcoind's; bitcoind starts as root only to own its volumes (created empty and
# root-owned by the engine), then runs as `bitcoin`.
set -eu
case "${1:-}" in -*) set -- bitcoind "$@" ;; esac
if [ "${1:-}" = bitcoind ] && [ "$(id -u)" = 0 ]; then
  chown bitcoin:bitcoin /home/bitcoin/.bitcoin /home/bitcoin/cookie
  exec setpriv --reuid=bitcoin --regid=bitcoin --init-groups env HOME=/home/bitcoin "$@"
fi
exec "$@"
