/* SPDX-License-Identifier: Apache-2.0 */
/* Partition log: lifecycle, append, flush and the shared helpers. Reads
 * live in plog_read.c, rolls/retention/truncation in plog_trim.c and the
 * open-time directory scan in plog_open.c. */
#include "broker/storage/plog.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "broker/storage/plog_int.h"
#include "broker/storage/recover.h"
#include "common/batch.h"
#include "common/mem.h"
#include "common/trace.h"

void plog_config_defaults(struct plog_config *cfg)
{
    cfg->segment_bytes = 1024ULL * 1024 * 1024;
    cfg->segment_ms = 7LL * 24 * 3600 * 1000;
    cfg->retention_ms = 7LL * 24 * 3600 * 1000;
    cfg->retention_bytes = -1;
    cfg->index_interval_bytes = 4096;
    cfg->max_batch_bytes = 1048588; /* Kafka's max.message.bytes default */
    cfg->flush_policy = PLOG_FLUSH_ACK;
    cfg->flush_ms = 1000;
    cfg->flush_messages = 10000;
    cfg->cleanup_policy = PLOG_CLEANUP_DELETE;
    cfg->delete_retention_ms = 24LL * 3600 * 1000;
    cfg->min_compaction_lag_ms = 0;
    cfg->min_cleanable_dirty_ratio = 0.5;
}

uint32_t plog_seg_at(const struct plog *log, int64_t offset)
{
    uint32_t lo = 0;
    uint32_t hi = log->n_segs;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (log->segs[mid]->base_offset <= offset) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == 0 ? 0 : lo - 1;
}

int plog_push_seg(struct plog *log, struct seg *s, struct err_detail *ed)
{
    if (log->n_segs == log->cap_segs) {
        uint32_t ncap = log->cap_segs == 0 ? 4 : log->cap_segs * 2;
        struct seg **p = mem_realloc(log->segs, ncap * sizeof(*p));
        if (p == NULL) {
            seg_free(s);
            return err_set(ed, WEIR_ENOMEM, "segment list: out of memory");
        }
        log->segs = p;
        log->cap_segs = ncap;
    }
    /* a compacted log may skip offsets inside and between segments */
    s->sparse =
        log->compacted || (log->cfg.cleanup_policy & PLOG_CLEANUP_COMPACT) != 0;
    log->segs[log->n_segs++] = s;
    return 0;
}

int plog_path(const struct plog *log,
              const char *name,
              char *out,
              struct err_detail *ed)
{
    return storage_join(out, STORAGE_PATH_MAX, log->dir, name, ed);
}

int plog_check_online(const struct plog *log, struct err_detail *ed)
{
    if (log->offline) {
        return err_set(ed, WEIR_ELOG_OFFLINE, "log %s is offline (%s)",
                       log->dir, log->offline_why);
    }
    return 0;
}

int plog_sync_seg(struct plog *log,
                  struct seg *s,
                  bool indexes,
                  struct err_detail *ed)
{
    int rv = seg_fsync(s, ed);

    if (rv == 0 && indexes) {
        rv = seg_fsync_index(s, ed);
    }
    return rv == 0 ? 0 : plog_failed(log, rv, true, ed);
}

int plog_sync_dir(struct plog *log, struct err_detail *ed)
{
    int rv = log->ops->fsync_dir(log->ops->ctx, log->dir, ed);

    return rv == 0 ? 0 : plog_failed(log, rv, true, ed);
}

int plog_write_checkpoint(struct plog *log,
                          int64_t offset,
                          struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    char text[PLOG_CKPT_OFFSET_MAX_LEN];
    size_t n;
    int rv;

    rv = plog_path(log, PLOG_RECOVERY_CHECKPOINT, path, ed);
    if (rv != 0) {
        return rv;
    }
    /* version line, then the offset; recovery starts from the segment
     * holding it */
    if (plog_ckpt_format_offset(offset, text, sizeof(text), &n) != 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "recovery point %lld of %s",
                       (long long)offset, log->dir);
    }
    rv = storage_write_atomic(log->ops, log->dir, path, text, n, ed);
    if (rv == 0) {
        log->checkpoint_offset = offset;
    }
    return rv;
}

