/* SPDX-License-Identifier: Apache-2.0 */
/* Offline logs (Kafka's log-dir failure handling, per partition): after a
 * failed write, fsync, truncate, unlink or checkpoint, or a batch found
 * corrupt, the log refuses every append and read until plog_recover has
 * opened it again from disk. Nothing is retried in place: after a failed
 * fsync the page cache may hold bytes the disk never got, so only what a
 * successful fsync covered is trusted, and a reopen starts from the files
 * as recovery after a crash would. The struct plog stays the same object
 * throughout, because produce waits, the leader core and the group
 * coordinator hold pointers to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/plog_int.h"
#include "common/mem.h"
#include "common/trace.h"

static const char *plog_cause_name(enum plog_offline_cause c)
{
    switch (c) {
    case PLOG_OFFLINE_IO:
        return "io";
    case PLOG_OFFLINE_CORRUPT:
        return "corrupt";
    case PLOG_OFFLINE_REPLICA:
        return "replica";
    case PLOG_ONLINE:
        break;
    }
    return "none";
}

void plog_note_fsync_failed(struct plog *log)
{
    char path[STORAGE_PATH_MAX];
    char tmp[STORAGE_PATH_MAX];
    struct storage_file *f = NULL;
    struct err_detail ed;
    char text[PLOG_CKPT_OFFSET_MAX_LEN];
    size_t n = 0;
    int rv;

    err_detail_clear(&ed);
    rv = plog_path(log, PLOG_FSYNC_FAILED_CHECKPOINT, path, &ed);
    if (rv == 0 && log->ops->exists(log->ops->ctx, path) == 1) {
        return; /* an earlier failure's offset, no later than this one */
    }
    if (rv == 0 && plog_ckpt_format_offset(log->durable_offset, text,
                                           sizeof(text), &n) != 0) {
        rv = err_set(&ed, WEIR_EINVALID_ARGUMENT, "bad durable offset");
    }
    if (rv == 0 &&
        snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        rv = err_set(&ed, WEIR_EINVALID_ARGUMENT, "path too long");
    }
    if (rv == 0) {
        rv = log->ops->open(log->ops->ctx, tmp, true, &f, &ed);
    }
    if (rv == 0) {
        rv = log->ops->truncate(log->ops->ctx, f, 0, &ed);
    }
    if (rv == 0) {
        rv = log->ops->pwrite(log->ops->ctx, f, text, n, 0, &ed);
    }
    if (f != NULL) {
        log->ops->close(log->ops->ctx, f);
    }
    if (rv == 0) {
        rv = log->ops->rename(log->ops->ctx, tmp, path, &ed);
    }
    if (rv != 0) {
        trace_warn("storage",
                   "event=fsync_failed_note_lost dir=%s durable_offset=%lld "
                   "reason=\"%s\" effect=\"a restart before the log comes "
                   "back would not cut it to its durable offset\"",
                   log->dir, (long long)log->durable_offset, ed.msg);
    }
}

int64_t plog_fsync_failed_offset(struct plog *log)
{
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    char *text = NULL;
    size_t len;
    int64_t v = -1;

    if (plog_path(log, PLOG_FSYNC_FAILED_CHECKPOINT, path, &ed) != 0 ||
        storage_read_small(log->ops, path, PLOG_CKPT_OFFSET_MAX_LEN * 4, &text,
                           &len, &ed) != 0) {
        return -1;
    }
    if (plog_ckpt_parse_offset(text, len, path, &v, &ed) != 0) {
        trace_warn("storage",
                   "event=fsync_failed_note_unreadable file=%s reason=\"%s\" "
                   "action=no_cut",
                   path, ed.msg);
        v = -1;
    }
    mem_free(text);
    return v;
}

int plog_forget_fsync_failed(struct plog *log, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = plog_path(log, PLOG_FSYNC_FAILED_CHECKPOINT, path, ed);

    if (rv == 0) {
        rv = log->ops->unlink(log->ops->ctx, path, ed);
    }
    if (rv == 0) {
        rv = log->ops->fsync_dir(log->ops->ctx, log->dir, ed);
    }
    return rv == WEIR_ENOT_FOUND ? 0 : rv;
}

