/* SPDX-License-Identifier: Apache-2.0 */
/* Segment files: naming, creation, batch headers, and the index files that
 * mirror the in-memory index. Index entries are appended in memory as
 * batches arrive and reach the files in batches (at seal, close and
 * rebuild): the active segment's indexes are rebuilt by recovery after an
 * unclean stop anyway, so writing them per append would buy nothing. */
#include "broker/storage/seg.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/trace.h"

#define SEG_EXT_LOG  ".log"
#define SEG_EXT_IDX  ".index"
#define SEG_EXT_TIME ".timeindex"

int seg_path(const char *dir,
             int64_t base,
             const char *ext,
             char *out,
             struct err_detail *ed)
{
    int n = snprintf(out, STORAGE_PATH_MAX, "%s/%020lld%s", dir,
                     (long long)base, ext);

    if (n < 0 || n >= STORAGE_PATH_MAX) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "segment path under %s is too long", dir);
    }
    return 0;
}

bool seg_parse_name(const char *name, const char *ext, int64_t *base)
{
    size_t elen = strlen(ext);
    size_t i;
    int64_t v = 0;

    if (strlen(name) != 20 + elen || strcmp(name + 20, ext) != 0) {
        return false;
    }
    for (i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return false;
        }
        if (v > (INT64_MAX - (name[i] - '0')) / 10) {
            return false;
        }
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return true;
}

static struct seg *
seg_alloc(const struct storage_ops *ops, const char *dir, int64_t base)
{
    struct seg *s = mem_calloc(1, sizeof(*s));

    if (s == NULL) {
        return NULL;
    }
    s->ops = ops;
    s->dir = dir;
    s->base_offset = base;
    s->next_offset = base;
    s->last_batch_base = -1;
    s->max_timestamp = SEG_NO_TIMESTAMP;
    seg_index_init(&s->idx);
    return s;
}

static int seg_open_file(const struct seg *s,
                         const char *ext,
                         bool create,
                         struct storage_file **out,
                         struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = seg_path(s->dir, s->base_offset, ext, path, ed);

    if (rv != 0) {
        return rv;
    }
    return s->ops->open(s->ops->ctx, path, create, out, ed);
}

int seg_create(const struct storage_ops *ops,
               const char *dir,
               int64_t base,
               int64_t wall_ms,
               struct seg **out,
               struct err_detail *ed)
{
    struct seg *s;
    uint64_t size;
    int rv;

    *out = NULL;
    s = seg_alloc(ops, dir, base);
    if (s == NULL) {
        return err_set(ed, WEIR_ENOMEM, "creating a segment: out of memory");
    }
    rv = seg_open_file(s, SEG_EXT_LOG, true, &s->log, ed);
    if (rv != 0) {
        goto fail;
    }
    rv = ops->size(ops->ctx, s->log, &size, ed);
    if (rv != 0) {
        goto fail;
    }
    if (size != 0) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "segment %020lld.log in %s already holds %llu bytes; "
                     "refusing to overwrite it",
                     (long long)base, dir, (unsigned long long)size);
        goto fail;
    }
    s->index_loaded = true;
    rv = seg_open_index_files(s, ed);
    if (rv != 0) {
        goto fail;
    }
    s->created_wall_ms = wall_ms;
    *out = s;
    return 0;

fail:
    seg_free(s);
    return rv;
}

int seg_open(const struct storage_ops *ops,
             const char *dir,
             int64_t base,
             struct seg **out,
             struct err_detail *ed)
{
    struct seg *s;
    int rv;

    *out = NULL;
    s = seg_alloc(ops, dir, base);
    if (s == NULL) {
        return err_set(ed, WEIR_ENOMEM, "opening a segment: out of memory");
    }
    rv = seg_open_file(s, SEG_EXT_LOG, false, &s->log, ed);
    if (rv == 0) {
        rv = ops->size(ops->ctx, s->log, &s->size, ed);
    }
    if (rv != 0) {
        seg_free(s);
        return rv;
    }
    *out = s;
    return 0;
}

void seg_close_index_files(struct seg *s)
{
    if (s->index_file != NULL) {
        s->ops->close(s->ops->ctx, s->index_file);
        s->index_file = NULL;
    }
    if (s->time_file != NULL) {
        s->ops->close(s->ops->ctx, s->time_file);
        s->time_file = NULL;
    }
}

void seg_free(struct seg *s)
{
    if (s == NULL) {
        return;
    }
    seg_close_index_files(s);
    if (s->log != NULL) {
        s->ops->close(s->ops->ctx, s->log);
    }
    seg_index_fini(&s->idx);
    mem_free(s);
}

