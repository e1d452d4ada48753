/* SPDX-License-Identifier: Apache-2.0 */
/* Log compaction (Kafka's log cleaner, simplified). One pass:
 *   1. the cleanable range is the closed segments [0, end) (the active one
 *      never; with min_compaction_lag_ms, none from the first segment
 *      holding a record younger than the lag; none from the first segment
 *      holding an offset at or above keep_from, the high watermark);
 *   2. a map key -> latest offset is built over the range, so only
 *      committed records decide what goes (Kafka stops at the last stable
 *      offset): a later record that is not committed may still be cut by
 *      a failover, and the record it superseded must then still be there;
 *   3. each segment, oldest first, is rewritten keeping only records that
 *      are their key's latest (null keys always), minus tombstones cleaned
 *      more than delete_retention_ms ago; kept records keep their offset
 *      and timestamp. A batch whose records all stay is copied untouched;
 *      one that lost records is re-encoded as one batch per run of
 *      consecutive kept offsets (batch_validate wants dense deltas), with
 *      producer id and epoch as they were and the base sequence of each
 *      record kept; an idempotent batch always keeps its last record, so
 *      the producer state rebuilt from headers sees its last sequence.
 *      Compressed, control and transactional batches are copied untouched.
 *   4. the swap of one segment: write <base>.log.cleaned, fsync it; unlink
 *      the .index/.timeindex (derived, rebuilt when missing); rename the
 *      .cleaned over the .log (atomic); fsync the directory; reopen and
 *      rebuild the index. A crash before the rename leaves the old .log
 *      (plog_load discards the .cleaned), after it the new one: both whole.
 *      Oldest first, so a tombstone never goes while an older value of its
 *      key is still on disk.
 * The cleaned-up-to offset and the times it moved live in
 * cleaner-offset-checkpoint ("0\n<clean offset>\n<n>\n" then n lines of
 * "<offset> <wall ms>"), written atomically after a pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/plog_compact_map.h"
#include "broker/storage/plog_int.h"
#include "broker/storage/recover.h"
#include "common/crc32c.h"
#include "common/mem.h"
#include "common/trace.h"

#define PLOG_COMPACT_FLUSH_BYTES (256u * 1024)

/* One segment being rewritten. */
struct plog_compact_out {
    struct plog *log;
    struct storage_file *f; /* the .cleaned file, owned */
    char path[STORAGE_PATH_MAX];
    struct weir_buf pending; /* kept bytes not written yet */
    uint64_t written;        /* bytes written to f */
    uint64_t removed;        /* records removed */
};

/* What the filter needs to decide on a record. */
struct plog_compact_ctx {
    struct plog *log;
    const struct plog_compact_map *map;
    int64_t prev_clean_offset; /* cleaned part before this pass */
    int64_t wall_ms;
};

/* ---- cleaner checkpoint ---- */

static void plog_cleaner_reset(struct plog *log)
{
    log->clean_offset = 0;
    log->n_clean_marks = 0;
}

/* A decoded checkpoint becomes the log's cleaner state. */
static int plog_cleaner_take(struct plog *log,
                             const struct plog_ckpt_cleaner *ck,
                             struct err_detail *ed)
{
    if (log->clean_marks == NULL) {
        log->clean_marks =
            mem_calloc(PLOG_CLEAN_MARKS_MAX, sizeof(*log->clean_marks));
        if (log->clean_marks == NULL) {
            return err_set(ed, WEIR_ENOMEM, "cleaner state: out of memory");
        }
    }
    log->clean_offset = ck->clean_offset;
    log->n_clean_marks = ck->n_marks;
    if (ck->n_marks > 0) {
        memcpy(log->clean_marks, ck->marks,
               ck->n_marks * sizeof(*log->clean_marks));
    }
    return 0;
}

/* Missing, unreadable or refused by the decoder: nothing counts as
 * cleaned, which is safe (more work, tombstones kept longer). */
