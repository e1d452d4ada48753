/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory's health: the offline hook every partition log
 * carries, the round-robin scrub that verifies what this process has not
 * read yet, and the free space check that decides when an offline log may
 * come back. Decisions about roles stay with the caller (the broker). */
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

int logmgr_scrub(struct logmgr *m,
                 uint64_t budget,
                 uint64_t *checked,
                 struct err_detail *ed)
{
    uint32_t total = logmgr_partition_count(m);
    struct err_detail led;
    struct logmgr_rec *r;
    uint64_t got;
    uint32_t k;
    int32_t p;
    int rv;

    *checked = 0;
    /* one log at a time, staying on it until it is done, so a long scrub
     * finishes partitions one after another */
    for (k = 0; k < total && *checked < budget; k++) {
        uint32_t flat = (m->scrub_next + k) % total;
        if (!logmgr_flat(m, flat, &r, &p) || r->logs[p] == NULL ||
            plog_is_offline(r->logs[p]) || plog_verified(r->logs[p])) {
            continue;
        }
        m->scrub_next = flat;
        err_detail_clear(&led);
        rv = plog_scrub(r->logs[p], budget - *checked, &got, &led);
        *checked += got;
        if (rv == WEIR_ENOMEM) {
            if (ed != NULL) {
                *ed = led;
            }
            return rv;
        }
        /* WEIR_ELOG_OFFLINE: found corrupt or unreadable, traced by the
         * log; the scrub goes on with the others */
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
