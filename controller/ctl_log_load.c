/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the metadata log: the snapshot, then every frame of
 * metadata.log after it, with the torn-tail cut and the refusal of damage
 * in the middle. Why each rule holds is said where it is applied; the
 * format is in ctl_log.h and ctl_log_frame.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/datadir.h"
#include "common/mem.h"
#include "controller/ctl_log_int.h"
#include "controller/ctl_log_raft.h"
#include "controller/meta/meta_chain.h"

/* What replay has seen so far of the entries at or before the snapshot. */
struct ctl_log_replay {
    size_t at;          /* byte of the frame being replayed */
    bool seen_snap;     /* an entry at the snapshot's index was read */
    uint64_t snap_term; /* its term */
    bool stale;         /* entries after a mismatch at the snapshot index */
};

/* Could a whole frame start at byte pos? Its length fits the file, its
 * first offset (version 0) or index (version 1) is at most `next` + the
 * bytes from pos to the end (the damaged bytes before it hold fewer
 * records or entries than bytes), and its CRC holds. Cheap tests first:
 * most positions fail on the length or the offset. */
static bool ctl_log_frame_at(const uint8_t *p,
                             size_t len,
                             size_t pos,
                             int64_t next_off,
                             uint64_t next_index)
{
    size_t left = len - pos;
    const uint8_t *body = p + pos + CTL_LOG_FRAME_HEAD;
    uint32_t blen;
    uint64_t first;

    if (left < CTL_LOG_FRAME_HEAD + CTL_LOG_BODY_HEAD) {
        return false;
    }
    blen = wire_get_u32be(p + pos);
    if (blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BODY ||
        blen > left - CTL_LOG_FRAME_HEAD) {
        return false;
    }
    if (body[0] == CTL_LOG_V1) {
        if (blen < CTL_LOG_V1_HEAD ||
            wire_get_u64be(body + 2) > next_index + left) {
            return false;
        }
    } else {
        first = wire_get_u64be(body);
        if (next_off < 0 || first > (uint64_t)next_off + left) {
            return false;
        }
    }
    return crc32c(body, blen) == wire_get_u32be(p + pos + 4);
}

/* The frame at `at` is bad (short, a length out of range, or a CRC that
 * fails). Only what a crash during the last append can leave is a torn
 * tail, to be cut: a frame that runs past the end of the file, a last
 * frame that ends exactly at it, or nothing but zeros from here on (the
 * file grew before the data reached the disk). A bad frame with more
 * bytes after it is damage in the middle of the log, and cutting there
 * would silently drop every batch after it: refuse instead. A damaged
 * length field can make a frame in the middle look like one that runs
 * past the end, so before anything is called torn the bytes after `at`
 * are searched, byte by byte, for a whole frame (CRC-valid, a plausible
 * offset or index): a crash during the last append cannot leave one. */
static int ctl_log_torn_or_corrupt(const struct ctl_log *l,
                                   const uint8_t *p,
                                   size_t len,
                                   size_t at,
                                   struct err_detail *ed)
{
    size_t left = len - at;
    uint32_t blen = wire_get_u32be(p + at);
    bool impossible = blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BODY;
    const char *what = impossible ? "has an impossible length"
                       : blen > left - CTL_LOG_FRAME_HEAD
                           ? "runs past the end of the file"
                           : "fails its CRC";
    size_t i;

    for (i = at + 1; i < len; i++) {
        if (ctl_log_frame_at(p, len, i, l->next_off,
                             ctl_log_last_index(l) + 1)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "%s: the batch at byte %zu %s, but a whole batch "
                           "follows at byte %zu (%zu bytes after it): damage "
                           "in the middle of the metadata log, not a torn "
                           "last write; refusing to start (restore the "
                           "controller's data dir from a copy)",
                           l->log_path, at, what, i, len - i);
        }
    }
    if (!impossible && blen >= left - CTL_LOG_FRAME_HEAD) {
        return 0;
    }
    for (i = at; i < len && p[i] == 0; i++) {
    }
    if (i == len) {
        return 0;
    }
    return err_set(ed, WEIR_ECORRUPT,
                   "%s: the batch at byte %zu %s, and %zu bytes follow it: "
                   "damage in the middle of the metadata log, not a torn "
                   "last write; refusing to start (restore the controller's "
                   "data dir from a copy)",
                   l->log_path, at, what,
                   impossible ? left - CTL_LOG_FRAME_HEAD
                              : left - CTL_LOG_FRAME_HEAD - blen);
}

