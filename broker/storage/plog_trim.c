/* SPDX-License-Identifier: Apache-2.0 */
/* Changing the shape of a log: segment rolls, retention (whole closed
 * segments from the front) and truncation (batches from the back). */
#include "broker/storage/plog_int.h"
#include "common/trace.h"

int plog_roll(struct plog *log, int64_t wall_ms, struct err_detail *ed)
{
    struct seg *old = plog_active(log);
    struct err_detail ied;
    struct seg *s;
    int rv;

    /* the old segment is whole on disk before the new one exists, so a
     * newer segment always implies complete older ones (recovery relies on
     * it) */
    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    rv = seg_finish_index(old, ed);
    if (rv == 0) {
        rv = plog_sync_seg(log, old, true, ed);
    }
    if (rv == 0) {
        rv = seg_create(log->ops, log->dir, old->next_offset, wall_ms, &s, ed);
    }
    if (rv != 0) {
        return plog_failed(log, rv, false, ed);
    }
    rv = plog_push_seg(log, s, ed);
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
        if (rv != 0) {
            seg_free(log->segs[--log->n_segs]);
        }
    }
    if (rv != 0) {
        if (seg_delete_files(log->ops, log->dir, old->next_offset, &ied) != 0) {
            trace_warn("storage", "event=roll_undo_failed reason=\"%s\"",
                       ied.msg);
        }
        return rv;
    }
    seg_close_index_files(old);
    /* every closed segment is synced, so all of the log is durable now */
    log->durable_offset = old->next_offset;
    log->unflushed_messages = 0;
    plog_maybe_checkpoint(log);
    trace_debug("storage", "event=segment_roll dir=%s base_offset=%lld",
                log->dir, (long long)s->base_offset);
    return 0;
}

int plog_maybe_roll(struct plog *log, int64_t wall_ms, struct err_detail *ed)
{
    const struct seg *s = plog_active(log);

    if (s->size == 0 || wall_ms - s->created_wall_ms < log->cfg.segment_ms) {
        return 0;
    }
    return plog_roll(log, wall_ms, ed);
}

/* Segments whose newest record timestamp is unknown or negative (producers
 * sent none) never expire by age; size retention still applies. */
static bool
plog_expired(const struct plog *log, const struct seg *s, int64_t wall_ms)
{
    return log->cfg.retention_ms >= 0 && s->max_timestamp >= 0 &&
           s->max_timestamp < wall_ms - log->cfg.retention_ms;
}

static int plog_delete_first(struct plog *log, struct err_detail *ed)
{
    struct seg *s = log->segs[0];
    uint32_t i;
    int rv;

    rv = seg_delete_files(log->ops, log->dir, s->base_offset, ed);
    if (rv != 0) {
        return plog_failed(log, rv, false, ed);
    }
    seg_free(s);
    for (i = 1; i < log->n_segs; i++) {
        log->segs[i - 1] = log->segs[i];
    }
    log->n_segs--;
    return 0;
}

/* The first segment may go: a closed one whose every offset is below
 * keep_from (a follower that has not copied it yet, or a consumer of the
 * committed log, still needs the rest). */
static bool plog_may_delete_first(const struct plog *log, int64_t keep_from)
{
    return log->n_segs > 1 && log->segs[0]->next_offset <= keep_from;
}

int plog_enforce_retention(struct plog *log,
                           int64_t wall_ms,
                           int64_t keep_from,
                           uint32_t *deleted,
                           struct err_detail *ed)
{
    int rv;

    *deleted = 0;
    rv = plog_check_online(log, ed);
    if (rv != 0 || (log->cfg.cleanup_policy & PLOG_CLEANUP_DELETE) == 0) {
        return rv; /* compact only: compaction alone removes records */
    }
    /* from the front only: the log stays one run of offsets */
    while (rv == 0 && plog_may_delete_first(log, keep_from) &&
           plog_expired(log, log->segs[0], wall_ms)) {
        rv = plog_delete_first(log, ed);
        *deleted += rv == 0;
    }
    while (rv == 0 && log->cfg.retention_bytes >= 0 &&
           plog_may_delete_first(log, keep_from) &&
           plog_size_bytes(log) > (uint64_t)log->cfg.retention_bytes) {
        rv = plog_delete_first(log, ed);
        *deleted += rv == 0;
    }
    if (*deleted > 0) {
        struct err_detail ded;
        /* not plog_sync_dir: a lost unlink only brings old data back */
        if (log->ops->fsync_dir(log->ops->ctx, log->dir, &ded) != 0) {
            trace_warn("storage", "event=dir_fsync_failed reason=\"%s\"",
                       ded.msg);
        }
        trace_info("storage",
                   "event=retention dir=%s segments_deleted=%u "
                   "start_offset=%lld",
                   log->dir, *deleted, (long long)plog_start_offset(log));
    }
    return rv;
}

