/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory sparse indexes of a segment; see seg_index.h for the entry
 * meanings. Lookups are binary searches over the sorted arrays. */
#include "broker/storage/seg_index.h"

#include <string.h>

#include "common/mem.h"

#define SEG_INDEX_MIN_CAP 8

void seg_index_init(struct seg_index *ix)
{
    memset(ix, 0, sizeof(*ix));
}

void seg_index_fini(struct seg_index *ix)
{
    mem_free(ix->off);
    mem_free(ix->time);
    seg_index_init(ix);
}

static int seg_index_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    uint64_t ncap = *cap < SEG_INDEX_MIN_CAP ? SEG_INDEX_MIN_CAP : *cap;
    void *p;

    if (need <= *cap) {
        return 0;
    }
    while (ncap < need) {
        ncap *= 2;
    }
    if (ncap > UINT32_MAX) {
        ncap = UINT32_MAX;
    }
    p = mem_realloc(*arr, (size_t)ncap * elem);
    if (p == NULL) {
        return WEIR_ENOMEM;
    }
    *arr = p;
    *cap = (uint32_t)ncap;
    return 0;
}

int seg_index_reserve(struct seg_index *ix, uint32_t extra)
{
    void *p;
    int rv;

    if ((uint64_t)ix->n_off + extra > UINT32_MAX ||
        (uint64_t)ix->n_time + extra > UINT32_MAX) {
        return WEIR_ENOMEM;
    }
    p = ix->off;
    rv = seg_index_grow(&p, &ix->cap_off, ix->n_off + extra,
                        sizeof(struct seg_offset_entry));
    ix->off = p;
    if (rv != 0) {
        return rv;
    }
    p = ix->time;
    rv = seg_index_grow(&p, &ix->cap_time, ix->n_time + extra,
                        sizeof(struct seg_time_entry));
    ix->time = p;
    return rv;
}

void seg_index_add_offset(struct seg_index *ix, uint32_t rel, uint32_t pos)
{
    ix->off[ix->n_off].rel = rel;
    ix->off[ix->n_off].pos = pos;
    ix->n_off++;
}

void seg_index_add_time(struct seg_index *ix, int64_t ts, uint32_t rel)
{
    ix->time[ix->n_time].ts = ts;
    ix->time[ix->n_time].rel = rel;
    ix->n_time++;
}

uint32_t seg_index_lookup(const struct seg_index *ix, uint32_t rel)
{
    uint32_t lo = 0;
    uint32_t hi = ix->n_off;

    /* first entry with rel > target; the one before it is the answer */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->off[mid].rel <= rel) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == 0 ? 0 : ix->off[lo - 1].pos;
}

uint32_t seg_index_count_below(const struct seg_index *ix,
                               uint64_t max_pos,
                               uint64_t max_rel)
{
    uint32_t lo = 0;
    uint32_t hi = ix->n_off;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->off[mid].pos <= max_pos && ix->off[mid].rel < max_rel) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

uint32_t seg_index_time_lookup(const struct seg_index *ix, int64_t ts)
{
    uint32_t lo = 0;
    uint32_t hi = ix->n_time;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ix->time[mid].ts < ts) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == 0 ? 0 : ix->time[lo - 1].rel;
}

int64_t seg_index_last_ts(const struct seg_index *ix)
{
    return ix->n_time == 0 ? SEG_NO_TIMESTAMP : ix->time[ix->n_time - 1].ts;
}

void seg_index_truncate(struct seg_index *ix,
                        uint32_t rel_end,
                        uint32_t pos_end)
{
    while (ix->n_off > 0 && ix->off[ix->n_off - 1].pos >= pos_end) {
        ix->n_off--;
    }
    while (ix->n_time > 0 && ix->time[ix->n_time - 1].rel >= rel_end) {
        ix->n_time--;
    }
    if (ix->off_written > ix->n_off) {
        ix->off_written = ix->n_off;
    }
    if (ix->time_written > ix->n_time) {
        ix->time_written = ix->n_time;
    }
}

int seg_index_check(const struct seg_index *ix,
                    uint64_t log_size,
                    uint64_t span,
                    struct err_detail *ed)
{
    uint32_t i;

