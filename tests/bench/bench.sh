#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Weir throughput / latency benchmark, with the peers measured in the same run
# (Redis streams XADD, NATS JetStream R1, loopback TCP) so that Weir can be
# reported as a ratio on a noisy machine. See docs/benchmarks.md.
#
#   tests/bench/bench.sh            # 8-10 min; report on stdout and in $RESULTS
#
# Environment knobs (defaults in brackets):
#   BUILD_DIR   build directory, relative to the repo or absolute [build]
#   NO_BUILD    1: use the binaries already in BUILD_DIR, do not build [0]
#   INSTALL_DEPS 0: do not call deploy/install-deps.sh [1]
#   RESULTS     report file [BUILD_DIR/bench-results-<UTC time>.md]
#   REPS        repetitions of the whole sequence, medians reported [3]
#   N100 N1K    Weir records per case at 100 B / 1 KiB [10000000 / 2000000]
#   LAT_RATE LAT_SECS   Weir latency case: records/s and seconds [100000 / 5]
#   REDIS_N100 REDIS_N1K  redis-benchmark XADD count [3000000 / 1500000]
#   NATS_N100 NATS_N1K    JetStream messages [1000000 / 500000]; NATS_WIN [256]
#   PEERS       0: Weir only [1]
#   PEERS_DIR   folder holding nats_bench.c [<repo>/../shared/peers]
#   CASE_TIMEOUT  hard bound on one client run, seconds [240]
#   KEEP_WORK   1: keep the temporary folder (data dirs, logs) [0]
#
# Everything listens on 127.0.0.1 only; every server is started by this script
# and stopped by its PID (trap on exit); every loop and client run is bounded.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
NO_BUILD=${NO_BUILD:-0}
INSTALL_DEPS=${INSTALL_DEPS:-1}
REPS=${REPS:-3}
N100=${N100:-10000000}
N1K=${N1K:-2000000}
LAT_RATE=${LAT_RATE:-100000}
LAT_SECS=${LAT_SECS:-5}
REDIS_N100=${REDIS_N100:-3000000}
REDIS_N1K=${REDIS_N1K:-1500000}
NATS_N100=${NATS_N100:-1000000}
NATS_N1K=${NATS_N1K:-500000}
NATS_WIN=${NATS_WIN:-256}
PEERS=${PEERS:-1}
PEERS_DIR=${PEERS_DIR:-$ROOT/../shared/peers}
CASE_TIMEOUT=${CASE_TIMEOUT:-240}
KEEP_WORK=${KEEP_WORK:-0}
IDLE_TOPICS=10
IDLE_PARTS=10
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=${RESULTS:-$BUILD_DIR/bench-results-$STAMP.md}

WORK=$(mktemp -d /tmp/weir-bench.XXXXXX)
RAW=$WORK/raw.jsonl
META=$WORK/meta.tsv
: >"$RAW"
: >"$META"
REPORT=(python3 "$HERE/bench_report.py")
HZ=$(getconf CLK_TCK)

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
meta() { printf '%s\t%s\n' "$1" "$2" >>"$META"; }

