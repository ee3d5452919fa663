#!/usr/bin/env bash
# docker-up.sh makes sure a Docker engine answers on this machine.
# Idempotent: if `docker info` answers, it does nothing. Otherwise it installs
# Debian's docker.io when dockerd is missing, starts dockerd in the background
# with its log in a file, and waits (bounded) for the socket to answer.
set -euo pipefail

log=${DOCKERD_LOG:-/var/log/mcpsandbox-dockerd.log}
wait_s=${DOCKERD_WAIT:-60}

answers() { timeout 10 docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers; then
  exit 0
fi

# Two suites started at once on a fresh machine (CI beside a developer's
# run) would both install and both start dockerd: the second apt-get
# fails on dpkg's lock. One lock for this script and host-deps.sh; the
# engine's check is made again under it. -o: dockerd, started
# below, must not hold the lock for ever.
if [ -z "${MCPSANDBOX_HOST_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
  export MCPSANDBOX_HOST_LOCKED=1
  exec flock -o "${MCPSANDBOX_HOST_LOCK:-/tmp/mcpsandbox-host.lock}" bash "$0" "$@"
fi
if command -v docker >/dev/null 2>&1 && answers; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "docker-up: no Docker engine answers and this is not root: start dockerd yourself (or run as root)" >&2
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "docker-up: installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  # apt of another user (not this lock's) is waited for, not failed on.
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends docker.io iptables >/dev/null
fi

# A pid file left by a dead dockerd stops a new one from starting.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  rm -f /var/run/docker.pid
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log: $log)" >&2
  mkdir -p "$(dirname "$log")"
  nohup dockerd --storage-driver=overlay2 >"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 "$wait_s"); do
  if answers; then
    exit 0
  fi
  sleep 1
done

echo "docker-up: dockerd did not answer within ${wait_s}s; last lines of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
