#!/usr/bin/env bash
# Start, stop or show a local Weir cluster on loopback. Data and logs go
# under ./data (DATA_DIR to change). For now the cluster is one broker.
#   deploy/local-cluster.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/broker/weir-broker}
DATA=${DATA_DIR:-$PWD/data}
PORT=${PORT:-9092}
node=broker-1
pidfile="$DATA/$node.pid"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "${1:-start}" in
start)
    mkdir -p "$DATA"
    if running; then
        echo "$node already running (pid $(cat "$pidfile"))"
        exit 0
    fi
    "$BIN" --id 1 --listen "127.0.0.1:$PORT" --data-dir "$DATA/$node" \
        >>"$DATA/$node.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 50); do
        if grep -q "event=started" "$DATA/$node.log" 2>/dev/null &&
           running; then
            break
        fi
        if ! running; then
            echo "$node failed to start; last log lines:" >&2
            tail -n 20 "$DATA/$node.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "$node: pid $(cat "$pidfile"), listening on 127.0.0.1:$PORT, data in $DATA/$node, log $DATA/$node.log"
    ;;
stop)
    if running; then
        kill -TERM "$(cat "$pidfile")"
        for _ in $(seq 1 100); do running || break; sleep 0.1; done
        echo "$node stopped"
    fi
    rm -f "$pidfile"
    ;;
status)
    if running; then echo "$node running (pid $(cat "$pidfile"))"; else echo "$node stopped"; fi
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