static void plog_go_offline(struct plog *log,
                            enum plog_offline_cause cause,
                            int err,
                            bool sync,
                            const char *why)
{
    if (log->offline) {
        trace_warn("storage",
                   "event=log_offline_again dir=%s error=%s reason=\"%s\"",
                   log->dir, weir_err_name(err), why);
        return;
    }
    log->offline = true;
    log->offline_cause = cause;
    log->offline_err = err;
    log->offline_sync = sync;
    if (sync) {
        plog_note_fsync_failed(log);
    }
    (void)snprintf(log->offline_why, sizeof(log->offline_why), "%s", why);
    trace_error("storage",
                "event=log_offline dir=%s cause=%s error=%s fsync=%d "
                "end_offset=%lld durable_offset=%lld reason=\"%s\"",
                log->dir, plog_cause_name(cause), weir_err_name(err),
                sync ? 1 : 0, (long long)plog_end_offset(log),
                (long long)log->durable_offset, why);
    if (log->offline_fn != NULL) {
        log->offline_fn(log->offline_arg, log);
    }
}

static enum plog_offline_cause plog_cause_of(int err)
{
    switch (err) {
    case WEIR_ECORRUPT:
    case WEIR_ECORRUPT_MESSAGE:
        return PLOG_OFFLINE_CORRUPT;
    case WEIR_EIO:
    case WEIR_ESTORAGE:
    case WEIR_ENOT_FOUND:
        return PLOG_OFFLINE_IO;
    default:
        return PLOG_OFFLINE_REPLICA;
    }
}

void plog_mark_offline(struct plog *log, int err, const char *why)
{
    plog_go_offline(log, plog_cause_of(err), err, false, why);
}

/* Not the disk's fault: the log is as it was. */
static bool plog_err_spares_disk(int err)
{
    return err == 0 || err == WEIR_ENOMEM || err == WEIR_EINVALID_ARGUMENT ||
           err == WEIR_ELOG_OFFLINE;
}

int plog_failed(struct plog *log,
                int rv,
                bool sync,
                const struct err_detail *ed)
{
    if (plog_err_spares_disk(rv)) {
        return rv;
    }
    plog_go_offline(log, PLOG_OFFLINE_IO, rv, sync,
                    ed != NULL && ed->msg[0] != '\0' ? ed->msg
                                                     : weir_err_str(rv));
    return rv;
}

bool plog_storage_failed(struct plog *log, int err, const char *why)
{
    if (!plog_err_spares_disk(err)) {
        plog_go_offline(log, PLOG_OFFLINE_IO, err, false, why);
    }
    return log->offline;
}

bool plog_is_offline(const struct plog *log)
{
    return log->offline;
}

enum plog_offline_cause plog_offline_cause(const struct plog *log)
{
    return log->offline ? log->offline_cause : PLOG_ONLINE;
}

const char *plog_offline_reason(const struct plog *log)
{
    return log->offline ? log->offline_why : "";
}

int64_t plog_corrupt_offset(const struct plog *log)
{
    return log->offline && log->offline_cause == PLOG_OFFLINE_CORRUPT
               ? log->corrupt_offset
               : -1;
}

void plog_set_offline_hook(struct plog *log, plog_offline_fn fn, void *arg)
{
    log->offline_fn = fn;
    log->offline_arg = arg;
}

