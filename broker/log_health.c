/* SPDX-License-Identifier: Apache-2.0 */
/* The broker side of offline logs and the scrub; see log_health.h. The
 * storage layer refuses and reports; this adapter decides, from the
 * cluster metadata, when a log may come back, and does the follow-up
 * (producer state, epoch cache, the follower's fetcher). */
#include "broker/log_health.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/broker.h"
#include "broker/cluster/cluster.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/trace.h"

#define LH_SCRUB_TICK_MS    100
#define LH_SCRUB_MIN_BUDGET 4096
#define LH_WAIT_TRACE_EVERY 12 /* retry passes between info traces */

/* When a log went offline (monotonic), for the repair rule below. */
struct lh_since {
    const struct plog *log; /* compared only: it may be gone */
    uint64_t ms;
};

struct log_health {
    struct broker *b;
    struct lh_since *since; /* logs offline now, in no order */
    uint32_t n_since;
    uint32_t cap_since;
    struct event *offline_ev; /* deferred: some log went offline */
    struct event *retry_timer;
    struct event *scrub_timer;
    uint64_t passes;   /* retry passes so far */
    uint64_t free;     /* free bytes seen by the current pass */
    int64_t wall_ms;   /* wall time of the current pass */
    uint64_t scrubbed; /* bytes checked by the scrub so far */
};

static struct lh_since *lh_since_find(const struct log_health *h,
                                      const struct plog *log)
{
    uint32_t i;

    for (i = 0; i < h->n_since; i++) {
        if (h->since[i].log == log) {
            return &h->since[i];
        }
    }
    return NULL;
}

static void lh_arm(struct event *ev, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    (void)event_add(ev, &tv);
}

/* The scrub runs again (a log was opened or came back online). */
static void lh_scrub_kick(void *arg)
{
    struct log_health *h = arg;

    if (h->scrub_timer != NULL && !evtimer_pending(h->scrub_timer, NULL)) {
        lh_arm(h->scrub_timer, LH_SCRUB_TICK_MS);
    }
}

/* Inside the failing storage call: only note it. */
static void lh_offline_hook(void *arg, struct plog *log)
{
    struct log_health *h = arg;
    struct lh_since *v;

    if (lh_since_find(h, log) == NULL) {
        if (h->n_since == h->cap_since) {
            uint32_t cap = h->cap_since == 0 ? 8 : h->cap_since * 2;
            v = mem_realloc(h->since, cap * sizeof(*v));
            if (v != NULL) {
                h->since = v;
                h->cap_since = cap;
            }
        }
        /* out of memory: the log counts as offline since the next pass */
        if (h->n_since < h->cap_since) {
            h->since[h->n_since].log = log;
            h->since[h->n_since].ms = clock_now_ms(h->b->clock);
            h->n_since++;
        }
    }
    event_active(h->offline_ev, EV_TIMEOUT, 0);
}

/* Forget logs that are back online or gone (topic deleted). */
static void lh_since_prune(struct log_health *h)
{
    const char *topic;
    int32_t partition;
    uint32_t i = 0;

    while (i < h->n_since) {
        const struct plog *log = h->since[i].log;
        if (logmgr_find_log(h->b->logs, log, &topic, &partition) &&
            plog_is_offline(log)) {
            i++;
            continue;
        }
        h->since[i] = h->since[--h->n_since];
    }
}

static void
lh_fail_waits(void *arg, const char *topic, int32_t partition, struct plog *log)
{
    struct broker *b = arg;
    char msg[512];

    if (log == NULL || !plog_is_offline(log)) {
        return;
    }
    /* these writes reached the log (or part of it) before it failed: the
     * outcome is unknown, never "not written" */
    (void)snprintf(msg, sizeof(msg),
                   "the log of %s/%d went offline before the write was "
                   "acknowledged; it may or may not be kept: %.300s",
                   topic, (int)partition, plog_offline_reason(log));
    api_produce_fail_log(b, log, WEIR_EIO, msg);
}

static void lh_offline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct log_health *h = arg;

    (void)fd;
    (void)what;
    logmgr_each(h->b->logs, lh_fail_waits, h->b);
}

