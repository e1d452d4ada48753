#!/usr/bin/env bash
# Install what building and testing Weir needs, from Debian's archive.
# Does nothing when everything is already there. Needs root (or sudo).
set -euo pipefail

PKGS=(gcc make cmake pkg-config clang clang-format python3 procps
      libevent-dev protobuf-c-compiler libprotobuf-c-dev libcmocka-dev
      libisal-dev libssl-dev libzstd-dev liblz4-dev libinih-dev
      libclang-rt-14-dev openssl iproute2 iptables)
# extra packages a caller asks for (e.g. the benchmark's peers)
PKGS+=("$@")

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
