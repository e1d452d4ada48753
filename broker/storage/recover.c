/* SPDX-License-Identifier: Apache-2.0 */
/* Segment scans: full validation after an unclean stop, index rebuilds,
 * and the cheap header walk after a clean one. The scan reads the file in
 * large chunks so that small batches do not cost a system call each. */
#include "broker/storage/recover.h"

#include <string.h>

#include "common/crc32c.h"
#include "common/mem.h"
#include "common/trace.h"

#define RECOVER_CHUNK (256 * 1024)
/* Batches above this are checked by a streamed CRC instead of being held
 * whole, so a corrupt length field cannot make recovery allocate much. */
#define RECOVER_MAX_WHOLE (16 * 1024 * 1024)
#define RECOVER_MIN_LEN   (BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD)

struct recover_reader {
    const struct seg *s;
    uint8_t *buf;
    size_t cap;
    uint64_t start; /* file position of buf[0] */
    size_t have;    /* bytes valid in buf */
};

/* Make [pos, pos + n) available in memory; the caller checked that the
 * file holds it. */
static int recover_fill(struct recover_reader *r,
                        uint64_t pos,
                        size_t n,
                        uint64_t file_size,
                        const uint8_t **out,
                        struct err_detail *ed)
{
    size_t want = n > RECOVER_CHUNK ? n : RECOVER_CHUNK;
    size_t got;
    int rv;

    if (pos >= r->start && pos + n <= r->start + r->have) {
        *out = r->buf + (pos - r->start);
        return 0;
    }
    if (want > file_size - pos) {
        want = (size_t)(file_size - pos);
    }
    if (want > r->cap) {
        uint8_t *p = mem_realloc(r->buf, want);
        if (p == NULL) {
            return err_set(ed, WEIR_ENOMEM, "recovery: out of memory");
        }
        r->buf = p;
        r->cap = want;
    }
    r->have = 0;
    rv = r->s->ops->pread(r->s->ops->ctx, r->s->log, r->buf, want, pos, &got,
                          ed);
    if (rv != 0) {
        return rv;
    }
    if (got < n) {
        return err_set(ed, WEIR_EIO, "segment %020lld.log shrank under us",
                       (long long)r->s->base_offset);
    }
    r->start = pos;
    r->have = got;
    *out = r->buf;
    return 0;
}

/* CRC check of a batch too large to hold whole (records not parsed).
 * Sets *bad with the reason in bed when the batch is invalid; returns
 * non-zero only for I/O and memory errors (in ed). */
static int recover_check_large(struct recover_reader *r,
                               uint64_t pos,
                               uint64_t total,
                               uint64_t file_size,
                               struct batch_header *h,
                               bool *bad,
                               struct err_detail *bed,
                               struct err_detail *ed)
{
    const uint8_t *p;
    uint64_t at = pos + BATCH_OFF_ATTRIBUTES;
    uint32_t crc;
    int rv;

    rv = recover_fill(r, pos, BATCH_HEADER_BYTES, file_size, &p, ed);
    if (rv != 0) {
        return rv;
    }
    if (batch_header_decode(p, BATCH_HEADER_BYTES, UINT32_MAX, h, bed) != 0) {
        *bad = true;
        return 0;
    }
    crc = crc32c(p, 0);
    while (at < pos + total) {
        uint64_t n = pos + total - at;
        if (n > RECOVER_CHUNK) {
            n = RECOVER_CHUNK;
        }
        rv = recover_fill(r, at, (size_t)n, file_size, &p, ed);
        if (rv != 0) {
            return rv;
        }
        crc = crc32c_extend(crc, p, (size_t)n);
        at += n;
    }
    if (crc != h->crc) {
        (void)err_set(bed, WEIR_ECORRUPT_MESSAGE,
                      "CRC-32C 0x%08x, stored 0x%08x", crc, h->crc);
        *bad = true;
    }
    return 0;
}

/* Validate the batch at pos: *bad and the reason in bed when it is
 * invalid, else *h describes it. Returns non-zero only for I/O and memory
 * errors (in ed), which are not the batch's fault. */
static int recover_check_batch(struct recover_reader *r,
                               uint64_t pos,
                               uint64_t file_size,
                               struct batch_header *h,
                               bool *bad,
                               struct err_detail *bed,
                               struct err_detail *ed)
{
    uint64_t left = file_size - pos;
    const uint8_t *p;
    struct weir_slice b;
    uint64_t total;
    uint32_t len;
    int rv;

