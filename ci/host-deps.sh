#!/usr/bin/env bash
# host-deps.sh installs what building the runtime images reads from the
# host: a static busybox (Debian's busybox-static) for /bin/sh and the
# applets. Idempotent; node, npm and python3 come with the machine.
set -euo pipefail
if file -L /bin/busybox 2>/dev/null | grep -q 'statically linked'; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "host-deps: /bin/busybox is missing or not static: install busybox-static (as root)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends busybox-static file >/dev/null