# ---- processes we start: stopped by PID, never by name ---------------------
PIDS=()
# alive PID, stop_pid PID [GRACE]: shared with the other bench scripts
. "$HERE/bench_lib.sh"
cleanup() {
    local p
    for p in "${PIDS[@]:-}"; do stop_pid "$p" 10; done
    if [ "$KEEP_WORK" = 1 ]; then
        log "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
cpu_ticks() { # utime+stime of pid, in clock ticks
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0
}
status_kb() { # pid field
    awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}
status_mib() { # pid field -> "12.3 MiB"
    awk -v f="$2:" '$1 == f {printf "%.1f MiB", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "?"
}

# run_measured SERVER_PID OUTFILE CMD... : runs CMD under a timeout and sets
# RC, WALL (s), CPU (s of SERVER_PID's CPU time spent meanwhile) and CCPU
# (user + system s of the client command itself)
RC=0 WALL=0 CPU=0 CCPU=0
run_measured() {
    local pid=$1 out=$2 c0 c1 t0 t1 TIMEFORMAT='%3U %3S'
    shift 2
    c0=$(cpu_ticks "$pid")
    t0=$(now)
    set +e
    { time timeout -k 5 "$CASE_TIMEOUT" "$@" >"$out" 2>"$out.err" </dev/null; } 2>"$out.time"
    RC=$?
    set -e
    t1=$(now)
    c1=$(cpu_ticks "$pid")
    WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
    CPU=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN{printf "%.3f", (b - a) / hz}')
    CCPU=$(awk 'NF == 2 {printf "%.3f", $1 + $2; exit}' "$out.time")
    CCPU=${CCPU:-0}
    if [ "$RC" != 0 ]; then
        log "exit $RC after ${WALL}s: $*"
        tail -n 5 "$out.err" >&2 || true
    fi
}

# ---- dependencies and build -----------------------------------------------
if [ "$INSTALL_DEPS" = 1 ]; then
    PEER_PKGS=()
    [ "$PEERS" = 1 ] && PEER_PKGS=(redis-server redis-tools nats-server iperf3 gcc)
    "$ROOT/deploy/install-deps.sh" "${PEER_PKGS[@]}"
    if [ "$PEERS" = 1 ]; then
        # the NATS C client: on its own so that its absence only skips NATS
        "$ROOT/deploy/install-deps.sh" libnats-dev ||
            log "libnats-dev could not be installed: NATS will be skipped"
    fi
fi

WEIR=$BUILD_DIR/client/cli/weir
BROKER=$BUILD_DIR/broker/weir-broker
if [ "$NO_BUILD" != 1 ]; then
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DBUILD_TESTING=OFF >/dev/null
    fi
    built=0
    for attempt in 1 2 3; do
        if cmake --build "$BUILD_DIR" -j "$(nproc)" --target weir weir-broker \
            >"$WORK/build.log" 2>&1; then
            built=1
            break
        fi
        log "build attempt $attempt failed (tail of the log below); retrying in 60 s"
        tail -n 15 "$WORK/build.log" >&2
        sleep 60
    done
    if [ "$built" != 1 ]; then
        log "build failed"
        exit 1
    fi
fi
for b in "$WEIR" "$BROKER"; do
    [ -x "$b" ] || { log "missing $b (build first or unset NO_BUILD)"; exit 1; }
done
if grep -qE '^WEIR_SANITIZE:BOOL=ON|^CMAKE_BUILD_TYPE:STRING=Debug' \
    "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    log "WARNING: $BUILD_DIR is a Debug or sanitizer build: numbers will be low"
    meta note "the Weir binaries were a Debug or sanitizer build"
fi

# ---- machine and versions --------------------------------------------------
cpu_model=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
mem_gib=$(awk '/^MemTotal:/{printf "%.1f", $2 / 1048576}' /proc/meminfo)
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta machine "$(nproc) CPUs (${cpu_model:-unknown model}), ${mem_gib} GiB RAM, Linux $(uname -r)"
weir_rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    weir_rev="$weir_rev + uncommitted changes"
fi
build_type=$(awk -F= '/^CMAKE_BUILD_TYPE:/{print $2}' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
meta "weir build" "commit $weir_rev, ${build_type:-RelWithDebInfo (default)}"
meta settings "Weir: N100=$N100 N1K=$N1K, bench defaults (linger 5 ms, batch 64 KiB, 1 producer); Redis: redis-benchmark -c 50 -P 16, REDIS_N100=$REDIS_N100 REDIS_N1K=$REDIS_N1K; NATS: NATS_N100=$NATS_N100 NATS_N1K=$NATS_N1K window $NATS_WIN"

# ---- Weir -----------------------------------------------------------------
BROKER_PID=""
BOOT=""
start_broker() { # name [broker options...]
    local name=$1 i
    shift
    local port
    port=$(free_port)
    BOOT=127.0.0.1:$port
    mkdir -p "$WORK/$name"
    "$BROKER" --listen "$BOOT" --data-dir "$WORK/$name/data" "$@" \
        >"$WORK/$name/broker.log" 2>&1 &
    BROKER_PID=$!
    PIDS+=("$BROKER_PID")
    for ((i = 0; i < 100; i++)); do
        if ! alive "$BROKER_PID"; then
            log "broker $name exited at start:"
            tail -n 20 "$WORK/$name/broker.log" >&2
            exit 1
        fi
        if timeout 5 "$WEIR" --bootstrap "$BOOT" topic list >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    log "broker $name not ready after 10 s"
    exit 1
}
stop_broker() {
    stop_pid "$BROKER_PID" 60
    BROKER_PID=""
}
delete_topic() {
    timeout 60 "$WEIR" --bootstrap "$BOOT" topic delete "$1" >/dev/null 2>&1 ||
        log "could not delete topic $1"
}

# weir_pair ID_PREFIX LABEL_PREFIX TOPIC PARTS SIZE N ACKS : produce, then
# consume the same records from the beginning, then delete the topic
weir_pair() {
    local idp=$1 lab=$2 topic=$3 parts=$4 size=$5 n=$6 acks=$7
    log "weir produce $lab ($n records)"
    run_measured "$BROKER_PID" "$WORK/out" "$WEIR" --bootstrap "$BOOT" bench produce \
        --topic "$topic" --partitions "$parts" --record-size "$size" \
        --records "$n" --acks "$acks" --json
    "${REPORT[@]}" add --raw "$RAW" --kind weir --id "$idp.produce.$size.${parts}p.$acks" \
        --label "$lab produce" --size "$size" --rep "$rep" --file "$WORK/out" \
        --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL" --expect "$n"
    log "weir consume $lab"
    run_measured "$BROKER_PID" "$WORK/out" "$WEIR" --bootstrap "$BOOT" bench consume \
        --topic "$topic" --record-size "$size" --records "$n" \
        --timeout-ms 10000 --json
    "${REPORT[@]}" add --raw "$RAW" --kind weir --id "$idp.consume.$size.${parts}p.$acks" \
        --label "$lab consume (from start)" --size "$size" --rep "$rep" \
        --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL" --expect "$n" --no-lat
    delete_topic "$topic"
}

weir_cases() {
    start_broker "weir-ack-$rep" --flush-policy ack
    weir_pair weir "weir 100B 1p acks=1" "r$rep-100b-1p" 1 100 "$N100" 1
    weir_pair weir "weir 100B 6p acks=1" "r$rep-100b-6p" 6 100 "$N100" 1
    weir_pair weir "weir 1KiB 1p acks=1" "r$rep-1k-1p" 1 1024 "$N1K" 1
    weir_pair weir "weir 1KiB 6p acks=1" "r$rep-1k-6p" 6 1024 "$N1K" 1
    weir_pair weir "weir 100B 6p acks=all" "r$rep-100b-6p-all" 6 100 "$N100" all
    # latency at a fixed rate below saturation: unbounded produce measures
    # mostly the time records wait in the producer's 64 MiB buffer
    local n=$((LAT_RATE * LAT_SECS))
    log "weir latency case: $LAT_RATE records/s for ${LAT_SECS}s"
    run_measured "$BROKER_PID" "$WORK/out" "$WEIR" --bootstrap "$BOOT" bench produce \
        --topic "r$rep-lat" --partitions 6 --record-size 100 --records "$n" \
        --acks 1 --rate "$LAT_RATE" --json
    "${REPORT[@]}" add --raw "$RAW" --kind weir --id "weir.lat.produce.100.6p.1" \
        --label "weir 100B 6p acks=1 at $LAT_RATE rec/s (latency case)" --size 100 \
        --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL" --expect "$n"
    delete_topic "r$rep-lat"
    if [ "$rep" = 1 ]; then
        meta "rss after the flush-policy=ack cases (peak VmHWM / current VmRSS)" \
            "$(status_mib "$BROKER_PID" VmHWM) / $(status_mib "$BROKER_PID" VmRSS)"
    fi
    stop_broker

    start_broker "weir-never-$rep" --flush-policy never
    weir_pair weir.never "weir 100B 6p acks=1 [flush-policy=never]" "r$rep-100b-6p-never" \
        6 100 "$N100" 1
    stop_broker
    rm -rf "$WORK"/weir-*-"$rep"/data
}

idle_rss() {
    local i
    start_broker weir-idle --flush-policy ack
    sleep 1
    meta "rss idle broker, no topics (VmRSS)" "$(status_mib "$BROKER_PID" VmRSS)"
    for ((i = 0; i < IDLE_TOPICS; i++)); do
        timeout 60 "$WEIR" --bootstrap "$BOOT" bench produce --topic "idle-$i" \
            --partitions "$IDLE_PARTS" --records 2000 --record-size 100 --acks 1 \
            --json >/dev/null 2>&1 || log "idle topic idle-$i: produce failed"
    done
    sleep 2
    local parts
    parts=$(find "$WORK/weir-idle/data" -mindepth 1 -maxdepth 1 -type d -name 'idle-*' | wc -l)
    meta "rss idle broker holding $parts partitions ($IDLE_TOPICS topics x $IDLE_PARTS, 2000 records each topic), 2 s after the last produce (VmRSS)" \
        "$(status_mib "$BROKER_PID" VmRSS) ($(status_kb "$BROKER_PID" VmRSS) kB; open fds: $(find "/proc/$BROKER_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l), threads: $(status_kb "$BROKER_PID" Threads))"
    stop_broker
}