static int seg_unlink(const struct storage_ops *ops,
                      const char *dir,
                      int64_t base,
                      const char *ext,
                      bool must_exist,
                      struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = seg_path(dir, base, ext, path, ed);

    if (rv != 0) {
        return rv;
    }
    rv = ops->unlink(ops->ctx, path, ed);
    if (rv == WEIR_ENOT_FOUND && !must_exist) {
        return 0;
    }
    return rv;
}

int seg_delete_files(const struct storage_ops *ops,
                     const char *dir,
                     int64_t base,
                     struct err_detail *ed)
{
    struct err_detail ied;
    int rv;

    /* the .log first: a crash in between leaves only derived files, which
     * the next open removes as orphans */
    rv = seg_unlink(ops, dir, base, SEG_EXT_LOG, true, ed);
    if (rv != 0) {
        return rv;
    }
    if (seg_unlink(ops, dir, base, SEG_EXT_IDX, false, &ied) != 0 ||
        seg_unlink(ops, dir, base, SEG_EXT_TIME, false, &ied) != 0) {
        trace_warn("storage", "event=index_unlink_failed reason=\"%s\"",
                   ied.msg);
    }
    return 0;
}

int seg_read_header(const struct seg *s,
                    uint64_t pos,
                    struct batch_header *h,
                    struct err_detail *ed)
{
    uint8_t hdr[BATCH_HEADER_BYTES];
    size_t got;
    int rv;

    rv = s->ops->pread(s->ops->ctx, s->log, hdr, sizeof(hdr), pos, &got, ed);
    if (rv != 0) {
        return rv;
    }
    rv = batch_header_decode(hdr, got, UINT32_MAX, h, ed);
    if (rv == 0 && pos + batch_size(h) > s->size) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "batch of %llu bytes runs past the segment end (%llu)",
                     (unsigned long long)batch_size(h),
                     (unsigned long long)s->size);
    }
    if (rv != 0) {
        err_wrap(ed, "segment %s/%020lld.log at %llu", s->dir,
                 (long long)s->base_offset, (unsigned long long)pos);
        return WEIR_ECORRUPT;
    }
    return 0;
}

void seg_note_batch(struct seg *s,
                    const struct batch_header *h,
                    uint64_t pos,
                    uint32_t index_interval_bytes)
{
    uint32_t rel = (uint32_t)(h->base_offset - s->base_offset);

    if (h->max_timestamp > s->max_timestamp) {
        s->max_timestamp = h->max_timestamp;
    }
    if (s->bytes_since_index >= index_interval_bytes &&
        (s->idx.n_off == 0 || pos > s->idx.off[s->idx.n_off - 1].pos)) {
        seg_index_add_offset(&s->idx, rel, (uint32_t)pos);
        s->bytes_since_index = 0;
        if (s->max_timestamp > seg_index_last_ts(&s->idx)) {
            seg_index_add_time(&s->idx, s->max_timestamp, rel);
        }
    }
    s->bytes_since_index += batch_size(h);
    s->last_batch_base = h->base_offset;
    s->next_offset = batch_last_offset(h) + 1;
    s->size = pos + batch_size(h);
}

int seg_open_index_files(struct seg *s, struct err_detail *ed)
{
    int rv = 0;

    if (s->index_file == NULL) {
        rv = seg_open_file(s, SEG_EXT_IDX, true, &s->index_file, ed);
    }
    if (rv == 0 && s->time_file == NULL) {
        rv = seg_open_file(s, SEG_EXT_TIME, true, &s->time_file, ed);
    }
    /* cut anything past what we know was written (stale tails) */
    if (rv == 0) {
        rv = s->ops->truncate(
            s->ops->ctx, s->index_file,
            (uint64_t)s->idx.off_written * SEG_INDEX_ENTRY_BYTES, ed);
    }
    if (rv == 0) {
        rv = s->ops->truncate(
            s->ops->ctx, s->time_file,
            (uint64_t)s->idx.time_written * SEG_TIME_ENTRY_BYTES, ed);
    }
    if (rv != 0) {
        seg_close_index_files(s);
    }
    return rv;
}

