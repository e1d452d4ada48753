/* SPDX-License-Identifier: Apache-2.0 */
/* Pure: no clock, no I/O; cluster.c feeds it heartbeat answers and timer
 * ticks and writes the trace lines it asks for. */
#include "broker/cluster/cluster_watch.h"

void cluster_watch_init(struct cluster_watch *w, uint64_t now_ms)
{
    w->last_ok_ms = now_ms;
    w->last_warn_ms = 0;
    w->warned = false;
}

enum cluster_watch_say cluster_watch_contact(struct cluster_watch *w,
                                             uint64_t now_ms)
{
    bool was = w->warned;

    w->last_ok_ms = now_ms;
    w->warned = false;
    return was ? CLUSTER_WATCH_RESTORED : CLUSTER_WATCH_QUIET;
}

uint64_t cluster_watch_silent_ms(const struct cluster_watch *w, uint64_t now_ms)
{
    return now_ms > w->last_ok_ms ? now_ms - w->last_ok_ms : 0;
}

enum cluster_watch_say cluster_watch_tick(struct cluster_watch *w,
                                          uint64_t now_ms,
                                          uint64_t session_ms,
                                          uint32_t n_led)
{
    if (n_led == 0 || cluster_watch_silent_ms(w, now_ms) <= session_ms) {
        return CLUSTER_WATCH_QUIET;
    }
    if (w->warned && now_ms - w->last_warn_ms < CLUSTER_WATCH_EVERY_MS) {
        return CLUSTER_WATCH_QUIET;
    }
    w->warned = true;
    w->last_warn_ms = now_ms;
    return CLUSTER_WATCH_WARN;
}