void plog_maybe_checkpoint(struct plog *log)
{
    struct err_detail ed;
    int64_t at = log->segs[plog_seg_at(log, log->durable_offset)]->base_offset;

    if (log->checkpoint_offset >= at &&
        log->checkpoint_offset <= log->durable_offset) {
        return;
    }
    err_detail_clear(&ed);
    if (plog_write_checkpoint(log, log->durable_offset, &ed) != 0) {
        /* the data is durable; a disk that cannot take a small file is
         * failing or full, and the next write would fail too */
        (void)plog_failed(log, ed.code, false, &ed);
    }
}

int plog_ensure_index(struct plog *log, struct seg *s, struct err_detail *ed)
{
    return recover_ensure_index(s, log->cfg.index_interval_bytes, ed);
}

int plog_open(const struct storage_ops *ops,
              const char *dir,
              const struct plog_config *cfg,
              int64_t wall_ms,
              struct plog **out,
              struct err_detail *ed)
{
    struct plog *log;
    int rv;

    *out = NULL;
    log = mem_calloc(1, sizeof(*log));
    if (log == NULL) {
        return err_set(ed, WEIR_ENOMEM, "opening %s: out of memory", dir);
    }
    log->ops = ops;
    log->cfg = *cfg;
    log->checkpoint_offset = -1;
    log->corrupt_offset = -1;
    log->corrupt_base = -1;
    log->dir = mem_strdup(dir);
    if (log->dir == NULL) {
        mem_free(log);
        return err_set(ed, WEIR_ENOMEM, "opening %s: out of memory", dir);
    }
    rv = plog_load(log, wall_ms, ed);
    if (rv != 0) {
        plog_free(log);
        return rv;
    }
    *out = log;
    return 0;
}

void plog_free(struct plog *log)
{
    uint32_t i;

    if (log == NULL) {
        return;
    }
    for (i = 0; i < log->n_segs; i++) {
        seg_free(log->segs[i]);
    }
    mem_free(log->segs);
    mem_free(log->clean_marks);
    mem_free(log->dir);
    mem_free(log);
}

/* Everything durable, checkpoint at the end, then the marker: the marker
 * must never exist unless all of the log is on disk. */
static int plog_shutdown(struct plog *log, struct err_detail *ed)
{
    struct seg *act = plog_active(log);
    char path[STORAGE_PATH_MAX];
    uint32_t i;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv == 0) {
        rv = seg_finish_index(act, ed);
    }
    for (i = 0; rv == 0 && i < log->n_segs; i++) {
        rv = plog_sync_seg(log, log->segs[i], log->segs[i] == act, ed);
    }
    if (rv == 0) {
        rv = plog_write_checkpoint(log, act->next_offset, ed);
    }
    if (rv == 0) {
        rv = plog_path(log, PLOG_CLEAN_MARKER, path, ed);
    }
    if (rv == 0) {
        rv = storage_write_atomic(log->ops, log->dir, path, "", 0, ed);
    }
    return rv;
}

bool plog_close(struct plog *log)
{
    struct err_detail ed;
    bool clean = true;

    if (log == NULL) {
        return true;
    }
    err_detail_clear(&ed);
    if (plog_shutdown(log, &ed) != 0) {
        trace_error("storage",
                    "event=unclean_close dir=%s reason=\"%s\" "
                    "next_open=recovery",
                    log->dir, ed.msg);
        clean = false;
    }
    plog_free(log);
    return clean;
}

/* Validate every batch before anything is written. */
static int plog_validate(const uint8_t *batches,
                         size_t len,
                         uint32_t max_batch_bytes,
                         uint32_t *n_batches,
                         int64_t *n_offsets,
                         struct err_detail *ed)
{
    struct weir_slice all = {batches, len};
    struct weir_slice whole;
    struct batch_header h;
    size_t pos = 0;
    int rv;

