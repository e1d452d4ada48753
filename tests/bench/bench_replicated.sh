#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replicated produce benchmark: Weir RF 3 with acks=all against Weir RF 1
# with acks=1 and against NATS JetStream with a 3-replica stream (and a
# 1-replica stream), all measured in the same run, interleaved, so that Weir
# can be quoted as a ratio on a noisy machine. See docs/benchmarks.md.
#
#   tests/bench/bench_replicated.sh     # ~6-8 min; report on stdout and in $RESULTS
#   BUILD_DIR=build-rel NO_BUILD=1 REPS=1 tests/bench/bench_replicated.sh   # ~2-3 min
#
# What runs (everything on 127.0.0.1, started by this script):
#   - Weir: one weir-controller and three weir-brokers (ids 1-3, default
#     flush-policy=ack), started afresh (empty data dirs) for each
#     repetition. Per case a new topic of $PARTITIONS partitions is created
#     and `weir bench produce` writes to it (one producer, bench defaults:
#     linger 5 ms, 64 KiB batches). RF 3 topics are produced with acks=all
#     (min.insync.replicas = the controller's default, 2); RF 1 topics, on
#     the same three brokers, with acks=1. Topics are not deleted during a
#     repetition: a topic created after a `topic delete` sometimes reported
#     end offsets of the deleted topic's partitions and its acks=all
#     produce stalled (see docs/benchmarks.md), so the cluster is replaced
#     instead. After each case the script checks that the partitions' end
#     offsets add up to the records produced and that the ISRs are full.
#   - NATS JetStream: three nats-server processes clustered over loopback
#     routes, JetStream with file storage in the temporary folder. Per case a
#     fresh stream (file storage, replicas 3 or 1) is created and the client
#     connects to the stream's leader; the client is nats_bench.c from the
#     shared peers folder, compiled here: async publish, $NATS_WIN un-acked
#     messages in flight, every message acknowledged by the stream leader
#     (after a quorum of replicas for R3).
#   Record sizes $SIZES; per repetition and size the four cases run one after
#   the other, in an order rotated by one each repetition.
#
# Debian packages: nats-server (2.9 in Debian 12), libnats-dev (the NATS C
# client for nats_bench.c), gcc, python3; plus Weir's own build dependencies
# (deploy/install-deps.sh). Without nats-server or libnats-dev the NATS cases
# are skipped and only the Weir rows are reported.
#
# Environment knobs (defaults in brackets):
#   BUILD_DIR    build directory, relative to the repo or absolute [build]
#   NO_BUILD     1: use the binaries already in BUILD_DIR, do not build [0]
#   INSTALL_DEPS 0: do not call deploy/install-deps.sh [1]
#   RESULTS      report file [BUILD_DIR/bench-replicated-<UTC time>.md]
#   REPS         repetitions of the whole sequence, medians reported [3]
#   SIZES        record (value) sizes in bytes, space separated [100 1024]
#   PARTITIONS   partitions of each Weir topic [6]
#   WEIR_N100 WEIR_N1K  Weir records per case at 100 B / 1 KiB; other sizes
#                use WEIR_N1K [5000000 / 1000000]
#   NATS_N100 NATS_N1K  NATS messages per case at 100 B / 1 KiB; other sizes
#                use NATS_N1K [300000 / 150000]
#   WEIR_RF3_ACKS1  1: also produce to an RF 3 topic with acks=1 (replicated,
#                but the producer does not wait for the followers), to tell
#                the cost of copying from the cost of waiting [1]
#   NATS_WIN     NATS async publish window [256]
#   NATS_R1      0: skip the NATS R1 stream cases [1]
#   PEERS        0: Weir only [1]
#   PEERS_DIR    folder holding nats_bench.c [<repo>/../shared/peers]
#   CASE_TIMEOUT hard bound on one client run, seconds [120]
#   KEEP_WORK    1: keep the temporary folder (data dirs, logs, raw output) [0]
#
# Every server is stopped by its PID (trap on exit, also on error or Ctrl-C),
# every wait loop and every client run is bounded in time, and the temporary
# folder is removed at the end unless KEEP_WORK=1.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
NO_BUILD=${NO_BUILD:-0}
INSTALL_DEPS=${INSTALL_DEPS:-1}
REPS=${REPS:-3}
SIZES=${SIZES:-100 1024}
PARTITIONS=${PARTITIONS:-6}
WEIR_N100=${WEIR_N100:-5000000}
WEIR_N1K=${WEIR_N1K:-1000000}
NATS_N100=${NATS_N100:-300000}
NATS_N1K=${NATS_N1K:-150000}
NATS_WIN=${NATS_WIN:-256}
WEIR_RF3_ACKS1=${WEIR_RF3_ACKS1:-1}
NATS_R1=${NATS_R1:-1}
PEERS=${PEERS:-1}
PEERS_DIR=${PEERS_DIR:-$ROOT/../shared/peers}
CASE_TIMEOUT=${CASE_TIMEOUT:-120}
KEEP_WORK=${KEEP_WORK:-0}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=${RESULTS:-$BUILD_DIR/bench-replicated-$STAMP.md}