/* Rebuild what truncation of s to `pos` (new end new_next) invalidated:
 * the last batch, bytes since the last index entry and the max timestamp,
 * from the last time entry on. */
static int plog_retail(struct seg *s,
                       uint64_t pos,
                       int64_t new_next,
                       struct err_detail *ed)
{
    struct batch_header h;
    uint64_t p;
    int rv;

    seg_index_truncate(&s->idx, (uint32_t)(new_next - s->base_offset),
                       (uint32_t)pos);
    s->size = pos;
    s->next_offset = new_next;
    s->last_batch_base = -1;
    s->max_timestamp = seg_index_last_ts(&s->idx);
    s->bytes_since_index =
        s->idx.n_off > 0 ? pos - s->idx.off[s->idx.n_off - 1].pos : pos;
    /* batches up to the last time entry's are covered by its ts; walk the
     * rest (from an indexed batch at or before it) to the new end */
    p = s->idx.n_time > 0
            ? seg_index_lookup(&s->idx, s->idx.time[s->idx.n_time - 1].rel)
            : 0;
    for (; p < pos; p += batch_size(&h)) {
        rv = seg_read_header(s, p, &h, ed);
        if (rv != 0) {
            return rv;
        }
        if (h.max_timestamp > s->max_timestamp) {
            s->max_timestamp = h.max_timestamp;
        }
        s->last_batch_base = h.base_offset;
    }
    return 0;
}

int plog_truncate_to(struct plog *log, int64_t offset, struct err_detail *ed)
{
    struct batch_header h;
    struct seg *s;
    uint64_t pos = 0;
    int64_t new_next;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv != 0 || offset >= plog_end_offset(log)) {
        return rv;
    }
    if (offset < plog_start_offset(log)) {
        return err_set(ed, WEIR_EOFFSET_OUT_OF_RANGE,
                       "cannot truncate %s to %lld, below its start %lld",
                       log->dir, (long long)offset,
                       (long long)plog_start_offset(log));
    }
    s = log->segs[plog_seg_at(log, offset)];
    new_next = s->base_offset;
    rv = plog_ensure_index(log, s, ed);
    if (rv == 0 && offset > s->base_offset) {
        /* the batch holding offset goes too: batches are never split */
        rv = plog_find_batch(s, offset, &pos, &h, ed);
        new_next = h.base_offset;
        if (rv == WEIR_ENOT_FOUND) { /* compacted away to the end of s */
            rv = 0;
            pos = s->size;
            new_next = offset;
        } else if (rv == 0 && new_next > offset) { /* in a compacted gap */
            new_next = offset;
        }
    }
    /* newest first, so a crash midway leaves one run of segments */
    while (rv == 0 && plog_active(log) != s) {
        rv = seg_delete_files(log->ops, log->dir, plog_active(log)->base_offset,
                              ed);
        if (rv == 0) {
            seg_free(log->segs[--log->n_segs]);
        }
    }
    if (rv == 0) {
        rv = log->ops->truncate(log->ops->ctx, s->log, pos, ed);
        s->dirty = true;
    }
    if (rv == 0) {
        rv = plog_retail(s, pos, new_next, ed);
    }
    if (rv == 0) {
        rv = seg_open_index_files(s, ed); /* active now; cuts stale tails */
    }
    if (rv == 0) {
        rv = plog_sync_seg(log, s, true, ed);
    }
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
    }
    if (rv != 0) {
        /* part of the log may be cut: nothing is sure until a reopen */
        return plog_failed(log, rv, false, ed);
    }
    seg_verified_cut(s, pos);
    log->durable_offset = new_next;
    log->unflushed_messages = 0;
    plog_maybe_checkpoint(log);
    if (log->clean_offset > new_next) { /* records from here on are new */
        log->clean_offset = new_next;
        while (log->n_clean_marks > 0 &&
               log->clean_marks[log->n_clean_marks - 1].offset > new_next) {
            log->n_clean_marks--;
        }
    }
    trace_info("storage", "event=truncate dir=%s end_offset=%lld", log->dir,
               (long long)new_next);
    return 0;
}
