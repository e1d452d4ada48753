#!/usr/bin/env bash
# Make a CA and a certificate per node for a TLS cluster, with openssl.
#
#   deploy/tls/make-certs.sh DIR [NAME=SAN[,SAN...]]...
#
# Without NAME arguments it makes the set deploy/docker-compose.tls.yml
# expects: controller (one certificate for the three quorum members: their
# addresses and service names), broker1..3 (each for its address on the
# compose network, its service name), all with 127.0.0.1 and localhost, and a client
# certificate "client" for mutual TLS. SAN entries are IP:... or DNS:...
# Keys are EC P-256 and files are made readable by everyone, because the
# containers run as uid 1000: this is for test and demo clusters; keep
# real keys readable by the daemon's user only.
set -euo pipefail
dir=${1:?usage: make-certs.sh DIR [NAME=SAN[,SAN...]]...}
shift
if [ $# -eq 0 ]; then
    set -- "controller=IP:172.28.0.10,IP:172.28.0.20,IP:172.28.0.30,DNS:controller1,DNS:controller2,DNS:controller3,IP:127.0.0.1,DNS:localhost" \
        "broker1=IP:172.28.0.11,DNS:broker1,IP:127.0.0.1,DNS:localhost" \
        "broker2=IP:172.28.0.12,DNS:broker2,IP:127.0.0.1,DNS:localhost" \
        "broker3=IP:172.28.0.13,DNS:broker3,IP:127.0.0.1,DNS:localhost" \
        "client="
fi
command -v openssl >/dev/null || { echo "make-certs.sh: openssl is needed" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if [ ! -f ca.pem ]; then
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 365 \
        -subj "/CN=Weir test CA" 2>/dev/null
fi
for spec in "$@"; do
    name=${spec%%=*}
    san=${spec#*=}
    openssl req -new "${ec[@]}" -keyout "$name.key" -out "$name.csr" \
        -subj "/CN=$name" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
    } > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days 365 -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
done
chmod 0644 ./*.pem ./*.key
chmod 0755 .
echo "certificates in $dir: $(ls ./*.pem | tr '\n' ' ')"