    *bad = true;
    if (left < BATCH_HEADER_BYTES) {
        (void)err_set(bed, WEIR_ECORRUPT_MESSAGE,
                      "%llu trailing bytes, too few for a batch header",
                      (unsigned long long)left);
        return 0;
    }
    rv = recover_fill(r, pos, BATCH_HEADER_BYTES, file_size, &p, ed);
    if (rv != 0) {
        return rv;
    }
    len = wire_get_u32be(p + BATCH_OFF_LENGTH);
    total = (uint64_t)BATCH_LOG_OVERHEAD + len;
    if (len < RECOVER_MIN_LEN) {
        (void)err_set(bed, WEIR_ECORRUPT_MESSAGE,
                      "batch length %u below the minimum %d", len,
                      RECOVER_MIN_LEN);
        return 0;
    }
    if (total > left) {
        (void)err_set(bed, WEIR_ECORRUPT_MESSAGE,
                      "batch of %llu bytes runs past the end of the file "
                      "(%llu bytes left): torn write",
                      (unsigned long long)total, (unsigned long long)left);
        return 0;
    }
    *bad = false;
    if (total > RECOVER_MAX_WHOLE) {
        return recover_check_large(r, pos, total, file_size, h, bad, bed, ed);
    }
    rv = recover_fill(r, pos, (size_t)total, file_size, &p, ed);
    if (rv != 0) {
        return rv;
    }
    b.p = p;
    b.len = (size_t)total;
    *bad = batch_validate(b, UINT32_MAX, h, bed) != 0;
    return 0;
}

/* Does a batch at base offset `base` fit after offset `expect`? Dense
 * logs continue exactly; compacted (sparse) ones may skip offsets. */
static bool recover_follows(const struct seg *s, int64_t base, int64_t expect)
{
    return s->sparse ? base >= expect : base == expect;
}

static void recover_reset(struct seg *s)
{
    s->idx.n_off = 0;
    s->idx.n_time = 0;
    s->idx.off_written = 0;
    s->idx.time_written = 0;
    s->size = 0;
    s->next_offset = s->base_offset;
    s->last_batch_base = -1;
    s->max_timestamp = SEG_NO_TIMESTAMP;
    s->bytes_since_index = 0;
    s->n_verified = 0;
}

static int recover_cut(struct seg *s,
                       enum recover_mode mode,
                       uint64_t file_size,
                       const char *why,
                       uint64_t *cut,
                       struct err_detail *ed)
{
    int rv;

    if (mode == RECOVER_REFUSE) {
        return err_set(ed, WEIR_ECORRUPT,
                       "segment %s/%020lld.log: invalid batch at byte %llu "
                       "(offset %lld): %s; a closed segment is never "
                       "truncated, refusing to open",
                       s->dir, (long long)s->base_offset,
                       (unsigned long long)s->size, (long long)s->next_offset,
                       why);
    }
    trace_warn("storage",
               "event=recovery_truncate file=%s/%020lld.log position=%llu "
               "offset=%lld bytes_cut=%llu reason=\"%s\"",
               s->dir, (long long)s->base_offset, (unsigned long long)s->size,
               (long long)s->next_offset,
               (unsigned long long)(file_size - s->size), why);
    rv = s->ops->truncate(s->ops->ctx, s->log, s->size, ed);
    if (rv != 0) {
        return rv;
    }
    s->dirty = true;
    *cut += file_size - s->size;
    return 0;
}

int recover_segment(struct seg *s,
                    enum recover_mode mode,
                    uint32_t index_interval_bytes,
                    uint64_t *cut,
                    struct err_detail *ed)
{
    struct recover_reader r = {s, NULL, 0, 0, 0};
    struct err_detail bed;
    struct batch_header h;
    uint64_t file_size;
    bool bad;
    int rv;

    rv = s->ops->size(s->ops->ctx, s->log, &file_size, ed);
    if (rv != 0) {
        return rv;
    }
    recover_reset(s);
    while (s->size < file_size) {
        err_detail_clear(&bed);
        rv = recover_check_batch(&r, s->size, file_size, &h, &bad, &bed, ed);
        if (rv != 0) {
            goto out;
        }
        if (!bad && !recover_follows(s, h.base_offset, s->next_offset)) {
            (void)err_set(&bed, WEIR_ECORRUPT_MESSAGE,
                          "batch has base offset %lld, expected %lld",
                          (long long)h.base_offset, (long long)s->next_offset);
            bad = true;
        }
        if (bad) {
            rv = recover_cut(s, mode, file_size, bed.msg, cut, ed);
            goto out;
        }
        rv = seg_index_reserve(&s->idx, 1);
        if (rv != 0) {
            rv = err_set(ed, rv, "recovery: out of memory");
            goto out;
        }
        seg_note_batch(s, &h, s->size, index_interval_bytes);
    }
    rv = 0;

out:
    mem_free(r.buf);
    if (rv == 0) {
        s->index_loaded = true;
        seg_verified_add(s, 0, s->size); /* every batch was just checked */
    } else {
        recover_reset(s);
        s->index_loaded = false;
    }
    return rv;
}

