#!/usr/bin/env bash
# Start the docker-compose cluster, making what a variant needs on its
# first start:
#
#   deploy/compose-up.sh            plain (deploy/docker-compose.yml)
#   deploy/compose-up.sh --tls      + mutual TLS (certificates: tls/make-certs.sh)
#   deploy/compose-up.sh --scram    + TLS, SCRAM logins and ACLs (certificates,
#                                   and users with random passwords:
#                                   scram/make-users.sh)
#
# Certificates go to $WEIR_TLS_DIR (default deploy/tls-certs) and users to
# $WEIR_SCRAM_DIR (default deploy/scram-users); existing ones are kept.
# The image must exist (deploy/image/build-image.sh). Stop with
# `docker-compose -f deploy/docker-compose.yml down` (-v drops the data).
#
# The first start formats the controllers (one-shot `weir-controller
# --format` on each member's volume, one cluster id: $WEIR_CLUSTER_ID,
# default weir-compose). It runs only when none of the project's controller
# volumes exists: the cluster was never formed. A member whose volume was
# lost later is NOT formatted again: it starts empty and rejoins the
# quorum. The project is $COMPOSE_PROJECT_NAME (default: deploy, the
# name docker-compose gives these files).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
files=(-f "$here/docker-compose.yml")
tls=0
scram=0
case "${1:-}" in
    "") ;;
    --tls) tls=1; shift ;;
    --scram) tls=1; scram=1; shift ;;
    *) echo "usage: $0 [--tls|--scram] [docker-compose up options]" >&2; exit 2 ;;
esac
export WEIR_TLS_DIR=${WEIR_TLS_DIR:-$here/tls-certs}
export WEIR_SCRAM_DIR=${WEIR_SCRAM_DIR:-$here/scram-users}
if [ "$tls" = 1 ]; then
    files+=(-f "$here/docker-compose.tls.yml")
    [ -f "$WEIR_TLS_DIR/ca.pem" ] || "$here/tls/make-certs.sh" "$WEIR_TLS_DIR"
fi
if [ "$scram" = 1 ]; then
    files+=(-f "$here/docker-compose.scram.yml")
    [ -f "$WEIR_SCRAM_DIR/users" ] || "$here/scram/make-users.sh" "$WEIR_SCRAM_DIR"
fi
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-deploy}
# With SCRAM the controller runs alone (no SASL between quorum members;
# docker-compose.scram.yml): only controller1 is started. With TLS alone
# the three members form the quorum over mutual TLS.
controllers=(controller1 controller2 controller3)
services=()
if [ "$scram" = 1 ]; then
    controllers=(controller1)
    services=(controller1 broker1 broker2 broker3)
fi
formed=0
for c in controller1 controller2 controller3; do
    if docker volume inspect "${COMPOSE_PROJECT_NAME}_$c-data" >/dev/null 2>&1; then
        formed=1
    fi
done
if [ "$formed" = 0 ]; then
    for c in "${controllers[@]}"; do
        echo "formatting $c (cluster id ${WEIR_CLUSTER_ID:-weir-compose})"
        docker-compose "${files[@]}" run --rm --no-deps -T "$c" \
            /usr/bin/weir-controller --format --data-dir /data \
            --cluster-id "${WEIR_CLUSTER_ID:-weir-compose}" >/dev/null
    done
fi
docker-compose "${files[@]}" up -d "$@" "${services[@]}"
if [ "$scram" = 1 ]; then
    echo "log in as admin: set -a; . $WEIR_SCRAM_DIR/admin.env; set +a"
fi
if [ "$tls" = 1 ]; then
    echo "trust the cluster's CA: export WEIR_CA=$WEIR_TLS_DIR/ca.pem"
fi
if [ "$tls" = 1 ] && [ "$scram" = 0 ]; then
    echo "present the client certificate: export WEIR_CERT=$WEIR_TLS_DIR/client.pem WEIR_KEY=$WEIR_TLS_DIR/client.key"
fi
