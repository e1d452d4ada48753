/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-epoch cache: a short sorted array (one entry per leadership
 * change that wrote into this log), so lookups scan from the newest end,
 * where almost every question lands. */
#include "broker/replica/repl_epochs.h"

#include <string.h>

#include "common/mem.h"

void repl_epochs_init(struct repl_epochs *c)
{
    c->entries = NULL;
    c->n = 0;
    c->cap = 0;
}

void repl_epochs_fini(struct repl_epochs *c)
{
    mem_free(c->entries);
    repl_epochs_init(c);
}

int repl_epochs_reserve(struct repl_epochs *c, uint32_t want)
{
    struct repl_epoch_entry *e;
    uint32_t cap;

    if (want <= c->cap) {
        return 0;
    }
    cap = c->cap < 4 ? 4 : c->cap;
    while (cap < want) {
        if (cap > UINT32_MAX / 2) {
            return WEIR_ENOMEM;
        }
        cap *= 2;
    }
    e = mem_realloc(c->entries, (size_t)cap * sizeof(*e));
    if (e == NULL) {
        return WEIR_ENOMEM;
    }
    c->entries = e;
    c->cap = cap;
    return 0;
}

int repl_epochs_assign(struct repl_epochs *c,
                       int32_t epoch,
                       int64_t start_offset)
{
    const struct repl_epoch_entry *last;
    uint32_t keep;
    int rv;

    if (epoch < 0 || start_offset < 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (c->n > 0) {
        last = &c->entries[c->n - 1];
        /* An epoch starts once; a later batch of the same epoch, or a
         * batch of an older one, says nothing new. Callers that rewrite
         * history truncate first, so "stale" here means "already known". */
        if (epoch <= last->epoch) {
            return 0;
        }
    }
    /* Reserve before dropping anything, so ENOMEM leaves the cache as it
     * was. The new entry supersedes every entry starting at or after it:
     * those offsets are being rewritten in the newer epoch. */
    rv = repl_epochs_reserve(c, c->n + 1);
    if (rv != 0) {
        return rv;
    }
    keep = c->n;
    while (keep > 0 && c->entries[keep - 1].start_offset >= start_offset) {
        keep--;
    }
    c->n = keep;
    c->entries[c->n].epoch = epoch;
    c->entries[c->n].start_offset = start_offset;
    c->n++;
    return 0;
}

int32_t repl_epochs_latest_epoch(const struct repl_epochs *c)
{
    return c->n == 0 ? REPL_EPOCH_NONE : c->entries[c->n - 1].epoch;
}

uint32_t repl_epochs_count(const struct repl_epochs *c)
{
    return c->n;
}

const struct repl_epoch_entry *repl_epochs_entry(const struct repl_epochs *c,
                                                 uint32_t i)
{
    return i < c->n ? &c->entries[i] : NULL;
}

int64_t repl_epochs_start_offset(const struct repl_epochs *c, int32_t epoch)
{
    uint32_t i;

    for (i = c->n; i > 0; i--) {
        if (c->entries[i - 1].epoch == epoch) {
            return c->entries[i - 1].start_offset;
        }
    }
    return REPL_OFFSET_NONE;
}

struct repl_epoch_end repl_epochs_end_offset_for(const struct repl_epochs *c,
                                                 int32_t epoch,
                                                 int64_t log_end_offset)
{
    struct repl_epoch_end r = {REPL_EPOCH_NONE, REPL_OFFSET_NONE};
    uint32_t i;

    if (epoch < 0 || c->n == 0) {
        return r;
    }
    for (i = c->n; i > 0; i--) {
        if (c->entries[i - 1].epoch <= epoch) {
            r.epoch = c->entries[i - 1].epoch;
            r.end_offset =
                i == c->n ? log_end_offset : c->entries[i].start_offset;
            return r;
        }
    }
    /* Every epoch held is newer: nothing of `epoch` or older lies at or
     * beyond our first entry (Kafka answers the same way). */
    r.epoch = epoch;
    r.end_offset = c->entries[0].start_offset;
    return r;
}

uint32_t repl_epochs_truncate_from_end(struct repl_epochs *c,
                                       int64_t end_offset)
{
    uint32_t before = c->n;

    while (c->n > 0 && c->entries[c->n - 1].start_offset >= end_offset) {
        c->n--;
    }
    return before - c->n;
}

uint32_t repl_epochs_truncate_from_start(struct repl_epochs *c,
                                         int64_t start_offset)
{
    uint32_t covered = 0;
    uint32_t drop;

    /* entries [0, covered) start at or before the new log start */
    while (covered < c->n && c->entries[covered].start_offset <= start_offset) {
        covered++;
    }
    if (covered == 0) {
        return 0;
    }
    /* keep the last of them: its epoch still wrote the new first record */
    drop = covered - 1;
    if (drop > 0) {
        memmove(c->entries, c->entries + drop,
                (size_t)(c->n - drop) * sizeof(c->entries[0]));
        c->n -= drop;
    }
    c->entries[0].start_offset = start_offset;
    return drop;
}

void repl_epochs_clear(struct repl_epochs *c)
{
    c->n = 0;
}

int64_t repl_epochs_reconcile(struct repl_epochs *c,
                              int64_t log_start,
                              int64_t log_end,
                              int32_t last_batch_epoch)
{
    const struct repl_epoch_entry *held = NULL;
    uint32_t n = c->n;

    if (log_end <= log_start || last_batch_epoch < 0) {
        return REPL_OFFSET_NONE; /* no record to describe */
    }
    /* entries at or past the end have no record: an epoch led without
     * writing, or whose records a crash lost. They stay (a broker must
     * never lead such an epoch again); a follower drops them. */
    while (n > 0 && c->entries[n - 1].start_offset >= log_end) {
        n--;
    }
    held = n > 0 ? &c->entries[n - 1] : NULL;
    if (held != NULL && held->epoch == last_batch_epoch) {
        return REPL_OFFSET_NONE;
    }
    /* The cache misses the log's newest epochs (or describes another
     * log). Entries past the end cannot coexist with that through our own
     * writes (each checkpoint is written whole from a reconciled cache),
     * and would hide the newer epochs from repl_epochs_assign: drop them. */
    (void)repl_epochs_truncate_from_end(c, log_end);
    if (held != NULL && held->epoch > last_batch_epoch) {
        /* claims an epoch the log does not end in: not this log's cache */
        repl_epochs_clear(c);
        held = NULL;
    }
    if (held == NULL || held->start_offset < log_start) {
        return log_start;
    }
    return held->start_offset;
}

int repl_epochs_copy(struct repl_epochs *dst, const struct repl_epochs *src)
{
    int rv;

    if (dst == src) {
        return 0;
    }
    rv = repl_epochs_reserve(dst, src->n);
    if (rv != 0) {
        return rv;
    }
    if (src->n > 0) {
        memcpy(dst->entries, src->entries,
               (size_t)src->n * sizeof(src->entries[0]));
    }
    dst->n = src->n;
    return 0;
}

int repl_epochs_check_invariants(const struct repl_epochs *c)
{
    uint32_t i;

    if (c->n > c->cap || (c->n > 0 && c->entries == NULL)) {
        return WEIR_ECORRUPT;
    }
    for (i = 0; i < c->n; i++) {
        if (c->entries[i].epoch < 0 || c->entries[i].start_offset < 0) {
            return WEIR_ECORRUPT;
        }
        if (i > 0 &&
            (c->entries[i].epoch <= c->entries[i - 1].epoch ||
             c->entries[i].start_offset <= c->entries[i - 1].start_offset)) {
            return WEIR_ECORRUPT;
        }
    }
    return 0;
}
