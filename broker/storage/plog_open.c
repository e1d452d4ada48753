/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a partition log: list the directory, open the segments, then
 * either trust a clean shutdown (load indexes, walk the active segment's
 * tail) or recover: scan every segment from the one holding the recovery
 * point, truncating only the active segment's tail. Anything that does not
 * add up in closed segments refuses the open instead of deleting data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/plog_int.h"
#include "broker/storage/recover.h"
#include "common/mem.h"
#include "common/trace.h"

struct plog_listing {
    int64_t *bases; /* .log files */
    uint32_t n;
    uint32_t cap;
    int64_t *orphans; /* index files whose .log is missing */
    int64_t *cleaned; /* <base>.log.cleaned: an unfinished compaction */
    uint32_t n_cleaned;
    uint32_t cap_cleaned;
    uint32_t n_orphans;
    uint32_t cap_orphans;
    int rv;
    struct err_detail *ed;
    const char *dir;
};

static int
plog_listing_add(int64_t **arr, uint32_t *n, uint32_t *cap, int64_t v)
{
    if (*n == *cap) {
        uint32_t ncap = *cap == 0 ? 8 : *cap * 2;
        int64_t *p = mem_realloc(*arr, ncap * sizeof(*p));
        if (p == NULL) {
            return WEIR_ENOMEM;
        }
        *arr = p;
        *cap = ncap;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

static int plog_list_entry(void *arg, const char *name)
{
    struct plog_listing *l = arg;
    size_t len = strlen(name);
    int64_t base;

    if (len >= 4 && strcmp(name + len - 4, ".log") == 0) {
        if (!seg_parse_name(name, ".log", &base)) {
            l->rv = err_set(l->ed, WEIR_ECORRUPT,
                            "%s/%s is not a segment name (20 digits + .log); "
                            "refusing to open the log",
                            l->dir, name);
            return 1;
        }
        l->rv = plog_listing_add(&l->bases, &l->n, &l->cap, base);
    } else if (len == 24 + strlen(PLOG_CLEANED_EXT) &&
               strcmp(name + 24, PLOG_CLEANED_EXT) == 0 &&
               strncmp(name + 20, ".log", 4) == 0) {
        char stem[25];
        memcpy(stem, name, 24);
        stem[24] = '\0';
        if (seg_parse_name(stem, ".log", &base)) {
            l->rv = plog_listing_add(&l->cleaned, &l->n_cleaned,
                                     &l->cap_cleaned, base);
        }
    } else if (seg_parse_name(name, ".index", &base) ||
               seg_parse_name(name, ".timeindex", &base)) {
        l->rv =
            plog_listing_add(&l->orphans, &l->n_orphans, &l->cap_orphans, base);
    }
    if (l->rv == WEIR_ENOMEM) {
        (void)err_set(l->ed, WEIR_ENOMEM, "listing %s: out of memory", l->dir);
    }
    return l->rv != 0;
}

static int plog_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Recovery point from its checkpoint; 0 (scan everything) when missing or
 * unreadable or refused by the decoder, which is always safe. */
static int64_t plog_read_recovery_point(struct plog *log)
{
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    char *text = NULL;
    size_t len;
    int64_t v;

    if (plog_path(log, PLOG_RECOVERY_CHECKPOINT, path, &ed) != 0 ||
        storage_read_small(log->ops, path, PLOG_CKPT_OFFSET_MAX_LEN * 4, &text,
                           &len, &ed) != 0) {
        return 0;
    }
    if (plog_ckpt_parse_offset(text, len, path, &v, &ed) != 0) {
        trace_warn("storage",
                   "event=checkpoint_unreadable file=%s reason=\"%s\" "
                   "action=full_recovery",
                   path, ed.msg);
        mem_free(text);
        return 0;
    }
    mem_free(text);
    log->checkpoint_offset = v;
    return v;
}

/* A segment before the recovery point: end from the next base (checked
 * by walking from the last index entry), max timestamp from the last time
 * index entry; a full index rebuild when either is in doubt. */
static int plog_load_closed(struct plog *log,
                            struct seg *s,
                            int64_t next,
                            struct err_detail *ed)
{
    struct err_detail led;

    s->next_offset = next;
    if (seg_load_max_timestamp(s, &led) == 0 &&
        recover_check_end(s, &led) == 0) {
        return 0;
    }
    trace_warn("storage",
               "event=segment_check_failed dir=%s base_offset=%lld "
               "reason=\"%s\" action=index_rebuild",
               log->dir, (long long)s->base_offset, led.msg);
    return recover_rebuild_index(s, log->cfg.index_interval_bytes, ed);
}

static int
plog_recover_from(struct plog *log, uint32_t first, struct err_detail *ed)
{
    uint64_t cut = 0;
    uint32_t i;
    int rv;

    for (i = first; i < log->n_segs; i++) {
        struct seg *s = log->segs[i];
        bool last = i == log->n_segs - 1;
        rv = recover_segment(s, last ? RECOVER_TRUNCATE : RECOVER_REFUSE,
                             log->cfg.index_interval_bytes, &cut, ed);
        if (rv != 0) {
            return rv;
        }
        if (!last && s->sparse &&
            s->next_offset <= log->segs[i + 1]->base_offset) {
            /* compaction removed records at the segment's end */
            s->next_offset = log->segs[i + 1]->base_offset;
        }
        if (!last && s->next_offset != log->segs[i + 1]->base_offset) {
            return err_set(ed, WEIR_ECORRUPT,
                           "segment %s/%020lld.log ends at offset %lld but "
                           "the next one starts at %lld; refusing to open",
                           log->dir, (long long)s->base_offset,
                           (long long)s->next_offset,
                           (long long)log->segs[i + 1]->base_offset);
        }
        rv = seg_rewrite_index(s, ed);
        if (rv == 0) {
            rv = plog_sync_seg(log, s, false, ed);
        }
        if (rv != 0) {
            return rv;
        }
    }
    trace_info("storage",
               "event=recovered dir=%s segments_scanned=%u bytes_cut=%llu "
               "end_offset=%lld",
               log->dir, log->n_segs - first, (unsigned long long)cut,
               (long long)plog_active(log)->next_offset);
    log->recovered = true;
    return 0;
}

static int plog_load_segments(struct plog *log,
                              const int64_t *bases,
                              uint32_t n,
                              bool clean,
                              struct err_detail *ed)
{
    uint32_t first = n - 1; /* first segment to scan */
    struct err_detail led;
    uint32_t i;
    int rv;

    for (i = 0; i < n; i++) {
        struct seg *s;
        rv = seg_open(log->ops, log->dir, bases[i], &s, ed);
        if (rv == 0) {
            rv = plog_push_seg(log, s, ed);
        }
        if (rv != 0) {
            return rv;
        }
    }
    if (!clean) {
        first = plog_seg_at(log, plog_read_recovery_point(log));
    }
    for (i = 0; i < first; i++) {
        rv = plog_load_closed(log, log->segs[i], bases[i + 1], ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (clean) {
        rv = recover_clean_tail(plog_active(log), log->cfg.index_interval_bytes,
                                &led);
        if (rv != WEIR_ECORRUPT) {
            return rv == 0 ? 0 : err_set(ed, rv, "%s", led.msg);
        }
        trace_warn("storage",
                   "event=clean_tail_mismatch dir=%s reason=\"%s\" "
                   "action=recovery",
                   log->dir, led.msg);
    }
    return plog_recover_from(log, first, ed);
}

/* The active segment's created time, for age rolls: the first batch's
 * max timestamp when it is plausible (as Kafka does), else now. */
static void plog_set_created(struct plog *log, int64_t wall_ms)
{
    struct seg *s = plog_active(log);
    struct batch_header h;
    struct err_detail ed;

    s->created_wall_ms = wall_ms;
    if (s->size > 0 && seg_read_header(s, 0, &h, &ed) == 0 &&
        h.max_timestamp >= 0 && h.max_timestamp < wall_ms) {
        s->created_wall_ms = h.max_timestamp;
    }
}

static void plog_remove_orphans(struct plog *log, const struct plog_listing *l)
{
    struct err_detail ed;
    char path[STORAGE_PATH_MAX];
    uint32_t i;
    int64_t b;

    for (i = 0; i < l->n_orphans; i++) {
        b = l->orphans[i];
        if (l->n > 0 &&
            bsearch(&b, l->bases, l->n, sizeof(b), plog_cmp_i64) != NULL) {
            continue;
        }
        /* derived files of a deleted segment: safe to remove */
        if (seg_path(log->dir, b, ".index", path, &ed) == 0) {
            (void)log->ops->unlink(log->ops->ctx, path, &ed);
        }
        if (seg_path(log->dir, b, ".timeindex", path, &ed) == 0) {
            (void)log->ops->unlink(log->ops->ctx, path, &ed);
        }
        trace_info("storage", "event=orphan_index_removed dir=%s base=%lld",
                   log->dir, (long long)b);
    }
}

/* A log compacted once may skip offsets even if its policy no longer
 * says compact: the cleaner checkpoint tells (written before any gap). */
static int plog_note_compacted(struct plog *log, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv = plog_path(log, PLOG_CLEANER_CHECKPOINT, path, ed);

    if (rv == 0 && log->ops->exists(log->ops->ctx, path) == 1) {
        log->compacted = true;
    }
    return rv;
}

/* A compaction that stopped before its rename: the .log is still the old
 * one, whole; the half-made or unrenamed copy goes. Before anything else
 * is opened, so a crash during the next one finds the same state. */
static int plog_discard_cleaned(struct plog *log,
                                const struct plog_listing *l,
                                struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    uint32_t i;
    int rv;

    for (i = 0; i < l->n_cleaned; i++) {
        rv = seg_path(log->dir, l->cleaned[i], ".log" PLOG_CLEANED_EXT, path,
                      ed);
        if (rv == 0) {
            rv = log->ops->unlink(log->ops->ctx, path, ed);
        }
        if (rv != 0 && rv != WEIR_ENOT_FOUND) {
            return rv;
        }
        trace_info("storage",
                   "event=compaction_discarded file=%s reason=\"unfinished "
                   "swap\"",
                   path);
    }
    return 0;
}

static int
plog_start_fresh(struct plog *log, int64_t wall_ms, struct err_detail *ed)
{
    struct seg *s;
    int64_t rp = plog_read_recovery_point(log);
    int rv;

    if (rp > 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "%s holds no segment but its recovery point is %lld: "
                       "data is missing; refusing to open",
                       log->dir, (long long)rp);
    }
    rv = seg_create(log->ops, log->dir, 0, wall_ms, &s, ed);
    if (rv == 0) {
        rv = plog_push_seg(log, s, ed);
    }
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
    }
    return rv;
}

static int plog_drop_marker(struct plog *log, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv;

    rv = plog_path(log, PLOG_CLEAN_MARKER, path, ed);
    if (rv == 0) {
        rv = log->ops->unlink(log->ops->ctx, path, ed);
    }
    /* durable removal: a marker resurrected by a crash would skip the
     * recovery of whatever is appended from now on */
    if (rv == 0) {
        rv = plog_sync_dir(log, ed);
    }
    return rv;
}

/* fsync the .log of every segment from the one holding the recovery
 * point (those recovery read; the ones before were synced before they
 * were closed), then the directory. A failure takes the log offline. */
static int plog_settle_sync(struct plog *log, struct err_detail *ed)
{
    int64_t rp = log->checkpoint_offset > 0 ? log->checkpoint_offset : 0;
    uint32_t i;
    int rv = 0;

    for (i = plog_seg_at(log, rp); rv == 0 && i < log->n_segs; i++) {
        rv = log->ops->fsync(log->ops->ctx, log->segs[i]->log, ed);
    }
    if (rv == 0) {
        rv = log->ops->fsync_dir(log->ops->ctx, log->dir, ed);
    }
    /* not sync: nothing here says where the durable end was, so no cut */
    return rv == 0 ? 0 : plog_failed(log, rv, false, ed);
}

/* What of the loaded log counts as durable. A clean stop fsynced all of
 * it. After an unclean one, recovery accepted what it read, which may
 * still be in the page cache only (a process killed with unflushed
 * appends): it is fsynced before it counts, since a follower reports its
 * durable end to its leader. After an fsync that failed before the stop
 * (PLOG_FSYNC_FAILED_CHECKPOINT), the log is first cut back to what the
 * last successful fsync covered, as plog_recover does in place: the page
 * cache may hold bytes the disk never got. A failing disk here leaves the
 * log offline (the open succeeds; log_health retries) with nothing past
 * its recovery point counted durable. */
static int plog_settle(struct plog *log, struct err_detail *ed)
{
    int64_t cut = plog_fsync_failed_offset(log);
    int64_t end = plog_end_offset(log);
    int64_t start = plog_start_offset(log);
    int rv = 0;

    if (!log->recovered && cut < 0) { /* a clean stop, or a new log */
        log->durable_offset = end;
        return 0;
    }
    log->durable_offset = log->checkpoint_offset < 0 ? start
                          : log->checkpoint_offset > end
                              ? end
                              : log->checkpoint_offset;
    if (cut >= 0 && cut < end) {
        rv = plog_truncate_to(log, cut > start ? cut : start, ed);
        trace_warn("storage",
                   "event=cut_to_durable dir=%s from=%lld to=%lld "
                   "reason=\"an fsync failed before the last stop: later "
                   "bytes may be in the page cache only\" ok=%d",
                   log->dir, (long long)end, (long long)plog_end_offset(log),
                   rv == 0 ? 1 : 0);
    }
    if (rv == 0) {
        rv = plog_settle_sync(log, ed);
    }
    if (rv == 0 && cut >= 0) {
        rv = plog_forget_fsync_failed(log, ed);
        rv = rv == 0 ? 0 : plog_failed(log, rv, false, ed);
    }
    if (rv != 0) {
        return log->offline ? 0 : rv; /* offline: log_health retries */
    }
    log->durable_offset = plog_active(log)->next_offset;
    log->unflushed_messages = 0;
    plog_maybe_checkpoint(log);
    return 0;
}

int plog_load(struct plog *log, int64_t wall_ms, struct err_detail *ed)
{
    struct plog_listing l;
    char marker[STORAGE_PATH_MAX];
    bool clean;
    int rv;

    memset(&l, 0, sizeof(l));
    l.ed = ed;
    l.dir = log->dir;
    /* created when missing, durably, before anything is written in it */
    rv = storage_mkdirs(log->ops, log->dir, ed);
    if (rv == 0) {
        rv = plog_path(log, PLOG_CLEAN_MARKER, marker, ed);
    }
    if (rv == 0) {
        rv = log->ops->list(log->ops->ctx, log->dir, plog_list_entry, &l, ed);
        rv = rv != 0 ? rv : l.rv;
    }
    if (rv != 0) {
        goto out;
    }
    if (l.n > 1) {
        qsort(l.bases, l.n, sizeof(*l.bases), plog_cmp_i64);
    }
    clean = log->ops->exists(log->ops->ctx, marker) == 1;
    rv = plog_note_compacted(log, ed);
    if (rv != 0) {
        goto out;
    }
    rv = plog_discard_cleaned(log, &l, ed);
    if (rv != 0) {
        goto out;
    }
    if (l.n == 0) {
        rv = plog_start_fresh(log, wall_ms, ed);
    } else {
        rv = plog_load_segments(log, l.bases, l.n, clean, ed);
    }
    if (rv == 0) {
        rv = seg_open_index_files(plog_active(log), ed);
    }
    if (rv == 0 && clean) {
        rv = plog_drop_marker(log, ed);
    }
    if (rv != 0) {
        goto out;
    }
    plog_set_created(log, wall_ms);
    plog_remove_orphans(log, &l);
    rv = plog_settle(log, ed);

out:
    mem_free(l.bases);
    mem_free(l.orphans);
    mem_free(l.cleaned);
    return rv;
}
