#!/usr/bin/env bash
# Build reelfarm's images on this Docker host: the API and CPU node image (deploy/docker/Dockerfile)
# as reelfarm:VERSION, and with --gpu the GPU node image as reelfarm-gpu:VERSION.
#
# BASE picks the base image. Where a registry serves python:3.11-slim-bookworm, name it; where none
# can be reached, the default, reelfarm-base:bookworm, is made here from Debian's own packages
# (debootstrap of bookworm with Python 3.11, then docker import), once. pip inside the build uses
# this machine's CA bundle (PIP_CERT, else the system's) and PIP_CONFIG_FILE when set, passed as
# BuildKit secrets, which no layer keeps. Needs root for debootstrap, and a Docker CLI that builds
# with BuildKit (Debian's docker.io does; a newer CLI needs its buildx plugin).
#
#   scripts/build-images.sh [--gpu]            TAG=reelfarm:next scripts/build-images.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(python3 -c "import configparser; c = configparser.ConfigParser(); c.read('setup.cfg'); print(c['metadata']['version'])")
BASE=${BASE:-reelfarm-base:bookworm}
TAG=${TAG:-reelfarm:$version}
GPU_TAG=${GPU_TAG:-reelfarm-gpu:$version}
DOCKER=${DOCKER:-docker}
if ! "$DOCKER" buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then
    DOCKER=/usr/bin/docker  # Debian's docker.io: BuildKit without buildx
fi

if [ "$BASE" = reelfarm-base:bookworm ] && ! "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then
    rootfs=$(mktemp -d)
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" \
        "${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* \
        "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "$DOCKER" import --change 'CMD ["/bin/bash"]' - "$BASE"
fi

secrets=()
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
if [ -s "$ca" ]; then secrets+=(--secret "id=ca.crt,src=$ca"); fi
if [ -n "${PIP_CONFIG_FILE:-}" ]; then secrets+=(--secret "id=pip.conf,src=$PIP_CONFIG_FILE"); fi

DOCKER_BUILDKIT=1 "$DOCKER" build --network host --build-arg BASE="$BASE" "${secrets[@]}" \
    -f deploy/docker/Dockerfile -t "$TAG" .
if [ "${1:-}" = --gpu ]; then
    DOCKER_BUILDKIT=1 "$DOCKER" build --network host --build-arg BASE="$BASE" "${secrets[@]}" \
        -f deploy/docker/Dockerfile.gpu -t "$GPU_TAG" .
fi
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^(${TAG%%:*}|${GPU_TAG%%:*}):" || true