/* A version-1 frame: entries at or before the snapshot are skipped (a
 * crash between a snapshot and the log's rewrite leaves them); the first
 * after it must follow the snapshot (when the log also holds the entry at
 * the snapshot's index, with the snapshot's term: else the entries after
 * it belong to a history the installed snapshot replaced, and are
 * stale). */
static int ctl_log_replay_v1(struct ctl_log *l,
                             const struct ctl_log_frame *f,
                             struct ctl_log_replay *rs,
                             bool *hold,
                             struct err_detail *ed)
{
    *hold = false;
    if (f->index <= l->snap_index) {
        if (f->index == l->snap_index) {
            rs->seen_snap = true;
            rs->snap_term = f->term;
        }
        return 0;
    }
    if (l->n_ents == 0 && rs->seen_snap && rs->snap_term != l->snap_term) {
        rs->stale = true;
        return 0;
    }
    if (f->index != ctl_log_last_index(l) + 1 ||
        f->term < ctl_log_last_term(l)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "entry %llu of term %llu after entry %llu of term %llu",
                       (unsigned long long)f->index,
                       (unsigned long long)f->term,
                       (unsigned long long)ctl_log_last_index(l),
                       (unsigned long long)ctl_log_last_term(l));
    }
    if (!l->raft && f->term > 0) {
        return err_set(ed, WEIR_ECONFIG,
                       "entry %llu of term %llu: this is the log of a member "
                       "of a controller quorum; start it with --voters",
                       (unsigned long long)f->index,
                       (unsigned long long)f->term);
    }
    if (f->type == RAFT_ENTRY_NORMAL) {
        l->next_off = f->first + f->count;
    }
    *hold = true;
    return 0;
}

/* A version-0 frame: a batch the snapshot already holds is skipped; else
 * it is the next entry, of term 0, and its records follow the last. */
static int ctl_log_replay_v0(struct ctl_log *l,
                             struct ctl_log_frame *f,
                             bool *hold,
                             struct err_detail *ed)
{
    *hold = false;
    if (l->n_ents == 0 && f->first + f->count <= l->next_off) {
        return 0; /* the snapshot already holds it */
    }
    if (f->first != l->next_off || ctl_log_last_term(l) != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "batch at offset %lld, expected %lld, after term %llu",
                       (long long)f->first, (long long)l->next_off,
                       (unsigned long long)ctl_log_last_term(l));
    }
    f->index = ctl_log_last_index(l) + 1;
    l->next_off = f->first + f->count;
    *hold = true;
    return 0;
}

/* One CRC-valid frame: hold it as an entry and, for a single controller,
 * apply it. */
static int ctl_log_replay_frame(struct ctl_log *l,
                                struct ctl_log_frame *f,
                                struct ctl_log_replay *rs,
                                struct meta_image *img,
                                struct err_detail *ed)
{
    struct raft_entry e;
    bool hold = false;
    int rv;

    rv = f->version == 0 ? ctl_log_replay_v0(l, f, &hold, ed)
                         : ctl_log_replay_v1(l, f, rs, &hold, ed);
    if (rv != 0 || !hold) {
        return rv;
    }
    e.index = f->index;
    e.term = f->term;
    e.type = f->type;
    e.data = f->data.p;
    e.len = (uint32_t)f->data.len;
    if (ctl_log_ent_push(l, &e, rs->at) != 0) {
        return err_set(ed, WEIR_ENOMEM, "holding the metadata log");
    }
    if (l->raft) {
        return 0;
    }
    rv = ctl_log_apply_ent(l, l->n_ents - 1, img, ed);
    if (rv == 0) {
        l->applied = e.index;
    }
    return rv;
}

/* Replay metadata.log bytes; *good is where the last whole frame ends
 * (or where stale entries begin). */