# ---- Redis streams ----------------------------------------------------------
REDIS_PID=""
REDIS_PORT=""
start_redis() { # name extra-args...
    local name=$1 i
    shift
    REDIS_PORT=$(free_port)
    mkdir -p "$WORK/$name"
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$WORK/$name" --save "" \
        --daemonize no --protected-mode yes --logfile "$WORK/$name/log" "$@" &
    REDIS_PID=$!
    PIDS+=("$REDIS_PID")
    for ((i = 0; i < 100; i++)); do
        timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    log "redis $name not ready"
    return 1
}
redis_xadd() { # mode label size n
    local mode=$1 lab=$2 size=$3 n=$4 payload
    payload=$(head -c "$size" /dev/zero | tr '\0' x)
    timeout 30 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" DEL s >/dev/null
    log "redis XADD $lab ($n)"
    run_measured "$REDIS_PID" "$WORK/out" redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" \
        -n "$n" -c 50 -P 16 XADD s '*' f "$payload"
    "${REPORT[@]}" add --raw "$RAW" --kind redis --id "redis.$mode.$size" --label "$lab" \
        --size "$size" --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL"
    timeout 30 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" DEL s >/dev/null
}
redis_cases() {
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        meta note "Redis skipped: redis-server / redis-benchmark not installed"
        return 0
    fi
    start_redis "redis-mem-$rep" --appendonly no
    redis_xadd mem "redis XADD 100B pipelined, no persistence" 100 "$REDIS_N100"
    redis_xadd mem "redis XADD 1KiB pipelined, no persistence" 1024 "$REDIS_N1K"
    stop_pid "$REDIS_PID" 30
    start_redis "redis-always-$rep" --appendonly yes --appendfsync always
    redis_xadd always "redis XADD 100B pipelined, appendfsync always" 100 "$REDIS_N100"
    redis_xadd always "redis XADD 1KiB pipelined, appendfsync always" 1024 "$REDIS_N1K"
    stop_pid "$REDIS_PID" 30
    rm -rf "$WORK"/redis-*-"$rep"
}

