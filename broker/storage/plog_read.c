/* SPDX-License-Identifier: Apache-2.0 */
/* Reads: locate the batch holding an offset (offset index, then batch
 * headers forward), extend by whole batches for a fetch, and find the
 * first offset at or after a timestamp. Nothing here writes. */
#include <string.h>

#include "broker/storage/plog_int.h"
#include "common/mem.h"

int plog_find_batch(const struct seg *s,
                    int64_t offset,
                    uint64_t *pos,
                    struct batch_header *h,
                    struct err_detail *ed)
{
    uint64_t p = seg_index_lookup(&s->idx, (uint32_t)(offset - s->base_offset));
    int rv;

    while (p < s->size) {
        rv = seg_read_header(s, p, h, ed);
        if (rv != 0) {
            return rv;
        }
        if (batch_last_offset(h) >= offset) {
            if (h->base_offset > offset && !s->sparse) {
                break; /* a gap: the index or the log is wrong */
            }
            /* sparse: offset was compacted away, the next record kept
             * stands in for it (as in Kafka) */
            *pos = p;
            return 0;
        }
        p += batch_size(h);
    }
    if (s->sparse) {
        return WEIR_ENOT_FOUND; /* removed from the end of the segment */
    }
    return err_set(ed, WEIR_ECORRUPT,
                   "offset %lld not found in segment %s/%020lld.log",
                   (long long)offset, s->dir, (long long)s->base_offset);
}

int plog_locate(struct plog *log,
                int64_t offset,
                uint32_t *seg,
                uint64_t *pos,
                struct batch_header *h,
                struct err_detail *ed)
{
    uint32_t i = plog_seg_at(log, offset);
    int rv;

    for (; i < log->n_segs; i++) {
        struct seg *s = log->segs[i];
        if (offset < s->base_offset) {
            offset = s->base_offset;
        }
        rv = plog_ensure_index(log, s, ed);
        if (rv == 0) {
            rv = plog_find_batch(s, offset, pos, h, ed);
        }
        if (rv != WEIR_ENOT_FOUND) {
            *seg = i;
            return rv;
        }
    }
    return WEIR_ENOT_FOUND;
}

/* End position of the run of whole batches from pos (first batch ending at
 * *end) that stay below max_offset and within max_bytes of pos. */
static int plog_extend(const struct seg *s,
                       uint64_t pos,
                       int64_t max_offset,
                       uint32_t max_bytes,
                       uint64_t *end,
                       struct err_detail *ed)
{
    uint64_t limit = pos + max_bytes;
    int64_t stop = max_offset < s->next_offset ? max_offset : s->next_offset;
    struct batch_header h;
    uint32_t k;
    int rv;

    if (*end >= limit) {
        return 0;
    }
    if (stop == s->next_offset && s->size <= limit) {
        *end = s->size; /* the rest of the segment fits */
        return 0;
    }
    /* jump to the furthest indexed batch that still qualifies: everything
     * before it starts below its offset and ends by its position */
    k = seg_index_count_below(&s->idx, limit,
                              (uint64_t)(stop - s->base_offset));
    if (k > 0 && s->idx.off[k - 1].pos > *end) {
        *end = s->idx.off[k - 1].pos;
    }
    while (*end < s->size) {
        rv = seg_read_header(s, *end, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (h.base_offset >= stop || *end + batch_size(&h) > limit) {
            break;
        }
        *end += batch_size(&h);
    }
    return 0;
}

/* A read of s near offset failed with rv: a bad header is corruption, a
 * failed pread a failing disk; either takes the log offline. */
static int plog_read_failed(struct plog *log,
                            struct seg *s,
                            int64_t offset,
                            int rv,
                            struct err_detail *ed)
{
    if (rv == WEIR_ECORRUPT) {
        return plog_corrupt_near(log, s, offset, rv, ed);
    }
    return plog_failed(log, rv, false, ed);
}

int plog_read(struct plog *log,
              int64_t offset,
              int64_t max_offset,
              uint32_t max_bytes,
              struct plog_read_result *out,
              struct err_detail *ed)
{
    int64_t start = plog_start_offset(log);
    int64_t end = plog_end_offset(log);
    struct batch_header h;
    uint64_t checked = 0;
    struct seg *s;
    uint64_t pos;
    uint64_t stop;
    uint32_t i;
    int rv;