static bool lh_in(const struct meta_ids *ids, int32_t id)
{
    uint32_t i;

    for (i = 0; i < ids->n; i++) {
        if (ids->ids[i] == id) {
            return true;
        }
    }
    return false;
}

/* Cluster mode: the partition as the applied metadata shows it. */
static bool lh_cluster_may(const struct broker *b,
                           const char *topic,
                           int32_t partition,
                           bool corrupt,
                           uint64_t offline_ms,
                           char *why,
                           size_t why_cap)
{
    const struct meta_topic *t = meta_image_topic_by_name(
        cluster_image(b->cluster), topic, strlen(topic));
    const struct meta_partition *mp = NULL;
    int32_t self = (int32_t)b->cfg.id;

    if (t != NULL && partition >= 0 && (uint32_t)partition < t->n_partitions) {
        mp = &t->partitions[partition];
    }
    if (mp == NULL) {
        (void)snprintf(why, why_cap, "not in the cluster metadata");
        return !corrupt;
    }
    if (mp->leader == self) {
        /* coming back as leader would skip the catching up: the
         * controller moves the leadership first (offline_replicas) */
        (void)snprintf(why, why_cap,
                       "leads it: waiting for the controller to move the "
                       "leadership");
        return false;
    }
    if (!corrupt) {
        return true;
    }
    if (mp->leader < 0) {
        (void)snprintf(why, why_cap,
                       "corrupt: no leader to copy the records it cuts from");
        return false;
    }
    if (lh_in(&mp->isr, self)) {
        /* cutting below the high watermark while counted in the ISR could
         * lose committed records if it were elected */
        (void)snprintf(why, why_cap, "corrupt: still in the ISR");
        return false;
    }
    if (offline_ms < 2 * (uint64_t)b->cfg.heartbeat_interval_ms) {
        /* listed in a heartbeat first, so the controller keeps it out of
         * the ISR even if an ISR change is on its way to us */
        (void)snprintf(why, why_cap,
                       "corrupt: not yet reported to the controller");
        return false;
    }
    return true;
}

bool log_health_may_recover(const struct broker *b,
                            const char *topic,
                            int32_t partition,
                            const struct plog *log,
                            uint64_t free_bytes,
                            uint64_t offline_ms,
                            char *why,
                            size_t why_cap)
{
    bool corrupt = plog_offline_cause(log) == PLOG_OFFLINE_CORRUPT;

    why[0] = '\0';
    if (free_bytes < (uint64_t)b->cfg.log_min_free_bytes) {
        (void)snprintf(why, why_cap,
                       "%llu bytes free, below log-min-free-bytes %lld",
                       (unsigned long long)free_bytes,
                       (long long)b->cfg.log_min_free_bytes);
        return false;
    }
    if (b->cluster != NULL) {
        return lh_cluster_may(b, topic, partition, corrupt, offline_ms, why,
                              why_cap);
    }
    if (corrupt) {
        (void)snprintf(why, why_cap,
                       "corrupt, and this broker holds the only copy: no "
                       "replica to copy the records from (docs/storage.md)");
        return false;
    }
    return true;
}

static void
lh_retry_one(void *arg, const char *topic, int32_t partition, struct plog *log)
{
    struct log_health *h = arg;
    struct broker *b = h->b;
    struct lh_since *since;
    struct err_detail ed;
    char why[256];
    int64_t before;
    int64_t after;

    if (log == NULL || !plog_is_offline(log)) {
        return;
    }
    since = lh_since_find(h, log);
    if (since == NULL) { /* offline before the hook was set, or no memory */
        lh_offline_hook(h, log);
        return;
    }
    if (!log_health_may_recover(b, topic, partition, log, h->free,
                                clock_now_ms(b->clock) - since->ms, why,
                                sizeof(why))) {
        if (h->passes % LH_WAIT_TRACE_EVERY == 1) {
            trace_info("storage",
                       "event=log_offline_wait topic=%s partition=%d "
                       "reason=\"%s\"",
                       topic, (int)partition, why);
        }
        return;
    }
    err_detail_clear(&ed);
    if (plog_recover(log, h->wall_ms, &before, &after, &ed) != 0) {
        return; /* traced; the next pass tries again */
    }
    /* the log may be shorter: what was derived from it is rebuilt */
    idem_io_invalidate(b->idem, topic, partition);
    repl_io_log_reopened(b->repl, topic, partition, log);
    lh_scrub_kick(h); /* reopened: nothing of it is verified */
    trace_info("storage",
               "event=partition_online topic=%s partition=%d end_before=%lld "
               "end_offset=%lld",
               topic, (int)partition, (long long)before, (long long)after);
}