static void plog_cleaner_load(struct plog *log)
{
    char path[STORAGE_PATH_MAX];
    struct plog_ckpt_cleaner ck;
    struct err_detail ed;
    char *text = NULL;
    size_t len;
    int rv;

    if (log->cleaner_loaded) {
        return;
    }
    log->cleaner_loaded = true;
    plog_cleaner_reset(log);
    if (plog_path(log, PLOG_CLEANER_CHECKPOINT, path, &ed) != 0) {
        return;
    }
    rv = storage_read_small(log->ops, path, PLOG_CKPT_CLEANER_MAX, &text, &len,
                            &ed);
    if (rv == 0) {
        rv = plog_ckpt_parse_cleaner(text, len, path, &ck, &ed);
        if (rv == 0) {
            rv = plog_cleaner_take(log, &ck, &ed);
        }
        if (rv != 0) {
            trace_warn("storage",
                       "event=cleaner_checkpoint_unreadable file=%s "
                       "reason=\"%s\" action=clean_all",
                       path, ed.msg);
            plog_cleaner_reset(log);
        }
    }
    mem_free(text);
    if (log->clean_offset > plog_end_offset(log)) {
        plog_cleaner_reset(log); /* truncated below it since */
    }
}

static int plog_cleaner_save(struct plog *log, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    char text[PLOG_CKPT_CLEANER_MAX];
    struct plog_ckpt_cleaner ck;
    size_t n = 0;
    int rv;

    ck.clean_offset = log->clean_offset;
    ck.n_marks = log->n_clean_marks;
    if (log->n_clean_marks > 0) {
        memcpy(ck.marks, log->clean_marks,
               log->n_clean_marks * sizeof(*log->clean_marks));
    }
    rv = plog_ckpt_format_cleaner(&ck, text, sizeof(text), &n);
    if (rv != 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "cleaner checkpoint of %s cannot be written", log->dir);
    }
    rv = plog_path(log, PLOG_CLEANER_CHECKPOINT, path, ed);
    if (rv == 0) {
        rv = storage_write_atomic(log->ops, log->dir, path, text, n, ed);
    }
    return rv;
}

/* The cleaned part now ends at offset (reached at wall_ms). */
static int plog_cleaner_advance(struct plog *log,
                                int64_t offset,
                                int64_t wall_ms,
                                struct err_detail *ed)
{
    if (log->clean_marks == NULL) {
        log->clean_marks =
            mem_calloc(PLOG_CLEAN_MARKS_MAX, sizeof(*log->clean_marks));
        if (log->clean_marks == NULL) {
            return err_set(ed, WEIR_ENOMEM, "cleaner state: out of memory");
        }
    }
    if (offset > log->clean_offset) {
        if (log->n_clean_marks == PLOG_CLEAN_MARKS_MAX) {
            /* dropping the oldest mark dates its tombstones later: they
             * are kept longer, never shorter */
            memmove(log->clean_marks, log->clean_marks + 1,
                    (PLOG_CLEAN_MARKS_MAX - 1) * sizeof(*log->clean_marks));
            log->n_clean_marks--;
        }
        log->clean_marks[log->n_clean_marks].offset = offset;
        log->clean_marks[log->n_clean_marks].wall_ms = wall_ms;
        log->n_clean_marks++;
        log->clean_offset = offset;
    }
    return plog_cleaner_save(log, ed);
}

/* When the record at offset entered the cleaned part; wall_ms (now) when
 * no mark says. */
static int64_t
plog_cleaner_entered_ms(const struct plog *log, int64_t offset, int64_t now)
{
    uint32_t i;

    for (i = 0; i < log->n_clean_marks; i++) {
        if (log->clean_marks[i].offset > offset) {
            return log->clean_marks[i].wall_ms;
        }
    }
    return now;
}

int plog_mark_sparse(struct plog *log, struct err_detail *ed)
{
    uint32_t i;
    int rv;

    if (log->compacted) {
        return 0;
    }
    plog_cleaner_load(log);
    rv = plog_cleaner_save(log, ed);
    if (rv != 0) {
        return plog_failed(log, rv, false, ed);
    }
    log->compacted = true;
    for (i = 0; i < log->n_segs; i++) {
        log->segs[i]->sparse = true;
    }
    return 0;
}

/* ---- range and trigger ---- */

/* Segments [0, *end) may be cleaned: closed, old enough, and wholly
 * below keep_from; dirty and total bytes of them. */
static void plog_compact_range(const struct plog *log,
                               int64_t wall_ms,
                               int64_t keep_from,
                               uint32_t *end,
                               uint64_t *dirty,
                               uint64_t *total)
{
    int64_t lag = log->cfg.min_compaction_lag_ms;
    uint32_t i;

    *dirty = 0;
    *total = 0;
    for (i = 0; i + 1 < log->n_segs; i++) {
        const struct seg *s = log->segs[i];
        if (s->next_offset > keep_from) {
            break; /* holds a record that is not committed yet */
        }
        if (lag > 0 && (s->max_timestamp == SEG_NO_TIMESTAMP
                            ? s->size > 0
                            : s->max_timestamp > wall_ms - lag)) {
            break; /* holds records younger than the lag (or unknown) */
        }
        *total += s->size;
        if (s->base_offset >= log->clean_offset) {
            *dirty += s->size;
        }
    }
    *end = i;
}