int recover_rebuild_index(struct seg *s,
                          uint32_t index_interval_bytes,
                          struct err_detail *ed)
{
    int64_t next = s->next_offset;
    uint64_t size = s->size;
    struct err_detail wed;
    uint64_t cut = 0;
    int rv;

    rv = recover_segment(s, RECOVER_REFUSE, index_interval_bytes, &cut, ed);
    if (rv == 0 && s->sparse && s->next_offset <= next && s->size == size) {
        s->next_offset = next; /* compaction removed the tail records */
    }
    if (rv == 0 && (s->next_offset != next || s->size != size)) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "segment %s/%020lld.log ends at offset %lld, but the "
                     "next segment starts at %lld; refusing to open",
                     s->dir, (long long)s->base_offset,
                     (long long)s->next_offset, (long long)next);
        seg_index_fini(&s->idx);
        s->index_loaded = false;
    }
    if (rv != 0) {
        s->next_offset = next;
        s->size = size;
        return rv;
    }
    if (seg_rewrite_index(s, &wed) != 0) {
        /* the index in memory is good; the files are only a cache */
        trace_warn("storage", "event=index_write_failed reason=\"%s\"",
                   wed.msg);
    }
    return 0;
}

int recover_ensure_index(struct seg *s,
                         uint32_t index_interval_bytes,
                         struct err_detail *ed)
{
    struct err_detail led;
    int rv;

    if (s->index_loaded) {
        return 0;
    }
    err_detail_clear(&led);
    rv = seg_load_index(s, (uint64_t)(s->next_offset - s->base_offset), &led);
    if (rv == 0) {
        s->max_timestamp = seg_index_last_ts(&s->idx);
        return 0;
    }
    if (rv == WEIR_ENOMEM) {
        return err_set(ed, rv, "%s", led.msg);
    }
    trace_warn("storage",
               "event=index_rebuild file=%s/%020lld.index reason=\"%s\"",
               s->dir, (long long)s->base_offset, led.msg);
    return recover_rebuild_index(s, index_interval_bytes, ed);
}

int recover_clean_tail(struct seg *s,
                       uint32_t index_interval_bytes,
                       struct err_detail *ed)
{
    struct batch_header h;
    uint64_t pos = 0;
    uint64_t end = s->size;
    int64_t expect = s->base_offset;
    int rv;

    rv = seg_load_index(s, (uint64_t)UINT32_MAX + 1, ed);
    if (rv != 0) {
        return rv;
    }
    if (s->idx.n_off > 0) {
        pos = s->idx.off[s->idx.n_off - 1].pos;
        expect = s->base_offset + s->idx.off[s->idx.n_off - 1].rel;
    }
    s->max_timestamp = seg_index_last_ts(&s->idx);
    s->bytes_since_index = 0;
    while (pos < end) {
        rv = seg_read_header(s, pos, &h, ed);
        if (rv == 0 && !recover_follows(s, h.base_offset, expect)) {
            rv = err_set(ed, WEIR_ECORRUPT,
                         "batch at %llu has offset %lld, expected %lld",
                         (unsigned long long)pos, (long long)h.base_offset,
                         (long long)expect);
        }
        if (rv == 0) {
            rv = seg_index_reserve(&s->idx, 1);
        }
        if (rv != 0) {
            break;
        }
        seg_note_batch(s, &h, pos, index_interval_bytes);
        s->size = end; /* seg_read_header bounds reads by it */
        expect = batch_last_offset(&h) + 1;
        pos += batch_size(&h);
    }
    if (rv == 0) {
        rv = seg_index_check(&s->idx, s->size,
                             (uint64_t)(s->next_offset - s->base_offset), ed);
    }
    if (rv != 0) {
        seg_index_fini(&s->idx);
        s->index_loaded = false;
        s->size = end;
        return rv == WEIR_ENOMEM ? rv : WEIR_ECORRUPT;
    }
    return 0;
}

/* Batch headers from pos (holding offset expect) must run to the end of
 * the file and end at next_offset. */
