/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata log as a Raft log (ctl_log_raft.h): entries appended with
 * one fsync per call, cut on a conflict, read back, and applied once
 * committed. Opening is in ctl_log_load.c, snapshots (taken, installed,
 * read) in ctl_log_snapshot.c. */
#include "controller/ctl_log_raft.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/mem.h"
#include "common/trace.h"
#include "controller/ctl_hardstate.h"
#include "controller/ctl_log_int.h"

/* Hold the entries encoded in b (n version-1 frames) in memory. */
static int ctl_log_raft_hold(struct ctl_log *l,
                             const struct weir_buf *b,
                             uint32_t n,
                             struct err_detail *ed)
{
    struct ctl_log_frame f;
    size_t at = 0;
    uint32_t i;

    for (i = 0; i < n; i++) {
        struct raft_entry e;
        if (ctl_log_frame_decode(b->data + at, b->len - at, &f, ed) !=
            CTL_LOG_FRAME_OK) {
            return err_set(ed, WEIR_EINVALID_ARGUMENT,
                           "entry %u does not decode", i);
        }
        e.index = f.index;
        e.term = f.term;
        e.type = f.type;
        e.data = f.data.p;
        e.len = (uint32_t)f.data.len;
        if (f.type == RAFT_ENTRY_NORMAL) {
            l->next_off = f.first + f.count;
        }
        if (ctl_log_ent_push(l, &e, l->file_bytes + at) != 0) {
            return err_set(ed, WEIR_ENOMEM, "holding the metadata log");
        }
        at += f.frame_bytes;
    }
    return 0;
}

int ctl_log_raft_append(struct ctl_log *l,
                        const struct raft_entry *ents,
                        uint32_t n,
                        struct err_detail *ed)
{
    uint32_t n_ents = l->n_ents;
    int64_t next_off = l->next_off;
    struct weir_buf b;
    uint32_t i;
    int rv = 0;

    if (n == 0) {
        return 0;
    }
    buf_init(&b);
    for (i = 0; i < n && rv == 0; i++) {
        uint64_t want = ctl_log_last_index(l) + 1 + i;
        uint64_t min_term = i == 0 ? ctl_log_last_term(l) : ents[i - 1].term;
        if (ents[i].index != want || ents[i].term < min_term) {
            rv =
                err_set(ed, WEIR_EINVALID_ARGUMENT,
                        "entry %llu of term %llu: expected index %llu, "
                        "term >= %llu",
                        (unsigned long long)ents[i].index,
                        (unsigned long long)ents[i].term,
                        (unsigned long long)want, (unsigned long long)min_term);
        }
        if (rv == 0) {
            rv = ctl_log_frame_put_entry(&b, &ents[i], ed);
        }
    }
    if (rv == 0) {
        rv = ctl_log_write_all(l->fd, b.data, b.len, l->file_bytes, l->log_path,
                               ed);
    }
    if (rv == 0 && fdatasync(l->fd) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "fdatasync", "%s", l->log_path);
    }
    if (rv == 0) {
        rv = ctl_log_raft_hold(l, &b, n, ed);
    }
    if (rv != 0) {
        /* entries not acknowledged must not be replayed later */
        ctl_log_ent_cut(l, n_ents);
        l->next_off = next_off;
        if (ftruncate(l->fd, (off_t)l->file_bytes) != 0) {
            trace_error("controller", "event=log_cut_failed path=%s errno=%d",
                        l->log_path, errno);
        }
        buf_fini(&b);
        return rv;
    }
    l->file_bytes += b.len;
    buf_fini(&b);
    return 0;
}

/* The offset after the last NORMAL entry before ents[k]. */
static int64_t ctl_log_raft_next_off_before(const struct ctl_log *l, uint32_t k)
{
    while (k > 0) {
        const struct ctl_log_ent *x = &l->ents[--k];
        if (x->type == RAFT_ENTRY_NORMAL) {
            const uint8_t *d = l->ent_data.data + x->data_at;
            return (int64_t)wire_get_u64be(d) + wire_get_u32be(d + 8);
        }
    }
    return l->start; /* the snapshot's end */
}

int ctl_log_raft_truncate(struct ctl_log *l,
                          uint64_t from,
                          struct err_detail *ed)
{
    uint32_t k;
    uint64_t at;

    if (from <= l->applied || from <= l->snap_index ||
        from > ctl_log_last_index(l) + 1) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "cut from %llu: applied %llu, last %llu",
                       (unsigned long long)from, (unsigned long long)l->applied,
                       (unsigned long long)ctl_log_last_index(l));
    }
    k = (uint32_t)(from - l->snap_index - 1);
    if (k == l->n_ents) {
        return 0;
    }
    at = l->ents[k].file_at;
    if (ftruncate(l->fd, (off_t)at) != 0 || fdatasync(l->fd) != 0) {
        return err_sys(ed, WEIR_EIO, errno, "ftruncate", "%s", l->log_path);
    }
    l->file_bytes = at;
    l->next_off = ctl_log_raft_next_off_before(l, k);
    ctl_log_ent_cut(l, k);
    return 0;
}