bool plog_compact_needed(struct plog *log, int64_t wall_ms, int64_t keep_from)
{
    uint64_t dirty;
    uint64_t total;
    uint32_t end;

    if ((log->cfg.cleanup_policy & PLOG_CLEANUP_COMPACT) == 0 || log->offline ||
        log->n_segs < 2) {
        return false;
    }
    plog_cleaner_load(log);
    plog_compact_range(log, wall_ms, keep_from, &end, &dirty, &total);
    return end > 0 && dirty > 0 &&
           (double)dirty >= log->cfg.min_cleanable_dirty_ratio * (double)total;
}

/* ---- reading batches ---- */

/* The batch at pos of s, whole and validated, into b (replaced). */
static int plog_compact_read(const struct seg *s,
                             uint64_t pos,
                             struct weir_buf *b,
                             struct batch_header *h,
                             struct err_detail *ed)
{
    struct weir_slice sl;
    size_t got;
    int rv;

    rv = seg_read_header(s, pos, h, ed);
    if (rv != 0) {
        return rv;
    }
    buf_reset(b);
    if (buf_reserve(b, (size_t)batch_size(h)) != 0) {
        return err_set(ed, WEIR_ENOMEM, "compaction: out of memory");
    }
    rv = s->ops->pread(s->ops->ctx, s->log, b->data, (size_t)batch_size(h), pos,
                       &got, ed);
    if (rv != 0) {
        return rv;
    }
    b->len = got;
    sl.p = b->data;
    sl.len = got;
    if (got != batch_size(h) || batch_validate(sl, UINT32_MAX, h, ed) != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "compaction: bad batch at %llu of %s/%020lld.log",
                       (unsigned long long)pos, s->dir,
                       (long long)s->base_offset);
    }
    return 0;
}

