/* SPDX-License-Identifier: Apache-2.0 */
/* Restarting a log at an offset (Kafka's truncateFullyAndStartAt): every
 * segment goes and an empty log whose next offset is the given one takes
 * its place. A follower that fell behind its leader's log start does this
 * before fetching from that start (docs/replication.md). */
#include "broker/storage/plog_int.h"
#include "common/trace.h"

/* Files of every segment but the first, newest first, so a crash midway
 * leaves one run of segments from the first (as plog_truncate_to). */
static int plog_drop_later_segments(struct plog *log, struct err_detail *ed)
{
    int rv;

    while (log->n_segs > 1) {
        rv = seg_delete_files(log->ops, log->dir, plog_active(log)->base_offset,
                              ed);
        if (rv != 0) {
            return rv;
        }
        seg_free(log->segs[--log->n_segs]);
    }
    return 0;
}

/* The last segment's files are gone but the new one could not be made:
 * the log in memory no longer matches the disk. */
static int
plog_restart_failed(struct plog *log, int rv, const struct err_detail *ed)
{
    if (!log->offline) {
        trace_error("storage",
                    "event=log_restart_failed dir=%s error=%s msg=\"%s\"",
                    log->dir, weir_err_name(rv), ed->msg);
    }
    /* offline whatever the cause (out of memory too): segs[0] names files
     * that are gone */
    plog_mark_offline(log, rv, ed->msg);
    return WEIR_ELOG_OFFLINE;
}

/* Bookkeeping of a log that now starts, empty, at offset. */
static void plog_restarted(struct plog *log, int64_t offset)
{
    log->durable_offset = offset;
    log->unflushed_messages = 0;
    plog_maybe_checkpoint(log);
    if (log->clean_offset > offset) { /* records from here on are new */
        log->clean_offset = offset;
        while (log->n_clean_marks > 0 &&
               log->clean_marks[log->n_clean_marks - 1].offset > offset) {
            log->n_clean_marks--;
        }
    }
}

int plog_restart_at(struct plog *log,
                    int64_t offset,
                    int64_t wall_ms,
                    struct err_detail *ed)
{
    int64_t from = plog_end_offset(log);
    struct seg *s;
    int rv;

    rv = plog_check_online(log, ed);
    if (rv != 0) {
        return rv;
    }
    if (offset < 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "cannot restart %s at offset %lld", log->dir,
                       (long long)offset);
    }
    /* Recovery point 0 before any segment goes: after a crash midway the
     * next open scans whatever run of segments is left, and an empty
     * directory opens as a fresh log at 0 (with a recovery point above 0
     * it would refuse to open). Either is a shorter log, which the
     * follower repairs by fetching. */
    rv = plog_write_checkpoint(log, 0, ed);
    if (rv == 0) {
        rv = plog_drop_later_segments(log, ed);
    }
    if (rv == 0) {
        rv =
            seg_delete_files(log->ops, log->dir, log->segs[0]->base_offset, ed);
    }
    if (rv != 0) {
        return rv; /* segs[0] and everything in memory is still on disk */
    }
    /* the deletions are durable before the new segment exists, so no
     * crash leaves an old segment beside the new one (a gap in offsets
     * that would make the next open refuse) */
    rv = plog_sync_dir(log, ed);
    if (rv == 0) {
        rv = seg_create(log->ops, log->dir, offset, wall_ms, &s, ed);
    }
    if (rv != 0) {
        return plog_restart_failed(log, rv, ed);
    }
    seg_free(log->segs[0]);
    s->sparse =
        log->compacted || (log->cfg.cleanup_policy & PLOG_CLEANUP_COMPACT) != 0;
    log->segs[0] = s;
    rv = plog_sync_dir(log, ed);
    if (rv != 0) {
        return rv; /* offline now */
    }
    plog_restarted(log, offset);
    trace_info("storage",
               "event=log_restarted dir=%s old_end_offset=%lld "
               "start_offset=%lld",
               log->dir, (long long)from, (long long)offset);
    return 0;
}
