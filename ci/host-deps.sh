#!/usr/bin/env bash
# host-deps.sh installs what building the runtime images reads from the
# host: a static busybox (Debian's busybox-static) for /bin/sh and the
# applets; and, for the build image (mcpsandbox bulk runs npm install
# scripts and node-gyp in it), gcc, g++, make (build-essential) and the
# node headers of the host's node (/usr/include/node: NodeSource's nodejs
# ships them; Debian's nodejs has them in libnode-dev). Idempotent; node,
# npm and python3 come with the machine. What the build image lacks only
# stops bulk's install scripts, so it is installed when missing but
# never fails this script.
set -euo pipefail
# One lock with docker-up.sh: two suites started at once on a fresh machine
# would otherwise run apt-get side by side, and the second fails on dpkg's
# lock; every check below is made under it.
if [ -z "${MCPSANDBOX_HOST_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
  export MCPSANDBOX_HOST_LOCKED=1
  exec flock -o "${MCPSANDBOX_HOST_LOCK:-/tmp/mcpsandbox-host.lock}" bash "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
updated=
apt_install() {
  # apt of another user (not this lock's) is waited for, not failed on.
  [ -n "$updated" ] || { apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null; updated=1; }
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >/dev/null
}
if ! file -L /bin/busybox 2>/dev/null | grep -q 'statically linked'; then
  if [ "$(id -u)" != 0 ]; then
    echo "host-deps: /bin/busybox is missing or not static: install busybox-static (as root)" >&2
    exit 1
  fi
  apt_install busybox-static file
fi
build=()
for tool in gcc g++ make; do
  command -v "$tool" >/dev/null 2>&1 || build=(build-essential)
done
node_headers=()
if [ ! -f /usr/include/node/node_api.h ] && dpkg-query -W -f='${Version}' nodejs 2>/dev/null | grep -qv nodesource; then
  node_headers=(libnode-dev)
fi
if [ ${#build[@]} -gt 0 ] || [ ${#node_headers[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "host-deps: warning: the build image needs ${build[*]} ${node_headers[*]} (as root); bulk's install scripts fail without" >&2
  else
    apt_install "${build[@]}" "${node_headers[@]}" || echo "host-deps: warning: could not install ${build[*]} ${node_headers[*]}; bulk's install scripts fail without" >&2
  fi
fi
# The Python fixture's wheels (the tests' package index) are built with
# Debian's python3-build, python3-wheel and python3-setuptools, for
# /usr/bin/python3 (the python image's); only those tests need them.
if ! /usr/bin/python3 -c 'import build, setuptools, wheel' >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "host-deps: warning: the Python fixture needs python3-build python3-wheel python3-setuptools (as root)" >&2
  else
    apt_install python3-build python3-wheel python3-setuptools || echo "host-deps: warning: could not install python3-build python3-wheel python3-setuptools; the Python fixture's tests fail under CI=true" >&2
  fi
fi
