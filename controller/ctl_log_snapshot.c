/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots of the metadata log: the file's body (chain values, then the
 * image) read and written, a snapshot taken of the applied image (the
 * entries after it are kept), one installed from a Raft leader, and the
 * bytes of the current one read to send. Every file is replaced
 * atomically (common/datadir.h); the order of the two files is the one
 * ctl_log.h gives, so a crash between them is harmless. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/datadir.h"
#include "common/mem.h"
#include "controller/ctl_log_int.h"
#include "controller/ctl_log_raft.h"
#include "controller/meta/meta_chain.h"
#include "controller/meta/meta_snapshot.h"

/* The body into *img and chain: chain values, then the image (or, written
 * before chains, the image alone: its end value is made from its
 * bytes). */
static int ctl_log_snap_body(struct ctl_chain *chain,
                             const uint8_t *p,
                             size_t len,
                             struct meta_image **img,
                             struct err_detail *ed)
{
    int64_t chain_end = -1;
    size_t used = 0;
    int rv = 0;

    *img = NULL;
    if (len >= 4 && wire_get_u32be(p) == CTL_CHAIN_MAGIC) {
        rv = ctl_chain_decode(chain, p, len, &used, &chain_end, ed);
    }
    if (rv == 0) {
        rv = meta_snapshot_decode(p + used, len - used, img, ed);
    }
    if (rv == 0 && used == 0 &&
        ctl_chain_reset(chain, meta_image_end_offset(*img),
                        meta_chain_of_legacy_snapshot(p, len)) != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "loading the snapshot");
    }
    if (rv == 0 && used > 0 && chain_end != meta_image_end_offset(*img)) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "its chain values end at offset %lld, its image at "
                     "%lld",
                     (long long)chain_end,
                     (long long)meta_image_end_offset(*img));
    }
    if (rv != 0) {
        meta_image_free(*img);
        *img = NULL;
    }
    return rv;
}

int ctl_log_load_snapshot(struct ctl_log *l,
                          const uint8_t *p,
                          size_t len,
                          struct meta_image **img,
                          struct err_detail *ed)
{
    int rv = ctl_log_snap_body(&l->chain, p, len, img, ed);

    if (rv != 0) {
        err_wrap(ed, "%s", l->snap_path);
    }
    return rv;
}

/* Point l->fd at a metadata.log that was just replaced. */
static int ctl_log_reopen(struct ctl_log *l, struct err_detail *ed)
{
    int fd = open(l->log_path, O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        return err_sys(ed, WEIR_EIO, errno, "open", "%s", l->log_path);
    }
    (void)close(l->fd);
    l->fd = fd;
    return 0;
}

/* Replace metadata.log with the entries from ents[k] on (version-1
 * frames), and forget those before it. */
static int ctl_log_rewrite(struct ctl_log *l, uint32_t k, struct err_detail *ed)
{
    struct weir_buf b;
    size_t drop;
    uint32_t i;
    int rv = 0;

    buf_init(&b);
    for (i = k; i < l->n_ents && rv == 0; i++) {
        struct raft_entry e;
        e.index = l->ents[i].index;
        e.term = l->ents[i].term;
        e.type = (enum raft_entry_type)l->ents[i].type;
        e.data = l->ent_data.data + l->ents[i].data_at;
        e.len = l->ents[i].len;
        l->ents[i].file_at = b.len; /* only used once the file is there */
        rv = ctl_log_frame_put_entry(&b, &e, ed);
    }
    if (rv == 0) {
        rv = datadir_write(l->dir, CTL_LOG_FILE, b.data, b.len, ed);
    }
    if (rv == 0) {
        rv = ctl_log_reopen(l, ed);
    }
    if (rv != 0) {
        buf_fini(&b);
        return rv;
    }
    l->file_bytes = b.len;
    buf_fini(&b);
    drop = k < l->n_ents ? l->ents[k].data_at : l->ent_data.len;
    if (drop > 0 && drop < l->ent_data.len) {
        memmove(l->ent_data.data, l->ent_data.data + drop,
                l->ent_data.len - drop);
    }
    l->ent_data.len -= drop;
    for (i = k; i < l->n_ents; i++) {
        l->ents[i].data_at -= drop;
    }
    if (k > 0 && k < l->n_ents) {
        memmove(l->ents, l->ents + k, (l->n_ents - k) * sizeof(*l->ents));
    }
    l->n_ents -= k;
    return 0;
}

int ctl_log_snapshot_as(struct ctl_log *l,
                        const struct meta_image *img,
                        uint64_t index,
                        uint64_t term,
                        struct err_detail *ed)
{
    struct ctl_log_snap_head h;
    struct weir_buf b;
    int rv;

