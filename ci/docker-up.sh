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

if [ "$(id -u)" != 0 ]; then
  echo "docker-up: no Docker engine answers and this is not root: start dockerd yourself (or run as root)" >&2
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "docker-up: installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null
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
