/* SPDX-License-Identifier: Apache-2.0 */
/* plog_check_invariants: a slow, thorough self-check for tests. Reads every
 * batch header of every segment and holds the in-memory state against the
 * bytes on disk. */
#include "broker/storage/plog_int.h"

struct plog_walk {
    int64_t expect;    /* next base offset */
    int64_t max_ts;    /* running max timestamp */
    int64_t last_base; /* base of the last batch seen */
    uint32_t k;        /* next offset entry to meet */
    uint32_t j;        /* next time entry to meet */
};

/* Index entries must name batch starts, in order, with the right values. */
static int plog_check_entries(const struct seg *s,
                              struct plog_walk *w,
                              uint64_t pos,
                              const struct batch_header *h,
                              struct err_detail *ed)
{
    const struct seg_index *ix = &s->idx;
    uint32_t rel = (uint32_t)(h->base_offset - s->base_offset);

    if (w->k < ix->n_off && ix->off[w->k].pos < pos) {
        return err_set(ed, WEIR_ECORRUPT,
                       "offset entry %u (pos %u) is not at a batch start", w->k,
                       ix->off[w->k].pos);
    }
    if (w->k < ix->n_off && ix->off[w->k].pos == pos) {
        if (ix->off[w->k].rel != rel) {
            return err_set(ed, WEIR_ECORRUPT,
                           "offset entry %u says rel %u, batch has %u", w->k,
                           ix->off[w->k].rel, rel);
        }
        w->k++;
    }
    if (w->j < ix->n_time && ix->time[w->j].rel < rel) {
        return err_set(ed, WEIR_ECORRUPT,
                       "time entry %u (rel %u) is not at a batch start", w->j,
                       ix->time[w->j].rel);
    }
    if (w->j < ix->n_time && ix->time[w->j].rel == rel) {
        if (ix->time[w->j].ts != w->max_ts) {
            return err_set(ed, WEIR_ECORRUPT,
                           "time entry %u has ts %lld, max so far is %lld",
                           w->j, (long long)ix->time[w->j].ts,
                           (long long)w->max_ts);
        }
        w->j++;
    }
    return 0;
}

static int plog_check_walk(const struct seg *s, struct err_detail *ed)
{
    struct plog_walk w = {s->base_offset, SEG_NO_TIMESTAMP, -1, 0, 0};
    struct batch_header h;
    uint64_t pos;
    int rv;

    for (pos = 0; pos < s->size; pos += batch_size(&h)) {
        rv = seg_read_header(s, pos, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (s->sparse ? h.base_offset < w.expect : h.base_offset != w.expect) {
            return err_set(ed, WEIR_ECORRUPT,
                           "batch at %llu has offset %lld, expected %lld",
                           (unsigned long long)pos, (long long)h.base_offset,
                           (long long)w.expect);
        }
        if (h.max_timestamp > w.max_ts) {
            w.max_ts = h.max_timestamp;
        }
        if (s->index_loaded) {
            rv = plog_check_entries(s, &w, pos, &h, ed);
            if (rv != 0) {
                return rv;
            }
        }
        w.expect = batch_last_offset(&h) + 1;
        w.last_base = h.base_offset;
    }
    if (s->sparse ? w.expect > s->next_offset : w.expect != s->next_offset) {
        return err_set(ed, WEIR_ECORRUPT, "batches end at %lld, next is %lld",
                       (long long)w.expect, (long long)s->next_offset);
    }
    if (w.max_ts != s->max_timestamp) {
        return err_set(ed, WEIR_ECORRUPT,
                       "max timestamp %lld, batches say "
                       "%lld",
                       (long long)s->max_timestamp, (long long)w.max_ts);
    }
    if (s->index_loaded && (w.k != s->idx.n_off || w.j != s->idx.n_time)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "index entries past the last "
                       "batch");
    }
    if (s->last_batch_base != -1 && s->last_batch_base != w.last_base) {
        return err_set(ed, WEIR_ECORRUPT, "last batch %lld, tracked %lld",
                       (long long)w.last_base, (long long)s->last_batch_base);
    }
    return 0;
}

static int
plog_check_seg(const struct plog *log, uint32_t i, struct err_detail *ed)
{
    const struct seg *s = log->segs[i];
    bool active = i == log->n_segs - 1;
    int rv;

    if (s->next_offset < s->base_offset ||
        (!s->sparse && (s->size == 0) != (s->next_offset == s->base_offset))) {
        return err_set(ed, WEIR_ECORRUPT,
                       "offsets [%lld, %lld) in %llu "
                       "bytes",
                       (long long)s->base_offset, (long long)s->next_offset,
                       (unsigned long long)s->size);
    }
    if (i > 0 && log->segs[i - 1]->next_offset != s->base_offset) {
        return err_set(ed, WEIR_ECORRUPT, "gap before %lld",
                       (long long)s->base_offset);
    }
    if (active != (s->index_file != NULL) ||
        (active &&
         (!s->index_loaded || (s->size > 0 && s->last_batch_base < 0)))) {
        return err_set(ed, WEIR_ECORRUPT, "active state is inconsistent");
    }
    if (s->index_loaded) {
        rv = seg_index_check(&s->idx, s->size,
                             (uint64_t)(s->next_offset - s->base_offset), ed);
        if (rv != 0) {
            return rv;
        }
    }
    return plog_check_walk(s, ed);
}

int plog_check_invariants(const struct plog *log, struct err_detail *ed)
{
    uint32_t i;
    int rv;

    if (log->n_segs == 0) {
        return err_set(ed, WEIR_ECORRUPT, "%s has no segment", log->dir);
    }
    if (log->durable_offset > plog_end_offset(log)) {
        return err_set(ed, WEIR_ECORRUPT, "durable offset %lld past end %lld",
                       (long long)log->durable_offset,
                       (long long)plog_end_offset(log));
    }
    for (i = 0; i < log->n_segs; i++) {
        rv = plog_check_seg(log, i, ed);
        if (rv != 0) {
            err_wrap(ed, "%s segment %020lld", log->dir,
                     (long long)log->segs[i]->base_offset);
            return WEIR_ECORRUPT;
        }
    }
    return 0;
}
