/* SPDX-License-Identifier: Apache-2.0 */
/* Verification of bytes nobody checked in this process: a clean start
 * trusts closed segments without reading them, so a bit flipped on disk
 * would be served (and replicated) as it is. Each segment keeps the spans
 * known valid (seg_verified_*); plog_read checks what it is about to serve
 * when it is not in them, and the scrub walks the rest at a bounded rate.
 * A batch that fails takes the log offline as corrupt at that offset. */
#include <stdio.h>

#include "broker/storage/plog_int.h"
#include "broker/storage/recover.h"
#include "common/trace.h"

/* The base offset of the batch at bad_pos when the verdict could not
 * tell: the last index entry at or before it (an offset at or below the
 * real one), else the segment's base. */
static int64_t plog_guess_offset(const struct seg *s, uint64_t bad_pos)
{
    int64_t off = s->base_offset;
    uint32_t i;

    for (i = 0; s->index_loaded && i < s->idx.n_off; i++) {
        if (s->idx.off[i].pos > bad_pos) {
            break;
        }
        off = s->base_offset + s->idx.off[i].rel;
    }
    return off;
}

static int plog_mark_corrupt(struct plog *log,
                             const struct seg *s,
                             const struct recover_verdict *v,
                             struct err_detail *ed)
{
    char why[400];

    if (!log->offline) {
        log->corrupt_base = s->base_offset;
        log->corrupt_pos = v->bad_pos;
        log->corrupt_offset = v->bad_offset >= 0
                                  ? v->bad_offset
                                  : plog_guess_offset(s, v->bad_pos);
        trace_error("storage",
                    "event=log_corrupt file=%s/%020lld.log position=%llu "
                    "offset=%lld reason=\"%s\"",
                    log->dir, (long long)s->base_offset,
                    (unsigned long long)v->bad_pos,
                    (long long)log->corrupt_offset, v->why.msg);
    }
    (void)snprintf(why, sizeof(why),
                   "corrupt batch in %020lld.log at byte %llu (offset %lld): "
                   "%.200s",
                   (long long)s->base_offset, (unsigned long long)v->bad_pos,
                   (long long)log->corrupt_offset, v->why.msg);
    plog_mark_offline(log, WEIR_ECORRUPT, why);
    return plog_check_online(log, ed);
}

int plog_verify_range(struct plog *log,
                      struct seg *s,
                      uint64_t from,
                      uint64_t to,
                      uint64_t *checked,
                      struct err_detail *ed)
{
    struct recover_verdict v;
    uint64_t gap_end;
    uint64_t at = seg_verified_gap(s, from, &gap_end);
    int rv;

    while (at < to && at < s->size) {
        rv = recover_verify(s, at, gap_end < to ? gap_end : to, &v, ed);
        if (rv != 0) {
            (void)plog_failed(log, rv, false, ed);
            return log->offline ? plog_check_online(log, ed) : rv;
        }
        seg_verified_add(s, at, v.end);
        *checked += (v.bad ? v.bad_pos : v.end) - at;
        if (v.bad) {
            return plog_mark_corrupt(log, s, &v, ed);
        }
        if (v.end <= at) {
            break; /* cannot happen: a good batch has a length */
        }
        at = seg_verified_gap(s, v.end, &gap_end);
    }
    return 0;
}

int plog_corrupt_near(struct plog *log,
                      struct seg *s,
                      int64_t offset,
                      int rv,
                      struct err_detail *ed)
{
    struct err_detail ved;
    uint64_t checked = 0;
    uint64_t from = 0;

    if (s->index_loaded && offset >= s->base_offset) {
        from = seg_index_lookup(&s->idx, (uint32_t)(offset - s->base_offset));
    }
    err_detail_clear(&ved);
    /* the header that did not decode lies at or after the indexed batch */
    if (plog_verify_range(log, s, from, s->size, &checked, &ved) != 0 &&
        log->offline) {
        if (ed != NULL) {
            *ed = ved;
        }
        return WEIR_ELOG_OFFLINE;
    }
    return rv;
}

int plog_scrub(struct plog *log,
               uint64_t budget,
               uint64_t *checked,
               struct err_detail *ed)
{
    uint64_t gap_end;
    uint32_t i;
    int rv;

    *checked = 0;
    rv = plog_check_online(log, ed);
    if (rv != 0 || log->verified_all) {
        return rv;
    }
    for (i = 0; i < log->n_segs && *checked < budget; i++) {
        struct seg *s = log->segs[i];
        uint64_t at = seg_verified_gap(s, 0, &gap_end);

        if (at < s->size) {
            rv = plog_verify_range(log, s, at, at + (budget - *checked),
                                   checked, ed);
            if (rv != 0) {
                return rv;
            }
            at = seg_verified_gap(s, 0, &gap_end);
        }
        if (at < s->size) {
            break; /* budget spent inside s */
        }
    }
    if (i == log->n_segs) {
        log->verified_all = true;
        trace_info("storage", "event=scrub_done dir=%s segments=%u", log->dir,
                   log->n_segs);
    }
    return 0;
}

bool plog_verified(const struct plog *log)
{
    return log->verified_all;
}