static int ctl_log_replay(struct ctl_log *l,
                          const uint8_t *p,
                          size_t len,
                          struct meta_image *img,
                          uint64_t *good,
                          uint32_t *batches,
                          struct err_detail *ed)
{
    struct ctl_log_replay rs;
    struct ctl_log_frame f;
    int rv;

    memset(&rs, 0, sizeof(rs));
    *good = 0;
    while (rs.at < len) {
        switch (ctl_log_frame_decode(p + rs.at, len - rs.at, &f, ed)) {
        case CTL_LOG_FRAME_OK:
            break;
        case CTL_LOG_FRAME_BAD_BODY:
            err_wrap(ed, "%s at byte %zu", l->log_path, rs.at);
            return WEIR_ECORRUPT;
        default:
            if (len - rs.at < CTL_LOG_FRAME_HEAD) {
                return 0; /* a torn frame head: too short for one after */
            }
            return ctl_log_torn_or_corrupt(l, p, len, rs.at, ed);
        }
        rv = ctl_log_replay_frame(l, &f, &rs, img, ed);
        if (rv != 0) {
            err_wrap(ed, "%s at byte %zu", l->log_path, rs.at);
            return rv;
        }
        if (rs.stale) {
            return 0;
        }
        rs.at += f.frame_bytes;
        *good = rs.at;
        (*batches)++;
    }
    return 0;
}

/* Keep the bytes a cut removes: metadata.log.cut-<byte> (a free name:
 * .1, .2, ... after it if taken), written and fsynced before the cut, so
 * no cut ever destroys what might have been an acknowledged batch. */
static int ctl_log_save_cut(struct ctl_log *l,
                            const uint8_t *p,
                            size_t len,
                            uint64_t at,
                            struct ctl_log_stats *st,
                            struct err_detail *ed)
{
    struct stat sb;
    char path[4096];
    int i;

    for (i = 0; i < 1000; i++) {
        if (i == 0) {
            (void)snprintf(st->cut_file, sizeof(st->cut_file), "%s.cut-%llu",
                           CTL_LOG_FILE, (unsigned long long)at);
        } else {
            (void)snprintf(st->cut_file, sizeof(st->cut_file), "%s.cut-%llu.%d",
                           CTL_LOG_FILE, (unsigned long long)at, i);
        }
        (void)snprintf(path, sizeof(path), "%s/%s", l->dir, st->cut_file);
        if (stat(path, &sb) != 0 && errno == ENOENT) {
            return datadir_write(l->dir, st->cut_file, p + at, len - at, ed);
        }
    }
    return err_set(ed, WEIR_EIO,
                   "%s: no free name to save the %zu bytes cut at byte %llu",
                   l->log_path, (size_t)(len - at), (unsigned long long)at);
}

/* The snapshot file (or, missing, an empty image) into *img. */
static int ctl_log_load_snapfile(struct ctl_log *l,
                                 struct meta_image **img,
                                 struct err_detail *ed)
{
    struct ctl_log_snap_head h;
    uint8_t *p = NULL;
    size_t len = 0;
    size_t used = 0;
    int rv;

    memset(&h, 0, sizeof(h));
    rv = ctl_log_slurp(l->snap_path, true, &p, &len, ed);
    if (rv == 0 && p != NULL) {
        rv = ctl_log_snap_head_decode(p, len, &h, &used, ed);
        if (rv != 0) {
            err_wrap(ed, "%s", l->snap_path);
        }
    }
    if (rv == 0 && p != NULL) {
        rv = ctl_log_load_snapshot(l, p + used, len - used, img, ed);
    } else if (rv == 0 &&
               (meta_image_new(img) != 0 ||
                ctl_chain_reset(&l->chain, 0, META_CHAIN_ZERO) != 0)) {
        rv = err_set(ed, WEIR_ENOMEM, "new image");
    }
    mem_free(p);
    if (rv == 0 && !l->raft && h.term > 0) {
        rv = err_set(ed, WEIR_ECONFIG,
                     "%s is at term %llu: this is the snapshot of a member of "
                     "a controller quorum; start it with --voters",
                     l->snap_path, (unsigned long long)h.term);
    }
    if (rv != 0) {
        meta_image_free(*img);
        *img = NULL;
        return rv;
    }
    l->snap_index = l->applied = h.index;
    l->snap_term = h.term;
    memcpy(l->admitted, h.admitted, sizeof(l->admitted));
    return 0;
}

