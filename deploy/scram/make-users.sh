#!/usr/bin/env bash
# Make the SCRAM users of a TLS + SCRAM cluster (docker-compose.scram.yml):
# a random password for `admin` (the operator) and `broker` (the brokers'
# own logins), written as
#
#   DIR/users       NAME PASSWORD lines: the controller's
#                   bootstrap-users-file (created once, at its first start)
#   DIR/broker.env  WEIR_SASL_USERNAME/WEIR_SASL_PASSWORD for the brokers,
#                   and WEIR_USER/WEIR_PASSWORD for their health checks
#   DIR/admin.env   WEIR_USER/WEIR_PASSWORD for the controller's health
#                   check and for an operator's `weir` (set -a; . admin.env)
#
#   deploy/scram/make-users.sh DIR
#
# Files are mode 600 in a directory of mode 700. The containers run as
# uid 1000, so when run as root the script gives the directory and files to
# uid 1000; otherwise run it as uid 1000.
# Passwords also end up in the containers' environment (docker inspect
# shows them): this is for test and demo clusters.
set -euo pipefail
dir=${1:?usage: make-users.sh DIR}
command -v openssl >/dev/null || { echo "make-users.sh: openssl is needed" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
umask 077
if [ ! -f users ]; then
    admin=$(openssl rand -hex 16)
    broker=$(openssl rand -hex 16)
    printf 'admin %s\nbroker %s\n' "$admin" "$broker" > users
    printf 'WEIR_SASL_USERNAME=broker\nWEIR_SASL_PASSWORD=%s\nWEIR_USER=broker\nWEIR_PASSWORD=%s\n' \
        "$broker" "$broker" > broker.env
    printf 'WEIR_USER=admin\nWEIR_PASSWORD=%s\n' "$admin" > admin.env
fi
chmod 600 users broker.env admin.env
chmod 700 .
if [ "$(id -u)" = 0 ]; then
    chown 1000:1000 . users broker.env admin.env
fi
echo "users in $dir: admin, broker"