WORK=$(mktemp -d /tmp/weir-bench-repl.XXXXXX)
RAW=$WORK/raw.jsonl
META=$WORK/meta.tsv
: >"$RAW"
: >"$META"
REPORT=(python3 "$HERE/bench_replicated_report.py")
HZ=$(getconf CLK_TCK)

log() { printf '[bench-repl %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
meta() { printf '%s\t%s\n' "$1" "$2" >>"$META"; }

# ---- processes we start: stopped by PID, never by name ---------------------
PIDS=()
# alive PID, stop_pid PID [GRACE]: shared with the other bench scripts
. "$HERE/bench_lib.sh"
forget_pid() { # pid : no longer ours (stopped), so never signal it again
    local p keep=()
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}
cleanup() {
    local i
    # newest first: NATS, then the brokers, the controller last
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}" 15; done
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
cpu_ticks() { # pid... : utime+stime summed over the pids, in clock ticks
    local p t=0 x
    for p in "$@"; do
        x=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}') || x=0
        t=$((t + ${x:-0}))
    done
    echo "$t"
}

# run_measured "SERVER_PIDS" OUTFILE CMD... : runs CMD under a timeout and
# sets RC, WALL (s), CPU (s of CPU time the server PIDs used meanwhile, summed)
# and CCPU (user + system s of the client command itself)
RC=0 WALL=0 CPU=0 CCPU=0
run_measured() {
    local pids=$1 out=$2 c0 c1 t0 t1 TIMEFORMAT='%3U %3S'
    shift 2
    # shellcheck disable=SC2086 # a list of PIDs
    c0=$(cpu_ticks $pids)
    t0=$(now)
    set +e
    { time timeout -k 5 "$CASE_TIMEOUT" "$@" >"$out" 2>"$out.err" </dev/null; } 2>"$out.time"
    RC=$?
    set -e
    t1=$(now)
    # shellcheck disable=SC2086
    c1=$(cpu_ticks $pids)
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
    [ "$PEERS" = 1 ] && PEER_PKGS=(nats-server gcc)
    "$ROOT/deploy/install-deps.sh" "${PEER_PKGS[@]}"
    if [ "$PEERS" = 1 ]; then
        # the NATS C client: on its own so that its absence only skips NATS
        "$ROOT/deploy/install-deps.sh" libnats-dev ||
            log "libnats-dev could not be installed: NATS will be skipped"
    fi
fi

WEIR=$BUILD_DIR/client/cli/weir
BROKER=$BUILD_DIR/broker/weir-broker
CONTROLLER=$BUILD_DIR/controller/weir-controller
if [ "$NO_BUILD" != 1 ]; then
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DBUILD_TESTING=OFF >/dev/null
    fi
    if ! cmake --build "$BUILD_DIR" -j "$(nproc)" \
        --target weir weir-broker weir-controller >"$WORK/build.log" 2>&1; then
        tail -n 30 "$WORK/build.log" >&2
        log "build failed"
        exit 1
    fi
fi
for b in "$WEIR" "$BROKER" "$CONTROLLER"; do
    [ -x "$b" ] || { log "missing $b (build first or unset NO_BUILD)"; exit 1; }
done
if grep -qE '^WEIR_SANITIZE:BOOL=ON|^CMAKE_BUILD_TYPE:STRING=Debug' \
    "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    log "WARNING: $BUILD_DIR is a Debug or sanitizer build: numbers will be low"
    meta note "the Weir binaries were a Debug or sanitizer build"
fi

# ---- machine and versions --------------------------------------------------
git_head() { # the checked-out commit, read from .git without running git
    local g=$ROOT/.git h ref
    [ -f "$g/HEAD" ] || { echo unknown; return; }
    h=$(cat "$g/HEAD")
    case $h in
    "ref: "*)
        ref=${h#ref: }
        if [ -f "$g/$ref" ]; then
            h=$(cat "$g/$ref")
        else
            h=$(awk -v r="$ref" '$2 == r {print $1}' "$g/packed-refs" 2>/dev/null)
        fi
        ;;
    esac
    echo "${h:0:7}"
}
cpu_model=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
mem_gib=$(awk '/^MemTotal:/{printf "%.1f", $2 / 1048576}' /proc/meminfo)
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta machine "$(nproc) CPUs (${cpu_model:-unknown model}), ${mem_gib} GiB RAM, Linux $(uname -r)"
meta "load average at start" "$(cut -d' ' -f1-3 /proc/loadavg)"
build_type=$(awk -F= '/^CMAKE_BUILD_TYPE:/{print $2}' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
meta "weir build" "$("$WEIR" --version 2>/dev/null || echo weir), checked-out commit $(git_head) (local changes not checked), ${build_type:-RelWithDebInfo (default)}"
meta settings "Weir: controller + 3 brokers (flush-policy=ack), topics of $PARTITIONS partitions, WEIR_N100=$WEIR_N100 WEIR_N1K=$WEIR_N1K, weir bench defaults (one producer, linger 5 ms, batch 64 KiB); NATS: 3-node cluster, file-storage stream, NATS_N100=$NATS_N100 NATS_N1K=$NATS_N1K, async publish window $NATS_WIN, client on the stream leader"

# ---- Weir cluster: controller + 3 brokers, fresh for each repetition ------
CTRL_PID=""
BROKER_PIDS=()
BOOT=""
wait_log() { # file pattern pid seconds : until the log has the pattern
    local f=$1 pat=$2 pid=$3 secs=$4 i
    for ((i = 0; i < secs * 10; i++)); do
        grep -q "$pat" "$f" 2>/dev/null && return 0
        alive "$pid" || return 1
        sleep 0.1
    done
    return 1
}
WD=""
start_weir() { # rep
    local cport i port boots=() n
    WD=$WORK/weir-$1
    mkdir -p "$WD"
    BROKER_PIDS=()
    cport=$(free_port)
    # a new cluster each repetition: format the controller's empty dir
    "$CONTROLLER" --format --data-dir "$WD/controller" >"$WD/format.log" 2>&1
    "$CONTROLLER" --listen "127.0.0.1:$cport" --data-dir "$WD/controller" \
        >"$WD/controller.log" 2>&1 &
    CTRL_PID=$!
    PIDS+=("$CTRL_PID")
    if ! wait_log "$WD/controller.log" "event=started" "$CTRL_PID" 10; then
        log "controller did not start:"
        tail -n 20 "$WD/controller.log" >&2
        exit 1
    fi
    for i in 1 2 3; do
        port=$(free_port)
        boots+=("127.0.0.1:$port")
        "$BROKER" --id "$i" --controller "127.0.0.1:$cport" --listen "127.0.0.1:$port" \
            --data-dir "$WD/broker-$i" >"$WD/broker-$i.log" 2>&1 &
        BROKER_PIDS+=($!)
        PIDS+=($!)
        if ! wait_log "$WD/broker-$i.log" "event=started" "$!" 10; then
            log "broker $i did not start:"
            tail -n 20 "$WD/broker-$i.log" >&2
            exit 1
        fi
    done
    BOOT=$(IFS=,; echo "${boots[*]}")
    for ((i = 0; i < 150; i++)); do
        n=$(timeout 5 "$WEIR" --bootstrap "$BOOT" cluster 2>/dev/null | grep -c ' alive$' || true)
        [ "${n:-0}" -ge 3 ] && return 0
        sleep 0.1
    done
    log "the three brokers were not all alive within 15 s"
    exit 1
}
stop_weir() { # brokers first (each hands its leaderships back), controller last
    local i p
    for ((i = ${#BROKER_PIDS[@]} - 1; i >= 0; i--)); do
        p=${BROKER_PIDS[i]}
        stop_pid "$p" 30
        forget_pid "$p"
    done
    stop_pid "$CTRL_PID" 30
    forget_pid "$CTRL_PID"
    BROKER_PIDS=()
    CTRL_PID=""
    # keep the logs, drop the data
    rm -rf "$WD"/controller "$WD"/broker-?
}

# weir_case REP SIZE RF ACKS N
weir_case() {
    local rep=$1 size=$2 rf=$3 acks=$4 n=$5 topic lab id desc isr_short hw_sum top=""
    local note=""
    topic=r$rep-$size-rf$rf-acks$acks
    lab="weir RF$rf acks=$acks $(size_label "$size") ${PARTITIONS}p"
    id=weir.rf$rf.$acks.$size
    if ! timeout 60 "$WEIR" --bootstrap "$BOOT" topic create "$topic" \
        --partitions "$PARTITIONS" --replication-factor "$rf" >"$WORK/create.out" 2>&1; then
        log "topic create $topic failed: $(tail -n 3 "$WORK/create.out")"
        "${REPORT[@]}" add --raw "$RAW" --kind fail --id "$id" --label "$lab" --size "$size" \
            --rep "$rep" --note "topic create failed"
        return 0
    fi
    log "$lab ($n records)"
    # shellcheck disable=SC2086
    run_measured "${BROKER_PIDS[*]} $CTRL_PID" "$WORK/out" "$WEIR" --bootstrap "$BOOT" \
        bench produce --topic "$topic" --record-size "$size" --records "$n" --acks "$acks" --json
    # after the run: every partition's ISR still complete, and all the
    # records in the log (the end offsets, i.e. high watermarks, of a fresh
    # topic sum to N). With RF 3 and acks=1 the high watermark trails the
    # last acknowledgement until the followers have caught up: wait for it
    # (bounded) and note how long it took.
    local t_ack t_wait=0 tries=1
    t_ack=$(now)
    [ "$rf" -gt 1 ] && [ "$acks" != all ] && tries=150
    while :; do
        desc=$(timeout 30 "$WEIR" --bootstrap "$BOOT" topic describe "$topic" 2>/dev/null) || desc=""
        hw_sum=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 {s += $7} END {print s + 0}' <<<"$desc")
        tries=$((tries - 1))
        { [ "$hw_sum" = "$n" ] || [ "$tries" -le 0 ]; } && break
        sleep 0.2
    done
    t_wait=$(awk -v a="$t_ack" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}')
    if [ -n "$desc" ]; then
        isr_short=$(awk -v rf="$rf" '$1 ~ /^[0-9]+$/ && NF >= 7 {if (split($5, a, ",") < rf) s++} END {print s + 0}' <<<"$desc")
        # share of the records that went to the fullest partition
        top=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 {s += $7; if ($7 > m) m = $7}
                   END {if (s > 0) printf "%.1f", 100 * m / s}' <<<"$desc")
        [ "$isr_short" != 0 ] && note="ISR short of $rf replicas on $isr_short partitions after the run"
        if [ "$hw_sum" != "$n" ]; then
            note="${note:+$note; }end offsets sum to $hw_sum, not $n"
        elif [ "$rf" -gt 1 ] && [ "$acks" != all ]; then
            note="${note:+$note; }high watermark reached the last record ${t_wait} s after the last ack"
        fi
        printf 'rep %s %s\n%s\n\n' "$rep" "$lab" "$desc" >>"$WORK/describe.txt"
    else
        note="topic describe failed after the run"
    fi
    "${REPORT[@]}" add --raw "$RAW" --kind weir --id "$id" --label "$lab" --size "$size" \
        --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL" \
        --expect "$n" --top-share "$top" --note "$note"
}

# ---- NATS JetStream: 3-node cluster, up for the whole run -----------------
NATS_BIN=""
NATS_PIDS=()
NATS_URLS=""
declare -A NATS_PORT=()
nats_prepare() {
    if ! command -v nats-server >/dev/null; then
        meta note "NATS skipped: nats-server not installed (Debian package nats-server)"
        return 1
    fi
    if [ ! -f "$PEERS_DIR/nats_bench.c" ] || [ ! -f /usr/include/nats/nats.h ]; then
        meta note "NATS skipped: needs nats_bench.c from the shared peers folder and libnats-dev"
        return 1
    fi
    if ! gcc -O2 -o "$WORK/nats_bench" "$PEERS_DIR/nats_bench.c" -lnats 2>"$WORK/nats_cc.log"; then
        meta note "NATS skipped: nats_bench.c did not compile"
        return 1
    fi
    NATS_BIN=$WORK/nats_bench
}
start_nats() {
    local i name cport rport routes="" urls=() conf ok=0
    local -a rports=()
    mkdir -p "$WORK/nats"
    for i in 1 2 3; do rports+=("$(free_port)"); done
    for i in 0 1 2; do
        routes="${routes:+$routes, }nats-route://127.0.0.1:${rports[i]}"
    done
    for i in 1 2 3; do
        name=n$i
        cport=$(free_port)
        rport=${rports[i - 1]}
        NATS_PORT[$name]=$cport
        urls+=("nats://127.0.0.1:$cport")
        conf=$WORK/nats/$name.conf
        mkdir -p "$WORK/nats/$name"
        cat >"$conf" <<EOF
server_name: $name
listen: 127.0.0.1:$cport
jetstream {
  store_dir: "$WORK/nats/$name"
}
cluster {
  name: weirbench
  listen: 127.0.0.1:$rport
  routes: [ $routes ]
}
EOF
        nats-server -c "$conf" >"$WORK/nats/$name.log" 2>&1 &
        NATS_PIDS+=($!)
        PIDS+=($!)
    done
    NATS_URLS=$(IFS=,; echo "${urls[*]}")
    # ready when a 3-replica stream can be created (JetStream meta leader
    # elected and every node routed)
    for ((i = 0; i < 60; i++)); do
        # (in subshells that do not exec the command: nats_bench ends
        # itself by SIGALRM at -t, and bash would report that on stderr)
        if (timeout 10 "$NATS_BIN" -s "$NATS_URLS" -S PROBE -r 3 -t 8 create || exit 1) \
            >/dev/null 2>&1; then
            (timeout 10 "$NATS_BIN" -s "$NATS_URLS" -S PROBE -t 8 delete || exit 1) \
                >/dev/null 2>&1 || true
            ok=1
            break
        fi
        sleep 0.5
    done
    if [ "$ok" != 1 ]; then
        log "NATS JetStream cluster not ready after 30 s"
        meta note "NATS skipped: the JetStream cluster did not become ready"
        NATS_BIN=""
    fi
}

# nats_case REP SIZE REPLICAS N
nats_case() {
    local rep=$1 size=$2 r=$3 n=$4 line leader url lab id
    lab="NATS JetStream R$r $(size_label "$size") async publish (window $NATS_WIN)"
    id=nats.r$r.$size
    if ! line=$(timeout 60 "$NATS_BIN" -s "$NATS_URLS" -S B -r "$r" -t 50 create 2>"$WORK/create.out"); then
        log "NATS stream create failed: $(tail -n 3 "$WORK/create.out")"
        "${REPORT[@]}" add --raw "$RAW" --kind fail --id "$id" --label "$lab" --size "$size" \
            --rep "$rep" --note "stream create failed"
        return 0
    fi
    leader=$(sed -n 's/.*leader=\([^ ]*\).*/\1/p' <<<"$line")
    url=$NATS_URLS
    if [ -n "$leader" ] && [ -n "${NATS_PORT[$leader]:-}" ]; then
        url=nats://127.0.0.1:${NATS_PORT[$leader]}
    fi
    log "$lab ($n messages, leader ${leader:-?})"
    # shellcheck disable=SC2086
    run_measured "${NATS_PIDS[*]}" "$WORK/out" "$NATS_BIN" -s "$url" -S B -z "$size" \
        -n "$n" -w "$NATS_WIN" -t $((CASE_TIMEOUT - 10)) pub
    "${REPORT[@]}" add --raw "$RAW" --kind nats --id "$id" --label "$lab" --size "$size" \
        --rep "$rep" --file "$WORK/out" --rc "$RC" --cpu "$CPU" --ccpu "$CCPU" --wall "$WALL" \
        --expect "$n"
    timeout 60 "$NATS_BIN" -s "$NATS_URLS" -S B -t 50 delete >/dev/null 2>&1 ||
        log "NATS stream delete failed"
}

size_label() {
    case $1 in
    1024) echo 1KiB ;;
    *) echo "${1}B" ;;
    esac
}
weir_n() { [ "$1" = 100 ] && echo "$WEIR_N100" || echo "$WEIR_N1K"; }
nats_n() { [ "$1" = 100 ] && echo "$NATS_N100" || echo "$NATS_N1K"; }

run_one() { # case rep size
    case $1 in
    w3) weir_case "$2" "$3" 3 all "$(weir_n "$3")" ;;
    w1) weir_case "$2" "$3" 1 1 "$(weir_n "$3")" ;;
    w31) weir_case "$2" "$3" 3 1 "$(weir_n "$3")" ;;
    n3) nats_case "$2" "$3" 3 "$(nats_n "$3")" ;;
    n1) nats_case "$2" "$3" 1 "$(nats_n "$3")" ;;
    esac
}