static int seg_write_entries(struct seg *s, struct err_detail *ed)
{
    struct weir_buf b;
    int rv = 0;

    buf_init(&b);
    seg_index_encode_offsets(&s->idx, s->idx.off_written, &b);
    if (!buf_ok(&b)) {
        rv = err_set(ed, WEIR_ENOMEM, "writing an index: out of memory");
    } else if (b.len > 0) {
        rv = s->ops->pwrite(
            s->ops->ctx, s->index_file, b.data, b.len,
            (uint64_t)s->idx.off_written * SEG_INDEX_ENTRY_BYTES, ed);
        if (rv == 0) {
            s->idx.off_written = s->idx.n_off;
        }
    }
    buf_reset(&b);
    seg_index_encode_times(&s->idx, s->idx.time_written, &b);
    if (rv == 0 && !buf_ok(&b)) {
        rv = err_set(ed, WEIR_ENOMEM, "writing an index: out of memory");
    } else if (rv == 0 && b.len > 0) {
        rv = s->ops->pwrite(
            s->ops->ctx, s->time_file, b.data, b.len,
            (uint64_t)s->idx.time_written * SEG_TIME_ENTRY_BYTES, ed);
        if (rv == 0) {
            s->idx.time_written = s->idx.n_time;
        }
    }
    buf_fini(&b);
    return rv;
}

int seg_write_index(struct seg *s, struct err_detail *ed)
{
    if (s->index_file == NULL || s->time_file == NULL) {
        return err_set(ed, WEIR_EIO, "segment %020lld: index files not open",
                       (long long)s->base_offset);
    }
    return seg_write_entries(s, ed);
}

int seg_rewrite_index(struct seg *s, struct err_detail *ed)
{
    bool was_open = s->index_file != NULL;
    int rv;

    s->idx.off_written = 0;
    s->idx.time_written = 0;
    rv = seg_open_index_files(s, ed); /* truncates both to zero */
    if (rv == 0) {
        rv = seg_write_entries(s, ed);
    }
    if (rv == 0) {
        rv = s->ops->fsync(s->ops->ctx, s->index_file, ed);
    }
    if (rv == 0) {
        rv = s->ops->fsync(s->ops->ctx, s->time_file, ed);
    }
    if (!was_open || rv != 0) {
        seg_close_index_files(s);
    }
    return rv;
}

static int seg_read_index_file(struct seg *s,
                               const char *ext,
                               size_t max,
                               char **out,
                               size_t *len,
                               struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = seg_path(s->dir, s->base_offset, ext, path, ed);

    if (rv != 0) {
        return rv;
    }
    rv = storage_read_small(s->ops, path, max, out, len, ed);
    if (rv == WEIR_ENOT_FOUND && s->size == 0) {
        return 0; /* an empty segment needs no index */
    }
    if (rv == WEIR_ENOT_FOUND) {
        return err_set(ed, WEIR_ECORRUPT, "%s is missing", path);
    }
    return rv;
}

int seg_load_index(struct seg *s, uint64_t span, struct err_detail *ed)
{
    /* every batch takes at least BATCH_HEADER_BYTES, which bounds the
     * number of entries a sane index can have */
    size_t max_entries = (size_t)(s->size / BATCH_HEADER_BYTES) + 1;
    struct weir_slice offs = {NULL, 0};
    struct weir_slice times = {NULL, 0};
    struct batch_header h;
    char *a = NULL;
    char *b = NULL;
    int rv;

    rv = seg_read_index_file(
        s, SEG_EXT_IDX, max_entries * SEG_INDEX_ENTRY_BYTES, &a, &offs.len, ed);
    if (rv == 0) {
        rv = seg_read_index_file(s, SEG_EXT_TIME,
                                 max_entries * SEG_TIME_ENTRY_BYTES, &b,
                                 &times.len, ed);
    }
    if (rv == 0 && s->size > 0 && times.len == 0) {
        rv = err_set(ed, WEIR_ECORRUPT, "time index is empty");
    }
    if (rv == 0) {
        offs.p = (const uint8_t *)a;
        times.p = (const uint8_t *)b;
        rv = seg_index_decode(&s->idx, offs, times, s->size, span, ed);
    }
    mem_free(a);
    mem_free(b);
    if (rv == 0 && s->idx.n_off > 0) {
        const struct seg_offset_entry *e = &s->idx.off[s->idx.n_off - 1];
        rv = seg_read_header(s, e->pos, &h, ed);
        if (rv == 0 && h.base_offset != s->base_offset + e->rel) {
            rv = err_set(ed, WEIR_ECORRUPT,
                         "last index entry names offset %lld at %u, the "
                         "batch there starts at %lld",
                         (long long)(s->base_offset + e->rel), e->pos,
                         (long long)h.base_offset);
        }
    }
    if (rv != 0) {
        seg_index_fini(&s->idx);
        return rv == WEIR_ENOMEM ? rv : WEIR_ECORRUPT;
    }
    s->index_loaded = true;
    return 0;
}