    *n_batches = 0;
    *n_offsets = 0;
    if (len == 0) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE, "no record batch to append");
    }
    if (len > UINT32_MAX - BATCH_HEADER_BYTES) {
        return err_set(ed, WEIR_EMESSAGE_TOO_LARGE,
                       "%zu bytes in one append exceed a segment", len);
    }
    for (;;) {
        rv = batch_next(all, &pos, max_batch_bytes, false, &h, &whole, ed);
        if (rv != 0) {
            err_wrap(ed, "batch %u at byte %zu", *n_batches, pos);
            return rv;
        }
        if (whole.len == 0) {
            return 0;
        }
        /* The broker reads no compressed batch (and libweir writes none):
         * one would be stored unchecked, with an offset span its records
         * do not back, and no consumer could read past it. */
        if ((h.attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE) {
            return err_set(ed, WEIR_EUNSUPPORTED_COMPRESSION,
                           "batch %u: compression codec %d is not supported; "
                           "send uncompressed batches",
                           *n_batches, h.attributes & BATCH_ATTR_CODEC_MASK);
        }
        (*n_batches)++;
        *n_offsets += (int64_t)h.last_offset_delta + 1;
    }
}

static bool plog_needs_roll(const struct plog *log,
                            size_t len,
                            int64_t n_offsets,
                            int64_t wall_ms)
{
    const struct seg *s = plog_active(log);

    if (s->size == 0) {
        return false;
    }
    return s->size + len > log->cfg.segment_bytes ||
           s->size + len > UINT32_MAX ||
           wall_ms - s->created_wall_ms >= log->cfg.segment_ms ||
           s->next_offset + n_offsets - 1 - s->base_offset > UINT32_MAX;
}

/* Longest prefix of whole batches (at least one) that fits the active
 * segment's room, so one append of many batches spreads over segments the
 * way separate appends would. */
static size_t plog_chunk(const struct plog *log,
                         const uint8_t *batches,
                         size_t len,
                         uint32_t *n_batches,
                         int64_t *n_offsets)
{
    const struct seg *s = plog_active(log);
    uint64_t room =
        log->cfg.segment_bytes > s->size ? log->cfg.segment_bytes - s->size : 0;
    size_t pos = 0;
    size_t blen;

    *n_batches = 0;
    *n_offsets = 0;
    while (pos < len) {
        blen = BATCH_LOG_OVERHEAD +
               wire_get_u32be(batches + pos + BATCH_OFF_LENGTH);
        if (*n_batches > 0 && pos + blen > room) {
            break;
        }
        (*n_batches)++;
        *n_offsets += (int64_t)wire_get_u32be(batches + pos +
                                              BATCH_OFF_LAST_OFFSET_DELTA) +
                      1;
        pos += blen;
    }
    return pos;
}

/* Write validated batches that go to one segment (rolling first if
 * needed). */
static int plog_append_chunk(struct plog *log,
                             const uint8_t *batches,
                             size_t len,
                             uint32_t n_batches,
                             int64_t n_offsets,
                             int64_t wall_ms,
                             struct err_detail *ed)
{
    struct batch_header h;
    struct seg *s;
    size_t pos;
    int rv;

    if (plog_needs_roll(log, len, n_offsets, wall_ms)) {
        rv = plog_roll(log, wall_ms, ed);
        if (rv != 0) {
            return rv;
        }
    }
    s = plog_active(log);
    /* room for the index entries now, so nothing can fail after the
     * write */
    rv = seg_index_reserve(&s->idx, n_batches);
    if (rv != 0) {
        return err_set(ed, rv, "appending to %s: out of memory", log->dir);
    }
    rv = log->ops->pwrite(log->ops->ctx, s->log, batches, len, s->size, ed);
    s->dirty = true;
    if (rv != 0) {
        struct err_detail ted;
        /* a partial write must not stay visible to the next recovery */
        if (log->ops->truncate(log->ops->ctx, s->log, s->size, &ted) != 0) {
            trace_error("storage",
                        "event=append_undo_failed dir=%s reason=\"%s\"",
                        log->dir, ted.msg);
            /* part of the batches may be in the file: not "not written" */
            if (ed != NULL) {
                ed->code = WEIR_EIO;
            }
            rv = WEIR_EIO;
        }
        return plog_failed(log, rv, false, ed);
    }
    seg_verified_add(s, s->size, s->size + len); /* validated before */
    if (s->size == 0) {
        s->created_wall_ms = wall_ms; /* age counts from the first batch */
    }
    for (pos = 0; pos < len; pos += batch_size(&h)) {
        if (batch_header_decode(batches + pos, len - pos, UINT32_MAX, &h,
                                NULL) != 0) {
            break; /* cannot happen: validated above */
        }
        seg_note_batch(s, &h, s->size, log->cfg.index_interval_bytes);
    }
    log->unflushed_messages += n_offsets;
    return 0;
}