# ---- the run ---------------------------------------------------------------
t_start=$(now)
if [ "$PEERS" = 1 ] && nats_prepare; then
    start_nats
    [ -n "$NATS_BIN" ] && log "NATS cluster up: $NATS_URLS ($(nats-server --version 2>&1))"
fi
CASES=(w3 w1)
[ "$WEIR_RF3_ACKS1" = 1 ] && CASES+=(w31)
if [ -n "$NATS_BIN" ]; then
    CASES+=(n3)
    [ "$NATS_R1" = 1 ] && CASES+=(n1)
    meta versions "nats-server $(nats-server --version 2>&1 | sed 's/^nats-server: //'), libnats $(dpkg-query -W -f='${Version}' libnats-dev 2>/dev/null || echo '?')"
fi
for ((rep = 1; rep <= REPS; rep++)); do
    log "=== repetition $rep of $REPS"
    start_weir "$rep"
    log "weir cluster up: brokers $BOOT"
    for size in $SIZES; do
        k=${#CASES[@]}
        for ((j = 0; j < k; j++)); do
            run_one "${CASES[(j + rep - 1) % k]}" "$rep" "$size"
        done
    done
    stop_weir
done

# anything the servers complained about
warns=0
for f in "$WORK"/weir-*/*.log; do
    c=$(grep -acE 'level=(warn|error)' "$f" || true)
    warns=$((warns + ${c:-0}))
done
meta "weir warn/error log lines" "$warns (controller + 3 brokers, all repetitions)"
# a follower truncating its log means it had records its leader does not:
# never expected on fresh topics of a cluster where no broker failed
truncs=$(cat "$WORK"/weir-*/broker-*.log | grep -ac 'event=truncated' || true)
meta "weir follower truncations (event=truncated)" "${truncs:-0} (expected 0: no broker failed)"
if [ "$warns" != 0 ]; then
    # the kinds of warning, most frequent first (level, subsystem, event)
    grep -ahE 'level=(warn|error)' "$WORK"/weir-*/*.log |
        awk '{k = ""; for (i = 1; i <= NF; i++) if ($i ~ /^(level|sub|event)=/) k = k " " $i; print substr(k, 2)}' |
        sort | uniq -c | sort -rn | head -n 8 |
        while read -r c l; do meta "weir log lines" "$c x $l"; done
fi
if [ -n "$NATS_BIN" ]; then
    c=$(cat "$WORK"/nats/n?.log | grep -cE '\[(WRN|ERR)\]' || true)
    meta "nats [WRN]/[ERR] log lines" "${c:-0} (3 servers, whole run; route dial errors at start-up included)"
fi
meta "load average at end" "$(cut -d' ' -f1-3 /proc/loadavg)"
meta note "Weir: each case is a new topic on the 3-broker cluster of its repetition (a fresh cluster per repetition); RF 1 topics spread their $PARTITIONS partition leaders over the 3 brokers like RF 3 ones do, but each record is stored once. acks=all waits for the in-sync replicas (min.insync.replicas 2); every broker uses flush-policy=ack (fsync before acknowledging)."
meta note "NATS 2.9: one stream per case (one subject, so one leader does all the work), file storage, default sync interval (no fsync before the ack); the client connects to the stream leader; R3 acks after a quorum (2 of 3) has the message."
meta note "Fullest partition % (Weir) = end offset of the partition that received the most records / all records of the case: the producer's sticky partitioner picks a partition per batch, so this shows how evenly the load was spread over the $PARTITIONS partitions (and so over the 3 leaders)."
meta note "Latency is publish/send to acknowledgement per record, with the client sending as fast as it can: it is mostly queueing in the client (Weir: 64 MiB buffer, 5 requests in flight; NATS: $NATS_WIN messages in flight), not a property of the server."
meta note "Servers CPU % = CPU time of all server processes of the system under test (Weir: controller + 3 brokers; NATS: 3 servers) during the client run / its wall time; client CPU % likewise for weir bench / nats_bench. 100 = one core; everything shares the same $(nproc) CPUs."
meta note "run took $(awk -v a="$t_start" -v b="$(now)" 'BEGIN{printf "%.0f", b - a}') s"

mkdir -p "$(dirname "$RESULTS")"
"${REPORT[@]}" table --raw "$RAW" --meta "$META" | tee "$RESULTS"
cp "$RAW" "${RESULTS%.md}.jsonl"
log "report written to $RESULTS (raw rows: ${RESULTS%.md}.jsonl)"