static void
ctl_log_raft_fill(const struct ctl_log *l, uint32_t k, struct raft_entry *e)
{
    const struct ctl_log_ent *x = &l->ents[k];

    e->index = x->index;
    e->term = x->term;
    e->type = (enum raft_entry_type)x->type;
    e->data = x->len > 0 ? l->ent_data.data + x->data_at : NULL;
    e->len = x->len;
}

int ctl_log_raft_entries(const struct ctl_log *l,
                         uint64_t from,
                         struct raft_entry *out,
                         uint32_t cap,
                         uint32_t *n)
{
    uint32_t k;

    *n = 0;
    if (from <= l->snap_index || from > ctl_log_last_index(l) + 1) {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (k = (uint32_t)(from - l->snap_index - 1); k < l->n_ents && *n < cap;
         k++) {
        ctl_log_raft_fill(l, k, &out[(*n)++]);
    }
    return 0;
}

int ctl_log_raft_apply(struct ctl_log *l,
                       uint64_t upto,
                       struct meta_image *img,
                       struct err_detail *ed)
{
    int rv;

    if (upto > ctl_log_last_index(l)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "apply up to %llu, last entry %llu",
                       (unsigned long long)upto,
                       (unsigned long long)ctl_log_last_index(l));
    }
    while (l->applied < upto) {
        uint32_t k = (uint32_t)(l->applied - l->snap_index);
        rv = ctl_log_apply_ent(l, k, img, ed);
        if (rv != 0) {
            err_wrap(ed, "applying entry %llu",
                     (unsigned long long)l->ents[k].index);
            return rv;
        }
        l->applied++;
    }
    return 0;
}

int ctl_log_raft_seal(struct ctl_log *l,
                      struct meta_image *img,
                      struct err_detail *ed)
{
    int rv;

    if (l->snap_term > 0 || ctl_log_last_term(l) > 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "the log is at term %llu: already a quorum's",
                       (unsigned long long)ctl_log_last_term(l));
    }
    rv = ctl_log_raft_apply(l, ctl_log_last_index(l), img, ed);
    if (rv == 0) {
        /* index 0 cannot carry a term: an empty history seals at 1 */
        uint64_t index = l->applied > 0 ? l->applied : 1;
        rv = ctl_log_snapshot_as(l, img, index, 1, ed);
    }
    return rv;
}

int ctl_log_raft_start(const struct ctl_log *l,
                       struct raft_start *start,
                       struct raft_entry **ents)
{
    uint32_t k;

    memset(start, 0, sizeof(*start));
    *ents = NULL;
    start->snapshot.index = l->snap_index;
    start->snapshot.term = l->snap_term;
    memcpy(start->snapshot.admitted, l->admitted,
           sizeof(start->snapshot.admitted));
    if (l->n_ents == 0) {
        return 0;
    }
    *ents = mem_malloc(l->n_ents * sizeof(**ents));
    if (*ents == NULL) {
        return WEIR_ENOMEM;
    }
    for (k = 0; k < l->n_ents; k++) {
        ctl_log_raft_fill(l, k, &(*ents)[k]);
    }
    start->n_entries = l->n_ents;
    start->entries = *ents;
    return 0;
}

int ctl_log_raft_save_hard_state(const struct ctl_log *l,
                                 const struct raft_hard_state *hs,
                                 struct err_detail *ed)
{
    return ctl_hardstate_save(l->dir, hs, ed);
}

uint64_t ctl_log_raft_last_index(const struct ctl_log *l)
{
    return ctl_log_last_index(l);
}

uint64_t ctl_log_raft_last_term(const struct ctl_log *l)
{
    return ctl_log_last_term(l);
}

uint64_t ctl_log_raft_applied(const struct ctl_log *l)
{
    return l->applied;
}

uint64_t ctl_log_raft_snapshot_index(const struct ctl_log *l)
{
    return l->snap_index;
}

uint64_t
ctl_log_raft_term_at(const struct ctl_log *l, uint64_t index, bool *found)
{
    *found = index >= l->snap_index && index <= ctl_log_last_index(l);
    if (!*found) {
        return 0;
    }
    if (index == l->snap_index) {
        return l->snap_term;
    }
    return l->ents[index - l->snap_index - 1].term;
}

const uint64_t *ctl_log_raft_admitted(const struct ctl_log *l)
{
    return l->admitted;
}
