#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the weir container image (weir:latest by default) with no registry:
# FROM scratch, holding weir-controller, weir-broker and weir, the shared
# libraries they link (found with ldd), the dynamic loader and a minimal
# /etc. Runs as uid 1000; data lives in /data.
#
#   deploy/image/build-image.sh            # builds ./build first if needed
#
# Environment: BUILD_DIR [build], IMAGE [weir:latest], NO_BUILD=1 to use
# the binaries already in BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
IMAGE=${IMAGE:-weir:latest}
BINS=(controller/weir-controller broker/weir-broker client/cli/weir)

if [ "${NO_BUILD:-0}" != 1 ]; then
    BUILD_DIR=$BUILD_DIR deploy/build.sh
fi
command -v docker >/dev/null || { echo "build-image: docker not found" >&2; exit 1; }

CTX=$(mktemp -d /tmp/weir-image.XXXXXX)
trap 'rm -rf "$CTX"' EXIT
RFS=$CTX/rootfs
mkdir -p "$RFS/usr/bin" "$RFS/etc" "$CTX/owned/data" "$CTX/owned/tmp"

# binaries, their libraries and the loader, at the paths they expect
libs=()
for b in "${BINS[@]}"; do
    src=$BUILD_DIR/$b
    [ -x "$src" ] || { echo "build-image: $src is missing" >&2; exit 1; }
    install -m 0755 "$src" "$RFS/usr/bin/"
    while read -r lib; do
        libs+=("$lib")
    done < <(ldd "$src" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}')
done
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
    mkdir -p "$RFS$(dirname "$lib")"
    cp -L "$lib" "$RFS$lib"
done

cat >"$RFS/etc/passwd" <<'PW'
root:x:0:0:root:/root:/usr/bin/weir
weir:x:1000:1000:weir:/data:/usr/bin/weir
nobody:x:65534:65534:nobody:/nonexistent:/usr/bin/weir
PW
cat >"$RFS/etc/group" <<'GR'
root:x:0:
weir:x:1000:
nogroup:x:65534:
GR
echo 'hosts: files dns' >"$RFS/etc/nsswitch.conf"

cat >"$CTX/Dockerfile" <<'DF'
FROM scratch
COPY rootfs/ /
COPY --chown=1000:1000 owned/ /
USER 1000:1000
ENV WEIR_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 9090 9092
DF

echo "== building $IMAGE from $(du -sh "$RFS" | cut -f1) of files"
docker build -q -t "$IMAGE" "$CTX"
docker image ls "$IMAGE"
