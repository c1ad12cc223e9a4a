#!/bin/sh
# The system packages reelfarm needs, on Debian or Ubuntu, installed only when missing.
#
#   scripts/setup-system.sh          to serve: the EGL/GL libraries skia-python loads even to draw
#                                    on the CPU, and Python's venv module
#   scripts/setup-system.sh --test   also what the tests use: PostgreSQL, PgBouncer and Redis server
#                                    binaries (the tests start their own throwaway servers from them), the
#                                    offline translation engine, Apertium, with English-Spanish,
#                                    Chromium, the headless browser of the console's tests,
#                                    Node.js with npm, for the TypeScript client's test, and
#                                    iproute2 and util-linux (ip, unshare), with which the tests put
#                                    servers and nodes on hosts of their own (tests/netbed.py), and
#                                    Docker (docker.io, docker-compose) with debootstrap, which build
#                                    and run the deploy/ images and compose farm (tests/deploy/), and
#                                    Prometheus, for promtool, which checks and unit-tests the alert
#                                    rules (deploy/prometheus)
#
# Runs apt-get as root, or through sudo otherwise. Safe to run again: when everything is there
# it does nothing, not even `apt-get update`.
set -eu

packages="libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri"
case "${1:-}" in
  --test) packages="$packages postgresql pgbouncer redis-server apertium apertium-eng-spa chromium iproute2 util-linux docker.io docker-compose debootstrap prometheus" ;;
  "") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac
# Debian's own python3 has no ensurepip (so no `python3 -m venv`) without python3-venv.
if command -v python3 >/dev/null && ! python3 -c 'import ensurepip' 2>/dev/null; then
  packages="$packages python3-venv"
fi

# A node that brings its own npm (NodeSource, nvm) is kept: Debian's npm package conflicts with it.
if [ "${1:-}" = "--test" ] && ! command -v npm >/dev/null; then
  packages="$packages nodejs npm"
fi

missing=""
for package in $packages; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing="$missing $package"
  fi
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "reelfarm needs these system packages (Debian/Ubuntu names):$missing" >&2
  exit 1
fi
as_root=""
if [ "$(id -u)" -ne 0 ]; then
  as_root="sudo"
fi
echo "installing:$missing"
$as_root apt-get update -qq
# shellcheck disable=SC2086  # one word per package
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