/* Snapshot (if any) then log into a new image; cuts a torn tail. */
static int ctl_log_load(struct ctl_log *l,
                        struct meta_image **img_out,
                        struct ctl_log_stats *st,
                        struct err_detail *ed)
{
    struct meta_image *img = NULL;
    uint8_t *p = NULL;
    size_t len = 0;
    uint64_t good = 0;
    int rv;

    memset(st, 0, sizeof(*st));
    *img_out = NULL;
    ctl_log_ent_cut(l, 0);
    rv = ctl_log_load_snapfile(l, &img, ed);
    if (rv != 0) {
        return rv;
    }
    st->snapshot_end = meta_image_end_offset(img);
    ctl_log_forget(l, st->snapshot_end);
    l->next_off = st->snapshot_end;
    rv = ctl_log_slurp(l->log_path, true, &p, &len, ed);
    if (rv == 0) {
        rv = ctl_log_replay(l, p, len, img, &good, &st->batches, ed);
    }
    if (rv == 0 && good < len) {
        /* cut before anything is appended after the garbage, and only
         * once the bytes are kept */
        st->cut_bytes = len - good;
        st->cut_at_byte = good;
        rv = ctl_log_save_cut(l, p, len, good, st, ed);
        if (rv == 0 &&
            (ftruncate(l->fd, (off_t)good) != 0 || fsync(l->fd) != 0)) {
            rv = err_sys(ed, WEIR_EIO, errno, "ftruncate", "%s", l->log_path);
        }
    }
    mem_free(p);
    if (rv != 0) {
        meta_image_free(img);
        ctl_log_forget(l, 0);
        ctl_log_ent_cut(l, 0);
        return rv;
    }
    l->file_bytes = good;
    *img_out = img;
    return 0;
}

int ctl_log_open_mode(const char *dir,
                      bool raft,
                      const uint32_t *voters,
                      uint32_t n_voters,
                      struct ctl_log **out,
                      struct meta_image **img,
                      struct ctl_log_stats *stats,
                      struct err_detail *ed)
{
    struct ctl_log *l;
    int rv;

    *out = NULL;
    *img = NULL;
    if (n_voters > RAFT_MAX_VOTERS) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "%u voters", n_voters);
    }
    rv = datadir_mkdirs(dir, ed);
    if (rv != 0) {
        return rv;
    }
    l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        return err_set(ed, WEIR_ENOMEM, "opening the metadata log");
    }
    l->fd = -1;
    l->raft = raft;
    l->n_voters = n_voters;
    if (n_voters > 0) {
        memcpy(l->voters, voters, n_voters * sizeof(*voters));
    }
    buf_init(&l->mem);
    buf_init(&l->ent_data);
    ctl_chain_init(&l->chain);
    l->dir = mem_strdup(dir);
    l->log_path = ctl_log_path(dir, CTL_LOG_FILE);
    l->snap_path = ctl_log_path(dir, CTL_SNAPSHOT_FILE);
    if (l->dir == NULL || l->log_path == NULL || l->snap_path == NULL) {
        ctl_log_close(l);
        return err_set(ed, WEIR_ENOMEM, "opening the metadata log");
    }
    l->fd = open(l->log_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "open", "%s", l->log_path);
        ctl_log_close(l);
        return rv;
    }
    rv = ctl_log_load(l, img, stats, ed);
    if (rv != 0) {
        ctl_log_close(l);
        return rv;
    }
    *out = l;
    return 0;
}

int ctl_log_reload(struct ctl_log *l,
                   struct meta_image **img,
                   struct err_detail *ed)
{
    struct ctl_log_stats st;

    return ctl_log_load(l, img, &st, ed);
}

int ctl_log_raft_open(const char *dir,
                      const uint32_t *voters,
                      uint32_t n_voters,
                      struct ctl_log **out,
                      struct meta_image **img,
                      struct ctl_log_stats *stats,
                      struct err_detail *ed)
{
    return ctl_log_open_mode(dir, true, voters, n_voters, out, img, stats, ed);
}
