/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory's health: the offline hook every partition log
 * carries, the round-robin scrub that verifies what this process has not
 * read yet, and the free space check that decides when an offline log may
 * come back. Decisions about roles stay with the caller (the broker). */
#include <stdbool.h>

#include "broker/storage/logmgr.h"
#include "broker/storage/logmgr_int.h"

void logmgr_set_offline_hook(struct logmgr *m, plog_offline_fn fn, void *arg)
{
    uint32_t i;
    int32_t p;

    m->offline_fn = fn;
    m->offline_arg = arg;
    for (i = 0; i < m->n_topics; i++) {
        struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            if (r->logs[p] != NULL) {
                plog_set_offline_hook(r->logs[p], fn, arg);
            }
        }
    }
}

void logmgr_set_opened_hook(struct logmgr *m, logmgr_opened_fn fn, void *arg)
{
    m->opened_fn = fn;
    m->opened_arg = arg;
}

/* Does log need the scrub now: there, online, not all verified. */
static bool logmgr_scrub_wanted(const struct plog *log)
{
    return log != NULL && !plog_is_offline(log) && !plog_verified(log);
}

/* Scrub log with what is left of the budget. False on WEIR_ENOMEM (ed
 * set); a corrupt or unreadable log went offline, traced by the log, and
 * the scrub goes on with the others. */
static bool logmgr_scrub_one(struct plog *log,
                             uint64_t budget,
                             uint64_t *checked,
                             struct err_detail *ed)
{
    struct err_detail led;
    uint64_t got = 0;
    int rv;

    err_detail_clear(&led);
    rv = plog_scrub(log, budget - *checked, &got, &led);
    *checked += got;
    if (rv == WEIR_ENOMEM) {
        if (ed != NULL) {
            *ed = led;
        }
        return false;
    }
    return true;
}

int logmgr_scrub(struct logmgr *m,
                 uint64_t budget,
                 uint64_t *checked,
                 bool *more,
                 struct err_detail *ed)
{
    uint32_t total = logmgr_partition_count(m);
    uint32_t ti = m->scrub_topic < m->n_topics ? m->scrub_topic : 0;
    int32_t p = m->scrub_part;
    uint32_t k;

    *checked = 0;
    *more = false;
    if (total == 0) {
        return 0;
    }
    if (p < 0 || p >= m->topics[ti]->partitions) {
        p = 0;
    }
    /* one log at a time, staying on it until it is done, so a long scrub
     * finishes partitions one after another; every partition at most
     * once, walked in place (no lookup per step: this runs every tick) */
    for (k = 0; k < total; k++) {
        struct plog *log = m->topics[ti]->logs[p];

        if (logmgr_scrub_wanted(log)) {
            m->scrub_topic = ti;
            m->scrub_part = p;
            if (*checked >= budget) {
                *more = true;
                return 0;
            }
            if (!logmgr_scrub_one(log, budget, checked, ed)) {
                *more = true;
                return WEIR_ENOMEM;
            }
            if (logmgr_scrub_wanted(log)) {
                *more = true; /* the budget ran out inside it */
                return 0;
            }
        }
        if (++p >= m->topics[ti]->partitions) {
            p = 0;
            ti = (ti + 1) % m->n_topics;
        }
    }
    return 0;
}

int logmgr_free_bytes(struct logmgr *m, uint64_t *out, struct err_detail *ed)
{
    return m->ops->free_bytes(m->ops->ctx, m->data_dir, out, ed);
}

bool logmgr_find_log(const struct logmgr *m,
                     const struct plog *log,
                     const char **topic,
                     int32_t *partition)
{
    uint32_t i;
    int32_t p;

    for (i = 0; i < m->n_topics; i++) {
        const struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            if (r->logs[p] == log) {
                *topic = r->name;
                *partition = p;
                return true;
            }
        }
    }
    return false;
}
