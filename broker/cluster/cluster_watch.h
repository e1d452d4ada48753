/* SPDX-License-Identifier: Apache-2.0 */
/* A leader's view of its contact with the controller, as a pure state
 * machine (times are inputs): when no heartbeat has been answered for
 * longer than the controller's session timeout while this broker still
 * leads partitions, the controller has probably fenced it and elected
 * other leaders, so it says so (a warning every CLUSTER_WATCH_EVERY_MS
 * while it lasts) and says again when contact is back.
 * Locality: the broker loop thread. */
#ifndef BROKER_CLUSTER_CLUSTER_WATCH_H
#define BROKER_CLUSTER_CLUSTER_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#define CLUSTER_WATCH_EVERY_MS 5000 /* between two warnings */

struct cluster_watch {
    uint64_t last_ok_ms;   /* last answered heartbeat or registration */
    uint64_t last_warn_ms; /* when the last warning went out */
    bool warned;           /* a warning is out since the last contact */
};

enum cluster_watch_say {
    CLUSTER_WATCH_QUIET,
    CLUSTER_WATCH_WARN,     /* cut off while leading: warn */
    CLUSTER_WATCH_RESTORED, /* contact back after a warning: say so */
};

/* Start counting silence from now_ms. */
void cluster_watch_init(struct cluster_watch *w, uint64_t now_ms);

/* The controller answered. RESTORED when a warning was out. */
enum cluster_watch_say cluster_watch_contact(struct cluster_watch *w,
                                             uint64_t now_ms);

/* Periodic check: WARN when silent for longer than session_ms while
 * leading (n_led > 0), at most once per CLUSTER_WATCH_EVERY_MS. */
enum cluster_watch_say cluster_watch_tick(struct cluster_watch *w,
                                          uint64_t now_ms,
                                          uint64_t session_ms,
                                          uint32_t n_led);

/* Milliseconds since the last contact. */
uint64_t cluster_watch_silent_ms(const struct cluster_watch *w,
                                 uint64_t now_ms);

#endif /* BROKER_CLUSTER_CLUSTER_WATCH_H */