/* Batches whose records we do not rewrite (copied as they are). */
static bool plog_compact_opaque(const struct batch_header *h)
{
    return (h->attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE ||
           (h->attributes & (BATCH_ATTR_CONTROL | BATCH_ATTR_TRANSACTIONAL)) !=
               0;
}

static int plog_compact_map_seg(const struct seg *s,
                                struct plog_compact_map *map,
                                struct weir_buf *b,
                                struct err_detail *ed)
{
    struct batch_header h;
    struct batch_record rec;
    struct batch_iter it;
    uint64_t pos;
    int n;
    int rv;

    for (pos = 0; pos < s->size; pos += batch_size(&h)) {
        rv = plog_compact_read(s, pos, b, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (plog_compact_opaque(&h)) {
            continue;
        }
        rv = batch_iter_init(&it, buf_slice(b), ed);
        while (rv == 0 && (n = batch_iter_next(&it, &rec)) != 0) {
            if (n < 0) {
                return err_set(ed, WEIR_ECORRUPT, "compaction: bad record");
            }
            if (!rec.key_null) {
                rv = plog_compact_map_put(map, rec.key.p, rec.key.len,
                                          rec.offset);
                if (rv != 0) {
                    return err_set(ed, rv, "compaction map: out of memory");
                }
            }
        }
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

/* ---- filtering ---- */

static bool plog_compact_keep(const struct plog_compact_ctx *c,
                              const struct batch_header *h,
                              const struct batch_record *rec)
{
    int64_t entered;

    if (rec->key_null) {
        return true;
    }
    if (h->producer_id >= 0 && rec->offset == batch_last_offset(h)) {
        return true; /* the producer state needs the batch's last sequence */
    }
    if (plog_compact_map_get(c->map, rec->key.p, rec->key.len) != rec->offset) {
        return false; /* a later record of the key exists */
    }
    if (!rec->value_null || rec->offset >= c->prev_clean_offset) {
        return true;
    }
    entered = plog_cleaner_entered_ms(c->log, rec->offset, c->wall_ms);
    return c->wall_ms - entered < c->log->cfg.delete_retention_ms;
}

static int plog_compact_emit(struct plog_compact_out *o,
                             const void *p,
                             size_t n,
                             struct err_detail *ed)
{
    int rv;

    if (n > 0) {
        buf_put(&o->pending, p, n);
        if (!buf_ok(&o->pending)) {
            return err_set(ed, WEIR_ENOMEM, "compaction: out of memory");
        }
    }
    if (o->pending.len >= PLOG_COMPACT_FLUSH_BYTES ||
        (n == 0 && o->pending.len > 0)) {
        rv = o->log->ops->pwrite(o->log->ops->ctx, o->f, o->pending.data,
                                 o->pending.len, o->written, ed);
        if (rv != 0) {
            return rv;
        }
        o->written += o->pending.len;
        buf_reset(&o->pending);
    }
    return 0;
}

/* Encode the records recs[0..n) (consecutive offsets) as one batch with
 * h's fields, appended to out. */
static int plog_compact_encode_run(const struct batch_header *h,
                                   const struct batch_record *recs,
                                   uint32_t n,
                                   struct weir_buf *out)
{
    size_t start = out->len;
    int64_t base = recs[0].offset;
    int64_t max_ts = recs[0].timestamp;
    struct weir_buf body;
    int32_t seq = h->base_sequence;
    uint8_t *p;
    uint32_t i;

    if (buf_skip(out, BATCH_HEADER_BYTES) == SIZE_MAX) {
        return WEIR_ENOMEM;
    }
    buf_init(&body);
    for (i = 0; i < n; i++) {
        const struct batch_record *r = &recs[i];
        buf_reset(&body);
        buf_put_u8(&body, 0);
        buf_put_varlong(&body, (int64_t)((uint64_t)r->timestamp -
                                         (uint64_t)h->base_timestamp));
        buf_put_varint(&body, (int32_t)(r->offset - base));
        buf_put_varint(&body, r->key_null ? -1 : (int32_t)r->key.len);
        if (r->key.len > 0) {
            buf_put(&body, r->key.p, r->key.len);
        }
        buf_put_varint(&body, r->value_null ? -1 : (int32_t)r->value.len);
        if (r->value.len > 0) {
            buf_put(&body, r->value.p, r->value.len);
        }
        buf_put_varint(&body, r->header_count);
        if (r->headers.len > 0) {
            buf_put(&body, r->headers.p, r->headers.len);
        }
        buf_put_varint(out, (int32_t)body.len);
        buf_put(out, body.data, body.len);
        if (r->timestamp > max_ts) {
            max_ts = r->timestamp;
        }
    }
    if (!buf_ok(&body) || !buf_ok(out)) {
        buf_fini(&body);
        return WEIR_ENOMEM;
    }
    buf_fini(&body);
    if ((h->attributes & BATCH_ATTR_LOG_APPEND_TIME) != 0) {
        max_ts = h->max_timestamp;
    }
    if (seq >= 0) { /* each record keeps its sequence (wrapping as Kafka) */
        seq = (int32_t)(((int64_t)seq + (base - h->base_offset)) %
                        ((int64_t)INT32_MAX + 1));
    }
    p = out->data + start;
    wire_put_u64be(p + BATCH_OFF_BASE_OFFSET, (uint64_t)base);
    wire_put_u32be(p + BATCH_OFF_LENGTH,
                   (uint32_t)(out->len - start - BATCH_LOG_OVERHEAD));
    wire_put_u32be(p + BATCH_OFF_LEADER_EPOCH, (uint32_t)h->leader_epoch);
    p[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    wire_put_u16be(p + BATCH_OFF_ATTRIBUTES, (uint16_t)h->attributes);
    wire_put_u32be(p + BATCH_OFF_LAST_OFFSET_DELTA, n - 1);
    wire_put_u64be(p + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)h->base_timestamp);
    wire_put_u64be(p + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
    wire_put_u64be(p + BATCH_OFF_PRODUCER_ID, (uint64_t)h->producer_id);
    wire_put_u16be(p + BATCH_OFF_PRODUCER_EPOCH, (uint16_t)h->producer_epoch);
    wire_put_u32be(p + BATCH_OFF_BASE_SEQUENCE, (uint32_t)seq);
    wire_put_u32be(p + BATCH_OFF_RECORD_COUNT, n);
    wire_put_u32be(p + BATCH_OFF_CRC,
                   crc32c(p + BATCH_OFF_ATTRIBUTES,
                          out->len - start - BATCH_OFF_ATTRIBUTES));
    return 0;
}

/* Filter one validated, uncompressed batch b into o. */
static int plog_compact_filter(const struct plog_compact_ctx *c,
                               const struct batch_header *h,
                               struct weir_slice b,
                               struct plog_compact_out *o,
                               struct err_detail *ed)
{
    struct batch_record *recs;
    struct weir_buf enc;
    struct batch_iter it;
    struct batch_record rec;
    uint32_t n = 0;
    uint32_t i;
    uint32_t run;
    int got;
    int rv;

    recs = mem_calloc((size_t)h->record_count, sizeof(*recs));
    if (recs == NULL) {
        return err_set(ed, WEIR_ENOMEM, "compaction: out of memory");
    }
    rv = batch_iter_init(&it, b, ed);
    while (rv == 0 && (got = batch_iter_next(&it, &rec)) != 0) {
        if (got < 0) {
            rv = err_set(ed, WEIR_ECORRUPT, "compaction: bad record");
        } else if (plog_compact_keep(c, h, &rec)) {
            recs[n++] = rec;
        }
    }
    o->removed += rv == 0 ? (uint64_t)h->record_count - n : 0;
    if (rv != 0 || n == (uint32_t)h->record_count) {
        rv = rv != 0 ? rv : plog_compact_emit(o, b.p, b.len, ed);
        mem_free(recs);
        return rv;
    }
    buf_init(&enc);
    for (i = 0; rv == 0 && i < n; i += run) {
        for (run = 1; i + run < n &&
                      recs[i + run].offset == recs[i + run - 1].offset + 1;
             run++) {
        }
        if (plog_compact_encode_run(h, recs + i, run, &enc) != 0) {
            rv = err_set(ed, WEIR_ENOMEM, "compaction: out of memory");
        }
    }
    if (rv == 0) {
        rv = plog_compact_emit(o, enc.data, enc.len, ed);
    }
    buf_fini(&enc);
    mem_free(recs);
    return rv;
}

/* ---- one segment ---- */

static int plog_compact_write_seg(const struct plog_compact_ctx *c,
                                  const struct seg *s,
                                  struct plog_compact_out *o,
                                  struct err_detail *ed)
{
    struct batch_header h;
    struct weir_buf b;
    uint64_t pos;
    int rv = 0;

    buf_init(&b);
    for (pos = 0; rv == 0 && pos < s->size; pos += batch_size(&h)) {
        rv = plog_compact_read(s, pos, &b, &h, ed);
        if (rv != 0) {
            break;
        }
        if (plog_compact_opaque(&h)) {
            rv = plog_compact_emit(o, b.data, b.len, ed);
        } else {
            rv = plog_compact_filter(c, &h, buf_slice(&b), o, ed);
        }
    }
    buf_fini(&b);
    if (rv == 0) {
        rv = plog_compact_emit(o, NULL, 0, ed);
    }
    return rv;
}

static int plog_compact_unlink(struct plog *log,
                               int64_t base,
                               const char *ext,
                               struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = seg_path(log->dir, base, ext, path, ed);

    if (rv == 0) {
        rv = log->ops->unlink(log->ops->ctx, path, ed);
    }
    return rv == WEIR_ENOT_FOUND ? 0 : rv;
}

/* Steps 4 of the header comment, after the .cleaned file is whole and
 * synced: replace segment i by it. */
static int plog_compact_swap(struct plog *log,
                             uint32_t i,
                             const char *cleaned,
                             struct err_detail *ed)
{
    struct seg *old = log->segs[i];
    char path[STORAGE_PATH_MAX];
    struct seg *s;
    int rv;

    rv = plog_compact_unlink(log, old->base_offset, ".index", ed);
    if (rv == 0) {
        rv = plog_compact_unlink(log, old->base_offset, ".timeindex", ed);
    }
    if (rv == 0) {
        rv = seg_path(log->dir, old->base_offset, ".log", path, ed);
    }
    if (rv == 0) {
        rv = log->ops->rename(log->ops->ctx, cleaned, path, ed);
    }
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
    }
    if (rv == 0) {
        rv = seg_open(log->ops, log->dir, old->base_offset, &s, ed);
    }
    if (rv != 0) {
        /* the old segment stays in memory: its open file still holds the
         * old bytes, whole; the next open loads the new ones */
        return rv;
    }
    s->sparse = true;
    s->next_offset = old->next_offset;
    s->created_wall_ms = old->created_wall_ms;
    rv = recover_rebuild_index(s, log->cfg.index_interval_bytes, ed);
    if (rv == 0 && s->last_batch_base >= 0 &&
        s->max_timestamp > seg_index_last_ts(&s->idx)) {
        /* the closing time entry a roll writes (seg_finish_index) */
        rv = seg_index_reserve(&s->idx, 1);
        if (rv == 0) {
            seg_index_add_time(&s->idx, s->max_timestamp,
                               (uint32_t)(s->last_batch_base - s->base_offset));
            rv = seg_rewrite_index(s, ed);
        } else {
            rv = err_set(ed, rv, "compaction: out of memory");
        }
    }
    if (rv != 0) {
        seg_free(s);
        return rv;
    }
    /* readers that took the old file's descriptor (fetch dups it) keep
     * reading the old, unlinked bytes */
    seg_free(old);
    log->segs[i] = s;
    return 0;
}

static int plog_compact_seg(const struct plog_compact_ctx *c,
                            uint32_t i,
                            struct plog_compact_stats *st,
                            struct err_detail *ed)
{
    struct plog *log = c->log;
    const struct seg *s = log->segs[i];
    struct plog_compact_out o;
    uint64_t before = s->size;
    int rv;

    memset(&o, 0, sizeof(o));
    o.log = log;
    buf_init(&o.pending);
    rv =
        seg_path(log->dir, s->base_offset, ".log" PLOG_CLEANED_EXT, o.path, ed);
    if (rv == 0) {
        rv = log->ops->open(log->ops->ctx, o.path, true, &o.f, ed);
    }
    if (rv == 0) {
        rv = log->ops->truncate(log->ops->ctx, o.f, 0, ed);
    }
    if (rv == 0) {
        rv = plog_compact_write_seg(c, s, &o, ed);
    }
    if (rv == 0 && o.removed > 0) {
        rv = log->ops->fsync(log->ops->ctx, o.f, ed);
    }
    if (o.f != NULL) {
        log->ops->close(log->ops->ctx, o.f);
    }
    buf_fini(&o.pending);
    if (rv == 0 && o.removed > 0) {
        rv = plog_compact_swap(log, i, o.path, ed);
        if (rv == 0) {
            st->segments++;
            st->bytes_before += before;
            st->bytes_after += o.written;
            st->records_removed += o.removed;
        }
        return rv;
    }
    if (rv != 0 && o.f == NULL) {
        return rv; /* nothing was created */
    }
    /* nothing removed, or a failure before the swap: drop the copy */
    {
        struct err_detail ued;
        if (log->ops->unlink(log->ops->ctx, o.path, &ued) != 0) {
            trace_warn("storage",
                       "event=compaction_cleanup_failed reason=\"%s\"",
                       ued.msg);
        }
    }
    return rv;
}

int plog_compact(struct plog *log,
                 int64_t wall_ms,
                 int64_t keep_from,
                 struct plog_compact_stats *st,
                 struct err_detail *ed)
{
    struct plog_compact_ctx c;
    struct plog_compact_map map;
    struct weir_buf b;
    uint64_t dirty;
    uint64_t total;
    uint32_t end;
    uint32_t i;
    int rv;

    memset(st, 0, sizeof(*st));
    if (!plog_compact_needed(log, wall_ms, keep_from)) {
        return 0;
    }
    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    plog_compact_range(log, wall_ms, keep_from, &end, &dirty, &total);
    for (i = 0; i < log->n_segs; i++) {
        log->segs[i]->sparse = true;
    }
    /* the checkpoint exists before the first gap does, so a later open
     * knows the log is sparse even if the policy changed */
    rv = plog_cleaner_advance(log, log->clean_offset, wall_ms, ed);
    plog_compact_map_init(&map);
    buf_init(&b);
    for (i = 0; rv == 0 && i < end; i++) {
        rv = plog_ensure_index(log, log->segs[i], ed);
        if (rv == 0) {
            rv = plog_compact_map_seg(log->segs[i], &map, &b, ed);
        }
    }
    buf_fini(&b);
    c.log = log;
    c.map = &map;
    c.prev_clean_offset = log->clean_offset;
    c.wall_ms = wall_ms;
    for (i = 0; rv == 0 && i < end; i++) { /* oldest first */
        rv = plog_compact_seg(&c, i, st, ed);
    }
    plog_compact_map_fini(&map);
    if (rv == 0) {
        rv =
            plog_cleaner_advance(log, log->segs[end]->base_offset, wall_ms, ed);
    }
    if (rv != 0 && rv != WEIR_ECORRUPT) {
        /* a half-done swap is only made whole by a reopen */
        (void)plog_failed(log, rv, false, ed);
    }
    return rv;
}
