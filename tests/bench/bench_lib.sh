# SPDX-License-Identifier: Apache-2.0
# Process helpers shared by the bench scripts (sourced, not run). The
# caller defines log MESSAGE. Processes are stopped by PID, never by name.

alive() { # pid: running and not a zombie
    local s
    s=$(awk '/^State:/{print $2}' "/proc/$1/status" 2>/dev/null) || return 1
    [ -n "$s" ] && [ "$s" != Z ]
}

stop_pid() { # pid [grace seconds]: SIGTERM, then SIGKILL after the grace
    local p=$1 grace=${2:-30} i
    [ -n "$p" ] || return 0
    if alive "$p"; then
        kill -TERM "$p" 2>/dev/null || true
        for ((i = 0; i < grace * 10; i++)); do
            alive "$p" || break
            sleep 0.1
        done
        if alive "$p"; then
            log "pid $p still running after ${grace}s: SIGKILL"
            kill -KILL "$p" 2>/dev/null || true
        fi
    fi
    wait "$p" 2>/dev/null || true
}
