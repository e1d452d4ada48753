#!/usr/bin/env bash
# Start, stop or show a local Weir cluster on loopback: a quorum of three
# controllers (127.0.0.1:9090, 9095, 9096, data in ./data/controller-N) and
# three brokers (127.0.0.1:9092, 9093, 9094, data in ./data/broker-N). Logs
# go to ./data/<node>.log, PIDs to ./data/<node>.pid (DATA_DIR to change
# ./data).
#   deploy/local-cluster.sh start|stop|status
# The first start formats the three controllers with one cluster id (saved
# in ./data/cluster-id) and marks ./data/cluster-formed; later starts never
# format again, so a controller whose data dir was lost restarts empty and
# rejoins the quorum (docs/operations.md, "Controller quorum").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BROKER_BIN=${BIN:-$BUILD/broker/weir-broker}
CONTROLLER_BIN=${CONTROLLER_BIN:-$BUILD/controller/weir-controller}
WEIR=${WEIR:-$BUILD/client/cli/weir}
DATA=${DATA_DIR:-$PWD/data}
CONTROLLERS=(1 2 3)
ctl_port_of() { case $1 in 1) echo 9090 ;; 2) echo 9095 ;; 3) echo 9096 ;; esac; }
VOTERS=1@127.0.0.1:9090,2@127.0.0.1:9095,3@127.0.0.1:9096
CONTROLLER_LIST=127.0.0.1:9090,127.0.0.1:9095,127.0.0.1:9096
BROKERS=(1 2 3)
port_of() { echo $((9091 + $1)); }
NODES=(controller-1 controller-2 controller-3 broker-1 broker-2 broker-3)

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
    if [ -e "$DATA/controller" ] && [ ! -e "$DATA/cluster-formed" ]; then
        echo "$DATA/controller is a single controller's data dir (before the quorum):" >&2
        echo "stop it and move $DATA away to start a new cluster, or run that" >&2
        echo "controller by hand (docs/operations.md, \"Controller quorum\")" >&2
        exit 1
    fi
    # the first start creates the cluster: every member formatted with one
    # cluster id; the marker keeps later starts from formatting again
    if [ ! -e "$DATA/cluster-formed" ]; then
        if [ ! -s "$DATA/cluster-id" ]; then
            echo "local-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$DATA/cluster-id"
        fi
        for c in "${CONTROLLERS[@]}"; do
            if [ ! -e "$DATA/controller-$c/meta.properties" ]; then
                "$CONTROLLER_BIN" --format --data-dir "$DATA/controller-$c" \
                    --cluster-id "$(cat "$DATA/cluster-id")"
            fi
        done
        touch "$DATA/cluster-formed"
    fi
    cluster_id=$(cat "$DATA/cluster-id")
    # started in the background together: the first needs a second member
    # to elect an active controller
    for c in "${CONTROLLERS[@]}"; do
        start_node "controller-$c" "$CONTROLLER_BIN" --id "$c" --voters "$VOTERS" \
            --cluster-id "$cluster_id" --listen "127.0.0.1:$(ctl_port_of "$c")" \
            --data-dir "$DATA/controller-$c"
    done
    for _ in $(seq 1 100); do
        if grep -q "event=member_state active=true" "$DATA"/controller-*.log 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    for i in "${BROKERS[@]}"; do
        start_node "broker-$i" "$BROKER_BIN" --id "$i" \
            --listen "127.0.0.1:$(port_of "$i")" --data-dir "$DATA/broker-$i" \
            --controller "$CONTROLLER_LIST"
    done
    for _ in $(seq 1 100); do
        alive=$("$WEIR" --bootstrap "127.0.0.1:$(port_of 1)" cluster 2>/dev/null |
                grep -c ' alive$' || true)
        if [ "$alive" -ge 3 ]; then
            echo "cluster up: controllers $CONTROLLER_LIST, brokers 127.0.0.1:9092,9093,9094 (3 alive)"
            exit 0
        fi
        sleep 0.1
    done
    echo "brokers did not all come alive within 10 s; see $DATA/*.log" >&2
    exit 1
    ;;
stop)
    # brokers first (each moves its leaderships away), the controllers last
    rc=0
    for i in "${BROKERS[@]}"; do stop_node "broker-$i" || rc=1; done
    for c in "${CONTROLLERS[@]}"; do stop_node "controller-$c" || rc=1; done
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