    memset(out, 0, sizeof(*out));
    out->fd = -1;
    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    if (offset < start || offset > end) {
        return err_set(ed, WEIR_EOFFSET_OUT_OF_RANGE,
                       "offset %lld is outside the log [%lld, %lld]",
                       (long long)offset, (long long)start, (long long)end);
    }
    s = log->segs[plog_seg_at(log, offset)];
    out->file = s->log;
    out->fd = log->ops->fd(log->ops->ctx, s->log);
    out->position = s->size;
    out->first_offset = offset;
    if (offset == end || offset >= max_offset) {
        return 0;
    }
    rv = plog_locate(log, offset, &i, &pos, &h, ed);
    if (rv == WEIR_ENOT_FOUND) {
        return 0; /* compacted away up to the end (cannot happen: the active
                     segment is never compacted) */
    }
    if (rv != 0) {
        return plog_read_failed(log, log->segs[i], offset, rv, ed);
    }
    s = log->segs[i];
    out->file = s->log;
    out->fd = log->ops->fd(log->ops->ctx, s->log);
    out->position = s->size;
    if (h.base_offset >= max_offset) {
        return 0; /* the next record kept is not readable yet */
    }
    stop = pos + batch_size(&h);
    rv = plog_extend(s, pos, max_offset, max_bytes, &stop, ed);
    if (rv != 0) {
        return plog_read_failed(log, s, offset, rv, ed);
    }
    /* nothing is served that was not checked (by this process writing
     * it, by recovery, by the scrub or here) */
    rv = plog_verify_range(log, s, pos, stop, &checked, ed);
    if (rv != 0) {
        return rv;
    }
    out->position = pos;
    out->first_offset = h.base_offset;
    out->bytes = (uint32_t)(stop - pos);
    return 0;
}

int plog_read_copy(struct plog *log,
                   const struct plog_read_result *r,
                   struct weir_buf *buf,
                   struct err_detail *ed)
{
    size_t got;
    int rv;

    if (r->bytes == 0) {
        return 0;
    }
    if (buf_reserve(buf, r->bytes) != 0) {
        return err_set(ed, WEIR_ENOMEM, "reading %u bytes: out of memory",
                       r->bytes);
    }
    rv = log->ops->pread(log->ops->ctx, r->file, buf->data + buf->len, r->bytes,
                         r->position, &got, ed);
    if (rv != 0) {
        return rv;
    }
    if (got != r->bytes) {
        return err_set(ed, WEIR_EIO,
                       "short read in %s: %zu of %u bytes at %llu", log->dir,
                       got, r->bytes, (unsigned long long)r->position);
    }
    buf->len += got;
    return 0;
}

/* First record with timestamp >= ts inside the batch at pos (which is
 * uncompressed); *found stays false when none is (the header's max
 * timestamp over-promised). */
static int plog_scan_records(const struct seg *s,
                             uint64_t pos,
                             const struct batch_header *h,
                             int64_t ts,
                             bool *found,
                             int64_t *offset,
                             int64_t *found_ts,
                             struct err_detail *ed)
{
    struct weir_buf b;
    struct batch_iter it;
    struct batch_record rec;
    size_t got;
    int rv;

    buf_init(&b);
    if (buf_reserve(&b, (size_t)batch_size(h)) != 0) {
        return err_set(ed, WEIR_ENOMEM, "timestamp scan: out of memory");
    }
    rv = s->ops->pread(s->ops->ctx, s->log, b.data, (size_t)batch_size(h), pos,
                       &got, ed);
    if (rv == 0 && got != batch_size(h)) {
        rv = err_set(ed, WEIR_EIO, "short read of the batch at %llu",
                     (unsigned long long)pos);
    }
    if (rv == 0) {
        struct weir_slice sl = {b.data, got};
        rv = batch_iter_init(&it, sl, ed);
    }
    while (rv == 0 && !*found) {
        int n = batch_iter_next(&it, &rec);
        if (n < 0) {
            rv = err_set(ed, WEIR_ECORRUPT,
                         "malformed record in the batch at %llu of "
                         "%s/%020lld.log",
                         (unsigned long long)pos, s->dir,
                         (long long)s->base_offset);
        } else if (n == 0) {
            break;
        } else if (rec.timestamp >= ts) {
            *offset = rec.offset;
            *found_ts = rec.timestamp;
            *found = true;
        }
    }
    buf_fini(&b);
    return rv;
}

/* *found with *offset and *found_ts when segment s holds a record at or
 * after ts. */
static int plog_time_in_seg(struct plog *log,
                            struct seg *s,
                            int64_t ts,
                            bool *found,
                            int64_t *offset,
                            int64_t *found_ts,
                            struct err_detail *ed)
{
    struct batch_header h;
    uint64_t pos;
    int rv;