int seg_load_max_timestamp(struct seg *s, struct err_detail *ed)
{
    size_t max_entries = (size_t)(s->size / BATCH_HEADER_BYTES) + 1;
    struct weir_slice none = {NULL, 0};
    struct weir_slice times = {NULL, 0};
    struct seg_index tmp;
    char *text = NULL;
    int rv;

    /* the whole file, so a bad tail (zeros, a stale entry) shows up as
     * entries out of order rather than as a wrong max timestamp */
    rv =
        seg_read_index_file(s, SEG_EXT_TIME, max_entries * SEG_TIME_ENTRY_BYTES,
                            &text, &times.len, ed);
    if (rv == 0 && s->size > 0 && times.len == 0) {
        rv = err_set(ed, WEIR_ECORRUPT, "time index is empty");
    }
    seg_index_init(&tmp);
    if (rv == 0) {
        times.p = (const uint8_t *)text;
        rv = seg_index_decode(&tmp, none, times, s->size,
                              (uint64_t)(s->next_offset - s->base_offset), ed);
    }
    if (rv == 0) {
        s->max_timestamp = seg_index_last_ts(&tmp);
    }
    seg_index_fini(&tmp);
    mem_free(text);
    return rv == 0 || rv == WEIR_ENOMEM ? rv : WEIR_ECORRUPT;
}

int seg_fsync(struct seg *s, struct err_detail *ed)
{
    int rv;

    if (!s->dirty) {
        return 0;
    }
    rv = s->ops->fsync(s->ops->ctx, s->log, ed);
    if (rv == 0) {
        s->dirty = false;
    }
    return rv;
}

int seg_fsync_index(struct seg *s, struct err_detail *ed)
{
    int rv;

    if (s->index_file == NULL || s->time_file == NULL) {
        return err_set(ed, WEIR_EIO, "segment %020lld: index files not open",
                       (long long)s->base_offset);
    }
    rv = s->ops->fsync(s->ops->ctx, s->index_file, ed);
    if (rv == 0) {
        rv = s->ops->fsync(s->ops->ctx, s->time_file, ed);
    }
    return rv;
}

int seg_finish_index(struct seg *s, struct err_detail *ed)
{
    int rv;

    rv = seg_index_reserve(&s->idx, 1);
    if (rv != 0) {
        return err_set(ed, rv, "closing a segment: out of memory");
    }
    if (s->last_batch_base >= 0 &&
        s->max_timestamp > seg_index_last_ts(&s->idx)) {
        /* a later open reads the segment's max timestamp (retention) from
         * the last entry */
        seg_index_add_time(&s->idx, s->max_timestamp,
                           (uint32_t)(s->last_batch_base - s->base_offset));
    }
    return seg_write_index(s, ed);
}

void seg_verified_add(struct seg *s, uint64_t from, uint64_t to)
{
    struct seg_span *v = s->verified;
    uint32_t i = 0;
    uint32_t j;

    if (from >= to) {
        return;
    }
    while (i < s->n_verified && v[i].to < from) {
        i++; /* spans wholly before (and not touching) the new one */
    }
    j = i;
    while (j < s->n_verified && v[j].from <= to) {
        from = v[j].from < from ? v[j].from : from;
        to = v[j].to > to ? v[j].to : to;
        j++; /* spans it overlaps or touches: merged into it */
    }
    if (j == i && s->n_verified == SEG_VERIFIED_SPANS) {
        return;
    }
    memmove(&v[i + 1], &v[j], (s->n_verified - j) * sizeof(*v));
    v[i].from = from;
    v[i].to = to;
    s->n_verified = s->n_verified - (j - i) + 1;
}

void seg_verified_cut(struct seg *s, uint64_t size)
{
    while (s->n_verified > 0 && s->verified[s->n_verified - 1].from >= size) {
        s->n_verified--;
    }
    if (s->n_verified > 0 && s->verified[s->n_verified - 1].to > size) {
        s->verified[s->n_verified - 1].to = size;
    }
}

uint64_t seg_verified_gap(const struct seg *s, uint64_t from, uint64_t *gap_end)
{
    uint32_t i;

    for (i = 0; i < s->n_verified && from < s->size; i++) {
        if (s->verified[i].to <= from) {
            continue;
        }
        if (s->verified[i].from > from) {
            *gap_end =
                s->verified[i].from < s->size ? s->verified[i].from : s->size;
            return from;
        }
        from = s->verified[i].to; /* inside span i: skip past it */
    }
    if (from >= s->size) {
        *gap_end = s->size;
        return s->size;
    }
    *gap_end = s->size;
    return from;
}