    for (i = 0; i < ix->n_off; i++) {
        const struct seg_offset_entry *e = &ix->off[i];
        if (e->pos >= log_size || e->rel >= span) {
            return err_set(ed, WEIR_ECORRUPT,
                           "offset index entry %u (rel %u, pos %u) lies "
                           "outside the segment (%llu bytes, %llu offsets)",
                           i, e->rel, e->pos, (unsigned long long)log_size,
                           (unsigned long long)span);
        }
        if (i > 0 && (e->rel <= e[-1].rel || e->pos <= e[-1].pos)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "offset index entry %u (rel %u, pos %u) does not "
                           "follow (rel %u, pos %u)",
                           i, e->rel, e->pos, e[-1].rel, e[-1].pos);
        }
    }
    for (i = 0; i < ix->n_time; i++) {
        const struct seg_time_entry *t = &ix->time[i];
        if (t->rel >= span) {
            return err_set(ed, WEIR_ECORRUPT,
                           "time index entry %u (rel %u) lies outside the "
                           "segment (%llu offsets)",
                           i, t->rel, (unsigned long long)span);
        }
        if (i > 0 && (t->ts <= t[-1].ts || t->rel <= t[-1].rel)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "time index entry %u (ts %lld, rel %u) does not "
                           "follow (ts %lld, rel %u)",
                           i, (long long)t->ts, t->rel, (long long)t[-1].ts,
                           t[-1].rel);
        }
    }
    return 0;
}

int seg_index_decode(struct seg_index *ix,
                     struct weir_slice offsets,
                     struct weir_slice times,
                     uint64_t log_size,
                     uint64_t span,
                     struct err_detail *ed)
{
    struct weir_cursor c;
    uint64_t n_off = offsets.len / SEG_INDEX_ENTRY_BYTES;
    uint64_t n_time = times.len / SEG_TIME_ENTRY_BYTES;
    uint32_t rel;
    uint32_t pos;
    uint64_t ts;
    int rv;

    ix->n_off = 0;
    ix->n_time = 0;
    ix->off_written = 0;
    ix->time_written = 0;
    if (offsets.len % SEG_INDEX_ENTRY_BYTES != 0 ||
        times.len % SEG_TIME_ENTRY_BYTES != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "index sizes %zu and %zu are not multiples of %d and "
                       "%d bytes",
                       offsets.len, times.len, SEG_INDEX_ENTRY_BYTES,
                       SEG_TIME_ENTRY_BYTES);
    }
    if (n_off > UINT32_MAX || n_time > UINT32_MAX) {
        return err_set(ed, WEIR_ECORRUPT, "index too large");
    }
    rv = seg_index_reserve(ix, (uint32_t)(n_off > n_time ? n_off : n_time));
    if (rv != 0) {
        return err_set(ed, rv, "loading index: out of memory");
    }
    cur_init(&c, offsets.p, offsets.len);
    while (cur_u32be(&c, &rel) && cur_u32be(&c, &pos)) {
        seg_index_add_offset(ix, rel, pos);
    }
    cur_init(&c, times.p, times.len);
    while (cur_u64be(&c, &ts) && cur_u32be(&c, &rel)) {
        seg_index_add_time(ix, (int64_t)ts, rel);
    }
    rv = seg_index_check(ix, log_size, span, ed);
    if (rv != 0) {
        ix->n_off = 0;
        ix->n_time = 0;
        return rv;
    }
    ix->off_written = ix->n_off;
    ix->time_written = ix->n_time;
    return 0;
}

void seg_index_encode_offsets(const struct seg_index *ix,
                              uint32_t from,
                              struct weir_buf *b)
{
    uint32_t i;

    for (i = from; i < ix->n_off; i++) {
        buf_put_u32be(b, ix->off[i].rel);
        buf_put_u32be(b, ix->off[i].pos);
    }
}

void seg_index_encode_times(const struct seg_index *ix,
                            uint32_t from,
                            struct weir_buf *b)
{
    uint32_t i;

    for (i = from; i < ix->n_time; i++) {
        buf_put_u64be(b, (uint64_t)ix->time[i].ts);
        buf_put_u32be(b, ix->time[i].rel);
    }
}