    if (meta_image_end_offset(img) != l->end) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "image at %lld, log at %lld",
                       (long long)meta_image_end_offset(img),
                       (long long)l->end);
    }
    h.index = index;
    h.term = term;
    memcpy(h.admitted, l->admitted, sizeof(h.admitted));
    buf_init(&b);
    if (l->raft) {
        /* a single controller writes the file as it did before Raft (its
         * indexes restart at each snapshot: they only matter to a quorum,
         * which starts from a sealed snapshot of term 1) */
        ctl_log_snap_head_put(&b, &h);
    }
    /* the chain values next: a restart goes on checking brokers' history
     * points from a tail of offsets before the snapshot */
    rv = ctl_chain_encode(&l->chain, l->end, &b);
    if (rv != 0) {
        rv = err_set(ed, rv, "encoding the chain values up to offset %lld",
                     (long long)l->end);
    }
    if (rv == 0) {
        rv = meta_snapshot_encode(img, &b, ed);
    }
    if (rv == 0) {
        rv = datadir_write(l->dir, CTL_SNAPSHOT_FILE, b.data, b.len, ed);
    }
    buf_fini(&b);
    if (rv == 0) {
        /* the snapshot is durable: the entries it holds may go */
        uint64_t k = index - l->snap_index;
        rv = ctl_log_rewrite(l, k < l->n_ents ? (uint32_t)k : l->n_ents, ed);
    }
    if (rv != 0) {
        return rv;
    }
    l->snap_index = l->applied = h.index;
    l->snap_term = h.term;
    ctl_log_forget(l, l->end);
    ctl_chain_trim(&l->chain);
    return 0;
}

int ctl_log_snapshot(struct ctl_log *l,
                     const struct meta_image *img,
                     struct err_detail *ed)
{
    uint64_t term = l->snap_term;

    if (l->applied > l->snap_index) {
        term = l->ents[l->applied - l->snap_index - 1].term;
    }
    return ctl_log_snapshot_as(l, img, l->applied, term, ed);
}

int ctl_log_raft_install(struct ctl_log *l,
                         const struct raft_snapshot *snap,
                         struct meta_image **img,
                         struct err_detail *ed)
{
    struct ctl_log_snap_head h;
    struct ctl_chain chain;
    struct weir_buf b;
    int rv;

    *img = NULL;
    if (!l->raft || snap->index <= l->applied || snap->index >= RAFT_LIMIT ||
        snap->term == 0 || snap->term >= RAFT_LIMIT ||
        (snap->len > 0 && snap->data == NULL)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "snapshot at index %llu term %llu (applied %llu)",
                       (unsigned long long)snap->index,
                       (unsigned long long)snap->term,
                       (unsigned long long)l->applied);
    }
    ctl_chain_init(&chain);
    rv = ctl_log_snap_body(&chain, snap->data, (size_t)snap->len, img, ed);
    if (rv != 0) {
        ctl_chain_fini(&chain);
        err_wrap(ed, "the snapshot received at index %llu",
                 (unsigned long long)snap->index);
        return rv;
    }
    h.index = snap->index;
    h.term = snap->term;
    memcpy(h.admitted, snap->admitted, sizeof(h.admitted));
    buf_init(&b);
    ctl_log_snap_head_put(&b, &h);
    buf_put(&b, snap->data, (size_t)snap->len);
    rv = buf_ok(&b)
             ? datadir_write(l->dir, CTL_SNAPSHOT_FILE, b.data, b.len, ed)
             : err_set(ed, WEIR_ENOMEM, "installing a snapshot");
    buf_fini(&b);
    if (rv == 0) {
        /* the log it replaces goes after it: a crash between the two is
         * undone by the load (entries at or before the snapshot skipped,
         * those after a term mismatch at its index dropped) */
        rv = datadir_write(l->dir, CTL_LOG_FILE, NULL, 0, ed);
    }
    if (rv == 0) {
        rv = ctl_log_reopen(l, ed);
    }
    if (rv != 0) {
        ctl_chain_fini(&chain);
        meta_image_free(*img);
        *img = NULL;
        return rv;
    }
    ctl_chain_fini(&l->chain);
    l->chain = chain;
    l->file_bytes = 0;
    ctl_log_ent_cut(l, 0);
    l->snap_index = l->applied = h.index;
    l->snap_term = h.term;
    memcpy(l->admitted, h.admitted, sizeof(l->admitted));
    ctl_log_forget(l, meta_image_end_offset(*img));
    l->next_off = l->end;
    return 0;
}

int ctl_log_raft_snapshot_read(const struct ctl_log *l,
                               struct weir_buf *out,
                               struct raft_snapshot *snap,
                               struct err_detail *ed)
{
    struct ctl_log_snap_head h;
    uint8_t *p = NULL;
    size_t len = 0;
    size_t used = 0;
    int rv;

    memset(snap, 0, sizeof(*snap));
    memset(&h, 0, sizeof(h));
    rv = ctl_log_slurp(l->snap_path, true, &p, &len, ed);
    if (rv == 0 && p != NULL) {
        rv = ctl_log_snap_head_decode(p, len, &h, &used, ed);
    }
    if (rv == 0 && h.index != l->snap_index) {
        rv = err_set(ed, WEIR_ECORRUPT, "at index %llu, expected %llu",
                     (unsigned long long)h.index,
                     (unsigned long long)l->snap_index);
    }
    if (rv != 0) {
        mem_free(p);
        err_wrap(ed, "%s", l->snap_path);
        return rv;
    }
    buf_reset(out);
    if (len > used) {
        buf_put(out, p + used, len - used);
    }
    mem_free(p);
    if (!buf_ok(out)) {
        return err_set(ed, WEIR_ENOMEM, "reading %s", l->snap_path);
    }
    snap->index = h.index;
    snap->term = h.term;
    memcpy(snap->admitted, h.admitted, sizeof(snap->admitted));
    snap->data = out->data;
    snap->len = out->len;
    return 0;
}
