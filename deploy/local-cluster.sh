#!/usr/bin/env bash
# Start, stop or show a local Weir cluster on loopback: a controller
# (127.0.0.1:9090, data in ./data/controller) and three brokers
# (127.0.0.1:9092, 9093, 9094, data in ./data/broker-N). Logs go to
# ./data/<node>.log, PIDs to ./data/<node>.pid (DATA_DIR to change ./data).
# Data is not yet replicated between brokers: partitions are placed on three
# brokers and led by one of them, but only the leader holds the records.
#   deploy/local-cluster.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BROKER_BIN=${BIN:-$BUILD/broker/weir-broker}
CONTROLLER_BIN=${CONTROLLER_BIN:-$BUILD/controller/weir-controller}
WEIR=${WEIR:-$BUILD/client/cli/weir}
DATA=${DATA_DIR:-$PWD/data}
CONTROLLER=127.0.0.1:${CONTROLLER_PORT:-9090}
BROKERS=(1 2 3)
port_of() { echo $((9091 + $1)); }
NODES=(controller broker-1 broker-2 broker-3)

pidfile() { echo "$DATA/$1.pid"; }
running() { [ -f "$(pidfile "$1")" ] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }

# Start one node (name, command...) unless it runs; wait for event=started.
start_node() {
    local node=$1; shift
    if running "$node"; then
        echo "$node already running (pid $(cat "$(pidfile "$node")"))"
        return 0
    fi
    local mark=0
    if [ -f "$DATA/$node.log" ]; then mark=$(wc -c <"$DATA/$node.log"); fi
    "$@" >>"$DATA/$node.log" 2>&1 &
    echo $! >"$(pidfile "$node")"
    for _ in $(seq 1 100); do
        if tail -c +"$((mark + 1))" "$DATA/$node.log" 2>/dev/null |
               grep -q "event=started" && running "$node"; then
            echo "$node: pid $(cat "$(pidfile "$node")"), log $DATA/$node.log"
            return 0
        fi
        if ! running "$node"; then
            echo "$node failed to start; last log lines:" >&2
            tail -n 20 "$DATA/$node.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "$node did not report started within 10 s" >&2
    exit 1
}

stop_node() {
    local node=$1
    if running "$node"; then
        kill -TERM "$(cat "$(pidfile "$node")")"
        for _ in $(seq 1 150); do running "$node" || break; sleep 0.1; done
        if running "$node"; then
            echo "$node did not stop within 15 s (pid $(cat "$(pidfile "$node")"))" >&2
            return 1
        fi
        echo "$node stopped"
    fi
    rm -f "$(pidfile "$node")"
}

case "${1:-start}" in
start)
    mkdir -p "$DATA"
    # the first start creates the cluster (a new cluster id); later starts
    # find it formatted, and a dir from before cluster ids is adopted
    if [ ! -e "$DATA/controller/meta.properties" ] &&
        [ ! -s "$DATA/controller/metadata.log" ] &&
        [ ! -e "$DATA/controller/snapshot" ]; then
        "$CONTROLLER_BIN" --format --data-dir "$DATA/controller"
    fi
    start_node controller "$CONTROLLER_BIN" --listen "$CONTROLLER" \
        --data-dir "$DATA/controller"
    for i in "${BROKERS[@]}"; do
        start_node "broker-$i" "$BROKER_BIN" --id "$i" \
            --listen "127.0.0.1:$(port_of "$i")" --data-dir "$DATA/broker-$i" \
            --controller "$CONTROLLER"
    done
    for _ in $(seq 1 100); do
        alive=$("$WEIR" --bootstrap "127.0.0.1:$(port_of 1)" cluster 2>/dev/null |
                grep -c ' alive$' || true)
        if [ "$alive" -ge 3 ]; then
            echo "cluster up: controller $CONTROLLER, brokers 127.0.0.1:9092,9093,9094 (3 alive)"
            exit 0
        fi
        sleep 0.1
    done
    echo "brokers did not all come alive within 10 s; see $DATA/*.log" >&2
    exit 1
    ;;
stop)
    # brokers first (each moves its leaderships away), the controller last
    rc=0
    for i in "${BROKERS[@]}"; do stop_node "broker-$i" || rc=1; done
    stop_node controller || rc=1
    exit $rc
    ;;
status)
    for node in "${NODES[@]}"; do
        if running "$node"; then
            echo "$node running (pid $(cat "$(pidfile "$node")"))"
        else
            echo "$node stopped"
        fi
    done
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