static void lh_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct log_health *h = arg;
    struct err_detail ed;

    (void)fd;
    (void)what;
    h->passes++;
    err_detail_clear(&ed);
    if (logmgr_free_bytes(h->b->logs, &h->free, &ed) != 0) {
        trace_warn("storage", "event=free_space_unknown reason=\"%s\"", ed.msg);
        h->free = 0;
    }
    h->wall_ms = clock_wall_ms(h->b->clock);
    lh_since_prune(h);
    logmgr_each(h->b->logs, lh_retry_one, h);
}

/* Every LH_SCRUB_TICK_MS while some online log is not verified; stopped
 * when none is (an idle broker does nothing), started again by
 * lh_scrub_kick when a log is opened or comes back online. */
static void lh_scrub_cb(evutil_socket_t fd, short what, void *arg)
{
    struct log_health *h = arg;
    uint64_t budget =
        (uint64_t)h->b->cfg.scrub_bytes_per_sec * LH_SCRUB_TICK_MS / 1000;
    struct err_detail ed;
    uint64_t checked = 0;
    bool more = false;

    (void)fd;
    (void)what;
    if (budget < LH_SCRUB_MIN_BUDGET) {
        budget = LH_SCRUB_MIN_BUDGET;
    }
    err_detail_clear(&ed);
    if (logmgr_scrub(h->b->logs, budget, &checked, &more, &ed) != 0) {
        trace_warn("storage", "event=scrub_failed reason=\"%s\"", ed.msg);
    }
    h->scrubbed += checked;
    if (more) {
        lh_arm(h->scrub_timer, LH_SCRUB_TICK_MS);
    } else {
        trace_info("storage",
                   "event=scrub_idle bytes_checked=%llu reason=\"every "
                   "online log verified: the scrub stops until a log is "
                   "opened or back online\"",
                   (unsigned long long)h->scrubbed);
    }
}

int log_health_open(struct broker *b, struct err_detail *ed)
{
    struct log_health *h = mem_calloc(1, sizeof(*h));

    if (h == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    h->b = b;
    b->health = h;
    h->offline_ev = event_new(b->base, -1, 0, lh_offline_cb, h);
    h->retry_timer = event_new(b->base, -1, EV_PERSIST, lh_retry_cb, h);
    if (b->cfg.scrub_bytes_per_sec > 0) {
        h->scrub_timer = event_new(b->base, -1, 0, lh_scrub_cb, h);
    }
    if (h->offline_ev == NULL || h->retry_timer == NULL ||
        (b->cfg.scrub_bytes_per_sec > 0 && h->scrub_timer == NULL)) {
        return err_set(ed, WEIR_ENOMEM, "cannot create storage timers");
    }
    logmgr_set_offline_hook(b->logs, lh_offline_hook, h);
    logmgr_set_opened_hook(b->logs, lh_scrub_kick, h);
    lh_arm(h->retry_timer, b->cfg.log_offline_retry_ms);
    if (h->scrub_timer != NULL) {
        lh_arm(h->scrub_timer, LH_SCRUB_TICK_MS);
    }
    return 0;
}

void log_health_close(struct broker *b)
{
    struct log_health *h = b->health;

    if (h == NULL) {
        return;
    }
    if (b->logs != NULL) {
        logmgr_set_offline_hook(b->logs, NULL, NULL);
        logmgr_set_opened_hook(b->logs, NULL, NULL);
    }
    if (h->offline_ev != NULL) {
        event_free(h->offline_ev);
    }
    if (h->retry_timer != NULL) {
        event_free(h->retry_timer);
    }
    if (h->scrub_timer != NULL) {
        event_free(h->scrub_timer);
    }
    b->health = NULL;
    mem_free(h->since);
    mem_free(h);
}