/* Assign dense offsets from `off` and the leader epoch to whole batches
 * (outside the CRC). A roll keeps the next offset, so stamping before the
 * chunk is written gives the same offsets. */
static void
plog_stamp(uint8_t *batches, size_t len, int64_t off, int32_t leader_epoch)
{
    size_t pos;

    for (pos = 0; pos < len;
         pos += BATCH_LOG_OVERHEAD +
                wire_get_u32be(batches + pos + BATCH_OFF_LENGTH)) {
        batch_set_base(batches + pos, off, leader_epoch);
        off += (int64_t)wire_get_u32be(batches + pos +
                                       BATCH_OFF_LAST_OFFSET_DELTA) +
               1;
    }
}

int plog_append(struct plog *log,
                uint8_t *batches,
                size_t len,
                int32_t leader_epoch,
                int64_t wall_ms,
                int64_t *base,
                int64_t *last,
                struct err_detail *ed)
{
    uint32_t n_batches;
    int64_t n_offsets;
    size_t pos = 0;
    size_t chunk;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv == 0) {
        rv = plog_validate(batches, len, log->cfg.max_batch_bytes, &n_batches,
                           &n_offsets, ed);
    }
    if (rv != 0) {
        return rv;
    }
    *base = plog_active(log)->next_offset;
    while (pos < len) {
        chunk =
            plog_chunk(log, batches + pos, len - pos, &n_batches, &n_offsets);
        plog_stamp(batches + pos, chunk, plog_active(log)->next_offset,
                   leader_epoch);
        rv = plog_append_chunk(log, batches + pos, chunk, n_batches, n_offsets,
                               wall_ms, ed);
        if (rv != 0) {
            /* earlier chunks are in the log: the outcome is no longer
             * "nothing written", so report an indefinite error */
            if (pos > 0 && ed != NULL) {
                ed->code = WEIR_EIO;
                rv = WEIR_EIO;
            }
            return rv;
        }
        pos += chunk;
    }
    *last = plog_active(log)->next_offset - 1;
    return 0;
}

/* Offsets of validated replica batches must increase and start at or
 * past the log end; they may skip offsets (the leader's cleaner removed
 * records there), which *gap says. */
static int plog_check_replica_offsets(const struct plog *log,
                                      const uint8_t *batches,
                                      size_t len,
                                      bool *gap,
                                      struct err_detail *ed)
{
    struct batch_header h;
    int64_t expect = plog_active(log)->next_offset;
    size_t pos;

    *gap = false;
    for (pos = 0; pos < len; pos += batch_size(&h)) {
        if (batch_header_decode(batches + pos, len - pos, UINT32_MAX, &h, ed) !=
            0) {
            return WEIR_ECORRUPT_MESSAGE; /* cannot happen: validated */
        }
        if (h.base_offset < expect) {
            return err_set(ed, WEIR_EOFFSET_OUT_OF_RANGE,
                           "%s: replica batch at byte %zu has base offset "
                           "%" PRId64 ", below the next offset %" PRId64,
                           log->dir, pos, h.base_offset, expect);
        }
        *gap |= h.base_offset > expect;
        expect = h.base_offset + (int64_t)h.last_offset_delta + 1;
    }
    return 0;
}