# ---- NATS JetStream, one node, R1 file stream -------------------------------
NATS_BIN=""
NATS_PID=""
nats_prepare() {
    if ! command -v nats-server >/dev/null; then
        meta note "NATS skipped: nats-server not installed"
        return 1
    fi
    if [ ! -f "$PEERS_DIR/nats_bench.c" ] || [ ! -f /usr/include/nats/nats.h ]; then
        meta note "NATS skipped: needs nats_bench.c from the shared peers folder and libnats-dev"
        return 1
    fi
    # the peer client is compiled from the shared peers folder at run time
    if ! gcc -O2 -o "$WORK/nats_bench" "$PEERS_DIR/nats_bench.c" -lnats 2>"$WORK/nats_cc.log"; then
        meta note "NATS skipped: nats_bench.c did not compile"
        return 1
    fi
    NATS_BIN=$WORK/nats_bench
}
nats_cases() {
    [ -n "$NATS_BIN" ] || return 0
    local port url i size n lab sz ok=0
    port=$(free_port)
    url=nats://127.0.0.1:$port
    mkdir -p "$WORK/nats-$rep"
    nats-server -a 127.0.0.1 -p "$port" -js -sd "$WORK/nats-$rep" \
        >"$WORK/nats-$rep.log" 2>&1 &
    NATS_PID=$!
    PIDS+=("$NATS_PID")
    for ((i = 0; i < 60; i++)); do
        if timeout 10 "$NATS_BIN" -s "$url" -S PROBE -r 1 -t 8 create >/dev/null 2>&1; then
            timeout 10 "$NATS_BIN" -s "$url" -S PROBE -t 8 delete >/dev/null 2>&1 || true
            ok=1
            break
        fi
        sleep 0.5
    done
    if [ "$ok" != 1 ]; then
        log "NATS JetStream not ready"
        meta note "NATS run $rep failed: JetStream not ready"
        stop_pid "$NATS_PID" 20
        return 0
    fi
    for size in 100 1024; do
        n=$NATS_N100
        sz=100B
        [ "$size" = 1024 ] && n=$NATS_N1K && sz=1KiB
        timeout 60 "$NATS_BIN" -s "$url" -S B -r 1 create >/dev/null ||
            log "NATS stream create failed"
        lab="NATS JetStream R1 $sz async publish (window $NATS_WIN)"
        log "$lab ($n)"
        run_measured "$NATS_PID" "$WORK/out" "$NATS_BIN" -s "$url" -S B -z "$size" \
            -n "$n" -w "$NATS_WIN" -t $((CASE_TIMEOUT - 10)) pub
        "${REPORT[@]}" add --raw "$RAW" --kind nats --id "nats.pub.$size" --label "$lab" \
            --size "$size" --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" \
            --wall "$WALL" --expect "$n"
        lab="NATS JetStream R1 $sz pull consume (from start, batch 500)"
        run_measured "$NATS_PID" "$WORK/out" "$NATS_BIN" -s "$url" -S B -z "$size" \
            -n "$n" -b 500 -t $((CASE_TIMEOUT - 10)) sub
        "${REPORT[@]}" add --raw "$RAW" --kind nats --id "nats.sub.$size" --label "$lab" \
            --size "$size" --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" \
            --wall "$WALL" --expect "$n"
        timeout 60 "$NATS_BIN" -s "$url" -S B delete >/dev/null || true
    done
    stop_pid "$NATS_PID" 20
    rm -rf "$WORK/nats-$rep"
}