    rv = plog_ensure_index(log, s, ed);
    if (rv != 0) {
        return rv;
    }
    pos = seg_index_lookup(&s->idx, seg_index_time_lookup(&s->idx, ts));
    for (; pos < s->size; pos += batch_size(&h)) {
        rv = seg_read_header(s, pos, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (h.max_timestamp < ts) {
            continue;
        }
        if ((h.attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE) {
            *offset = h.base_offset;
            *found_ts = h.max_timestamp;
            *found = true;
            return 0;
        }
        rv = plog_scan_records(s, pos, &h, ts, found, offset, found_ts, ed);
        if (rv != 0 || *found) {
            return rv;
        }
    }
    return 0;
}

int plog_offset_for_time(struct plog *log,
                         int64_t ts,
                         int64_t *offset,
                         int64_t *found_ts,
                         struct err_detail *ed)
{
    bool found = false;
    uint32_t i;
    int rv;

    *offset = -1;
    *found_ts = -1;
    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < log->n_segs && !found; i++) {
        struct seg *s = log->segs[i];
        /* a segment's max timestamp bounds every record in it */
        if (s->size == 0 ||
            (s->max_timestamp != SEG_NO_TIMESTAMP && s->max_timestamp < ts)) {
            continue;
        }
        rv = plog_time_in_seg(log, s, ts, &found, offset, found_ts, ed);
        if (rv != 0) {
            *offset = -1;
            *found_ts = -1;
            return rv;
        }
    }
    return 0;
}

#define PLOG_SCAN_BUF_BYTES (64u * 1024)

/* Batch headers of segment s from byte pos on, read through buf (whole
 * chunks, so small batches cost one read per chunk, not per batch). */
static int plog_scan_seg(const struct seg *s,
                         uint64_t pos,
                         int64_t from_offset,
                         uint8_t *buf,
                         plog_scan_fn fn,
                         void *arg,
                         struct err_detail *ed)
{
    uint64_t buf_pos = 0; /* file position of buf[0] */
    size_t have = 0;
    struct batch_header h;
    size_t want;
    int rv;

    while (pos < s->size) {
        if (pos < buf_pos || pos + BATCH_HEADER_BYTES > buf_pos + have) {
            want = s->size - pos < PLOG_SCAN_BUF_BYTES ? (size_t)(s->size - pos)
                                                       : PLOG_SCAN_BUF_BYTES;
            rv = s->ops->pread(s->ops->ctx, s->log, buf, want, pos, &have, ed);
            if (rv != 0) {
                return rv;
            }
            buf_pos = pos;
        }
        if (have < pos - buf_pos + BATCH_HEADER_BYTES ||
            batch_header_decode(buf + (pos - buf_pos), have - (pos - buf_pos),
                                UINT32_MAX, &h, NULL) != 0 ||
            pos + batch_size(&h) > s->size) {
            return err_set(
                ed, WEIR_ECORRUPT, "bad batch header at %llu of %s/%020lld.log",
                (unsigned long long)pos, s->dir, (long long)s->base_offset);
        }
        if (batch_last_offset(&h) >= from_offset) {
            rv = fn(arg, &h);
            if (rv != 0) {
                return rv;
            }
        }
        pos += batch_size(&h);
    }
    return 0;
}

int plog_scan(struct plog *log,
              int64_t from_offset,
              plog_scan_fn fn,
              void *arg,
              struct err_detail *ed)
{
    struct batch_header h;
    uint64_t pos = 0;
    uint8_t *buf;
    uint32_t i;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    if (from_offset < plog_start_offset(log) ||
        from_offset > plog_end_offset(log)) {
        return err_set(ed, WEIR_EOFFSET_OUT_OF_RANGE,
                       "scan from %lld is outside the log [%lld, %lld]",
                       (long long)from_offset,
                       (long long)plog_start_offset(log),
                       (long long)plog_end_offset(log));
    }
    if (from_offset == plog_end_offset(log)) {
        return 0;
    }
    i = plog_seg_at(log, from_offset);
    if (from_offset > log->segs[i]->base_offset) {
        rv = plog_locate(log, from_offset, &i, &pos, &h, ed);
        if (rv == WEIR_ENOT_FOUND) {
            return 0;
        }
        if (rv != 0) {
            return rv;
        }
    }
    buf = mem_malloc(PLOG_SCAN_BUF_BYTES);
    if (buf == NULL) {
        return err_set(ed, WEIR_ENOMEM, "scanning %s: out of memory", log->dir);
    }
    for (; rv == 0 && i < log->n_segs; i++) {
        rv = plog_scan_seg(log->segs[i], pos, from_offset, buf, fn, arg, ed);
        pos = 0;
    }
    mem_free(buf);
    return rv;
}

int64_t plog_scan_start_for_time(const struct plog *log, int64_t ts)
{
    uint32_t i;

    for (i = 0; i + 1 < log->n_segs; i++) {
        const struct seg *s = log->segs[i];
        if (s->size > 0 &&
            (s->max_timestamp == SEG_NO_TIMESTAMP || s->max_timestamp >= ts)) {
            break;
        }
    }
    return log->segs[i]->base_offset;
}