/* Last offset + 1 of the whole batches in [batches, batches + len). */
static int64_t plog_batches_end(const uint8_t *batches, size_t len)
{
    int64_t end = 0;
    size_t pos = 0;

    while (pos < len) {
        end = (int64_t)wire_get_u64be(batches + pos + BATCH_OFF_BASE_OFFSET) +
              wire_get_u32be(batches + pos + BATCH_OFF_LAST_OFFSET_DELTA) + 1;
        pos += BATCH_LOG_OVERHEAD +
               wire_get_u32be(batches + pos + BATCH_OFF_LENGTH);
    }
    return end;
}

int plog_append_replica(struct plog *log,
                        const uint8_t *batches,
                        size_t len,
                        int64_t wall_ms,
                        int64_t *last,
                        struct err_detail *ed)
{
    uint32_t n_batches;
    int64_t n_offsets;
    size_t pos = 0;
    size_t chunk;
    bool gap = false;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv == 0) {
        /* no max.message.bytes here: the leader accepted the batch, and a
         * follower refusing it would stay out of the ISR for good (Kafka
         * does not apply it to replica appends either) */
        rv =
            plog_validate(batches, len, UINT32_MAX, &n_batches, &n_offsets, ed);
    }
    if (rv == 0) {
        rv = plog_check_replica_offsets(log, batches, len, &gap, ed);
    }
    if (rv == 0 && gap) {
        rv = plog_mark_sparse(log, ed);
    }
    if (rv != 0) {
        return rv;
    }
    while (pos < len) {
        chunk =
            plog_chunk(log, batches + pos, len - pos, &n_batches, &n_offsets);
        /* the offsets the chunk spans, gaps included (for the roll) */
        n_offsets = plog_batches_end(batches + pos, chunk) -
                    plog_active(log)->next_offset;
        rv = plog_append_chunk(log, batches + pos, chunk, n_batches, n_offsets,
                               wall_ms, ed);
        if (rv != 0) {
            if (pos > 0 && ed != NULL) {
                ed->code = WEIR_EIO;
                rv = WEIR_EIO;
            }
            return rv;
        }
        pos += chunk;
    }
    *last = plog_active(log)->next_offset - 1;
    return 0;
}

int plog_flush(struct plog *log, struct err_detail *ed)
{
    uint32_t i;
    int rv;

    rv = plog_check_online(log, ed);
    for (i = 0; rv == 0 && i < log->n_segs; i++) {
        rv = plog_sync_seg(log, log->segs[i], false, ed);
    }
    if (rv != 0) {
        return rv;
    }
    log->durable_offset = plog_active(log)->next_offset;
    log->unflushed_messages = 0;
    plog_maybe_checkpoint(log);
    return 0;
}

int64_t plog_start_offset(const struct plog *log)
{
    return log->segs[0]->base_offset;
}

int64_t plog_end_offset(const struct plog *log)
{
    return plog_active(log)->next_offset;
}

int64_t plog_durable_offset(const struct plog *log)
{
    return log->durable_offset;
}

int64_t plog_unflushed_messages(const struct plog *log)
{
    return log->unflushed_messages;
}

uint64_t plog_size_bytes(const struct plog *log)
{
    uint64_t total = 0;
    uint32_t i;

    for (i = 0; i < log->n_segs; i++) {
        total += log->segs[i]->size;
    }
    return total;
}

uint32_t plog_segment_count(const struct plog *log)
{
    return log->n_segs;
}

bool plog_recovered(const struct plog *log)
{
    return log->recovered;
}

void plog_set_config(struct plog *log, const struct plog_config *cfg)
{
    uint32_t i;

    log->cfg = *cfg;
    for (i = 0; i < log->n_segs; i++) {
        log->segs[i]->sparse |=
            (cfg->cleanup_policy & PLOG_CLEANUP_COMPACT) != 0;
    }
}

const struct plog_config *plog_config(const struct plog *log)
{
    return &log->cfg;
}

const char *plog_dir(const struct plog *log)
{
    return log->dir;
}