# ---- loopback TCP -------------------------------------------------------------
loopback_case() {
    command -v iperf3 >/dev/null || { meta note "iperf3 not installed: no loopback row"; return 0; }
    local port pid i
    port=$(free_port)
    iperf3 -s -B 127.0.0.1 -p "$port" -1 >/dev/null 2>&1 &
    pid=$!
    PIDS+=("$pid")
    # wait until it listens (a probe connection would use up its one test)
    local hex
    hex=$(printf '%04X' "$port")
    for ((i = 0; i < 50; i++)); do
        awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p {f = 1} END {exit !f}' \
            /proc/net/tcp 2>/dev/null && break
        sleep 0.1
    done
    log "iperf3 loopback 5 s"
    run_measured "$pid" "$WORK/out" iperf3 -c 127.0.0.1 -p "$port" -t 5 -J
    "${REPORT[@]}" add --raw "$RAW" --kind iperf --id net.loopback \
        --label "loopback TCP, 1 stream (iperf3, 5 s)" --rep "$rep" \
        --file "$WORK/out" --rc "$RC"
    stop_pid "$pid" 10
}

# ---- the run ---------------------------------------------------------------
t_start=$(now)
[ "$PEERS" = 1 ] && { nats_prepare || true; }
for ((rep = 1; rep <= REPS; rep++)); do
    log "=== repetition $rep of $REPS"
    weir_cases
    if [ "$PEERS" = 1 ]; then
        redis_cases
        nats_cases
        loopback_case
    fi
done
idle_rss

meta note "Weir produce latency is send-to-ack per record with one producer sending as fast as it can, so it is dominated by queueing (the producer's 64 MiB buffer, then up to 5 requests of 4 MiB in flight); the fixed-rate row shows latency below saturation. Redis latency is per request with 50 connections x 16 pipelined; NATS latency is publish-to-ack with $NATS_WIN messages in flight."
meta note "Consume rows read data written minutes earlier, so no latency is shown for them (end-to-end latency would be the data's age)."
meta note "Server CPU % = CPU time of the server process during the client run / the run's wall time; client CPU % the same for the benchmark client (weir bench, redis-benchmark, nats_bench). 100 = one core; client and server share the same $(nproc) CPUs."
meta note "NATS 2.9 acknowledges before fsync (sync every 2 min by default); Redis appendfsync always fsyncs before replying; Weir flush-policy=ack fsyncs (group commit) before acknowledging."
meta note "run took $(awk -v a="$t_start" -v b="$(now)" 'BEGIN{printf "%.0f", b - a}') s"

mkdir -p "$(dirname "$RESULTS")"
"${REPORT[@]}" table --raw "$RAW" --meta "$META" | tee "$RESULTS"
cp "$RAW" "${RESULTS%.md}.jsonl"
log "report written to $RESULTS (raw rows: ${RESULTS%.md}.jsonl)"