static int plog_unlink_opt(struct plog *log,
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

/* Cut the files at the corrupt batch: later segments go (newest first, so
 * a crash midway leaves one run), the corrupt segment is truncated at the
 * bad batch and its derived index files removed, and the recovery point
 * moves to it, so the open that follows scans it whole. Safe to repeat
 * after a failure part way. */
static int plog_cut_corrupt(struct plog *log, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    struct storage_file *f = NULL;
    uint32_t i;
    int rv = 0;

    for (i = log->n_segs; rv == 0 && i > 0; i--) {
        int64_t base = log->segs[i - 1]->base_offset;
        if (base <= log->corrupt_base) {
            break;
        }
        rv = plog_unlink_opt(log, base, ".log", ed);
        if (rv == 0) {
            rv = plog_unlink_opt(log, base, ".index", ed);
        }
        if (rv == 0) {
            rv = plog_unlink_opt(log, base, ".timeindex", ed);
        }
    }
    if (rv == 0) {
        rv = seg_path(log->dir, log->corrupt_base, ".log", path, ed);
    }
    if (rv == 0) {
        rv = log->ops->open(log->ops->ctx, path, false, &f, ed);
    }
    if (rv == 0) {
        rv = log->ops->truncate(log->ops->ctx, f, log->corrupt_pos, ed);
    }
    if (rv == 0) {
        rv = log->ops->fsync(log->ops->ctx, f, ed);
    }
    if (f != NULL) {
        log->ops->close(log->ops->ctx, f);
    }
    if (rv == 0) {
        rv = plog_unlink_opt(log, log->corrupt_base, ".index", ed);
    }
    if (rv == 0) {
        rv = plog_unlink_opt(log, log->corrupt_base, ".timeindex", ed);
    }
    if (rv == 0) {
        rv = log->ops->fsync_dir(log->ops->ctx, log->dir, ed);
    }
    if (rv == 0) {
        rv = plog_write_checkpoint(log, log->corrupt_base, ed);
    }
    if (rv == 0) {
        trace_warn("storage",
                   "event=corrupt_cut dir=%s segment=%020lld.log "
                   "position=%llu offset=%lld",
                   log->dir, (long long)log->corrupt_base,
                   (unsigned long long)log->corrupt_pos,
                   (long long)log->corrupt_offset);
    }
    return rv;
}

/* Everything in the freshly opened log on disk for real: recovery trusts
 * what it reads, which after a failure may still be only in the page
 * cache. */
static int plog_sync_all(struct plog *log, struct err_detail *ed)
{
    struct seg *act = plog_active(log);
    uint32_t i;
    int rv = 0;

    for (i = 0; rv == 0 && i < log->n_segs; i++) {
        log->segs[i]->dirty = true;
        rv = plog_sync_seg(log, log->segs[i], log->segs[i] == act, ed);
    }
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
    }
    if (rv == 0) {
        log->durable_offset = act->next_offset;
        log->unflushed_messages = 0;
    }
    return rv;
}

/* Move fresh's contents into log (keeping its hook) and free the old
 * segments: every struct seg and file of the old instance goes. */
static void plog_adopt(struct plog *log, struct plog *fresh)
{
    struct plog old = *log;
    uint32_t i;

    *log = *fresh;
    log->offline_fn = old.offline_fn;
    log->offline_arg = old.offline_arg;
    mem_free(fresh);
    for (i = 0; i < old.n_segs; i++) {
        seg_free(old.segs[i]);
    }
    mem_free(old.segs);
    mem_free(old.clean_marks);
    mem_free(old.dir);
}

int plog_recover(struct plog *log,
                 int64_t wall_ms,
                 int64_t *end_before,
                 int64_t *end_after,
                 struct err_detail *ed)
{
    struct plog *fresh = NULL;
    int64_t durable = log->durable_offset;
    int rv = 0;

    *end_before = plog_end_offset(log);
    *end_after = *end_before;
    if (!log->offline) {
        return 0;
    }
    if (log->offline_cause == PLOG_OFFLINE_CORRUPT && log->corrupt_base >= 0) {
        rv = plog_cut_corrupt(log, ed);
    }
    if (rv == 0) {
        rv = plog_open(log->ops, log->dir, &log->cfg, wall_ms, &fresh, ed);
    }
    /* after a failed fsync, bytes past the durable offset may be in the
     * page cache only (or not even there): never trust them */
    if (rv == 0 && log->offline_sync && plog_end_offset(fresh) > durable) {
        rv = plog_truncate_to(fresh,
                              durable > plog_start_offset(fresh)
                                  ? durable
                                  : plog_start_offset(fresh),
                              ed);
    }
    if (rv == 0) {
        rv = plog_sync_all(fresh, ed);
    }
    if (rv != 0) {
        plog_free(fresh);
        trace_warn("storage",
                   "event=log_recover_failed dir=%s error=%s reason=\"%s\"",
                   log->dir, weir_err_name(rv), ed != NULL ? ed->msg : "");
        return rv;
    }
    trace_info("storage",
               "event=log_online dir=%s cause=%s end_before=%lld "
               "end_offset=%lld start_offset=%lld was=\"%s\"",
               log->dir, plog_cause_name(log->offline_cause),
               (long long)*end_before, (long long)plog_end_offset(fresh),
               (long long)plog_start_offset(fresh), log->offline_why);
    plog_adopt(log, fresh);
    *end_after = plog_end_offset(log);
    return 0;
}