static int recover_walk_to_end(const struct seg *s,
                               uint64_t pos,
                               int64_t expect,
                               struct err_detail *ed)
{
    struct batch_header h;
    int rv;

    while (pos < s->size) {
        rv = seg_read_header(s, pos, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (!recover_follows(s, h.base_offset, expect)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "batch at %llu has offset %lld, expected %lld",
                           (unsigned long long)pos, (long long)h.base_offset,
                           (long long)expect);
        }
        expect = batch_last_offset(&h) + 1;
        pos += batch_size(&h);
    }
    if (expect != s->next_offset && !(s->sparse && expect < s->next_offset)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "segment %s/%020lld.log ends at offset %lld, the next "
                       "segment starts at %lld",
                       s->dir, (long long)s->base_offset, (long long)expect,
                       (long long)s->next_offset);
    }
    return 0;
}

int recover_check_end(struct seg *s, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    struct storage_file *f = NULL;
    uint8_t e[SEG_INDEX_ENTRY_BYTES];
    uint64_t size = 0;
    uint64_t pos = 0;
    int64_t expect = s->base_offset;
    size_t got;
    int rv;

    rv = seg_path(s->dir, s->base_offset, ".index", path, ed);
    if (rv == 0) {
        rv = s->ops->open(s->ops->ctx, path, false, &f, ed);
    }
    if (rv == 0) {
        rv = s->ops->size(s->ops->ctx, f, &size, ed);
    }
    if (rv == 0 && size % SEG_INDEX_ENTRY_BYTES != 0) {
        rv = err_set(ed, WEIR_ECORRUPT, "%s has a partial entry", path);
    }
    if (rv == 0 && size > 0) {
        rv = s->ops->pread(s->ops->ctx, f, e, sizeof(e), size - sizeof(e), &got,
                           ed);
        if (rv == 0 && got != sizeof(e)) {
            rv = err_set(ed, WEIR_ECORRUPT, "short read of %s", path);
        }
        expect += wire_get_u32be(e);
        pos = wire_get_u32be(e + 4);
    }
    if (f != NULL) {
        s->ops->close(s->ops->ctx, f);
    }
    if (rv == WEIR_ENOT_FOUND && s->size == 0) {
        rv = 0;
    }
    if (rv == 0) {
        rv = recover_walk_to_end(s, pos, expect, ed);
    }
    return rv == 0 || rv == WEIR_ENOMEM ? rv : WEIR_ECORRUPT;
}

/* A batch at a known position must continue the offsets before it (when
 * known) and lie within the segment's offsets. */
static bool recover_in_place(const struct seg *s,
                             const struct batch_header *h,
                             int64_t expect)
{
    if (h->base_offset < s->base_offset ||
        batch_last_offset(h) >= s->next_offset) {
        return false;
    }
    return expect < 0 || recover_follows(s, h->base_offset, expect);
}

int recover_verify(const struct seg *s,
                   uint64_t from,
                   uint64_t to,
                   struct recover_verdict *v,
                   struct err_detail *ed)
{
    struct recover_reader r = {s, NULL, 0, 0, 0};
    int64_t expect = from == 0 ? s->base_offset : -1;
    struct batch_header h;
    uint64_t pos = from;
    bool bad = false;
    int rv = 0;

    memset(v, 0, sizeof(*v));
    v->bad_offset = -1;
    err_detail_clear(&v->why);
    while (pos < to && pos < s->size) {
        memset(&h, 0, sizeof(h));
        h.base_offset = -1; /* stays so when the header is unreadable */
        rv = recover_check_batch(&r, pos, s->size, &h, &bad, &v->why, ed);
        if (rv != 0) {
            break;
        }
        if (!bad && !recover_in_place(s, &h, expect)) {
            (void)err_set(&v->why, WEIR_ECORRUPT_MESSAGE,
                          "batch has offsets %lld..%lld, expected %lld in "
                          "[%lld, %lld)",
                          (long long)h.base_offset,
                          (long long)batch_last_offset(&h), (long long)expect,
                          (long long)s->base_offset, (long long)s->next_offset);
            bad = true;
        }
        if (bad) {
            v->bad = true;
            v->bad_pos = pos;
            /* the header's offset when it is plausible, else the one the
             * batch should have had (unknown: -1) */
            v->bad_offset = h.base_offset >= s->base_offset &&
                                    h.base_offset < s->next_offset
                                ? h.base_offset
                                : expect;
            break;
        }
        expect = batch_last_offset(&h) + 1;
        pos += batch_size(&h);
    }
    mem_free(r.buf);
    v->end = pos;
    return rv;
}
