/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata log on disk: replay with torn-tail cut, batch append + fsync,
 * atomic snapshots with log rotation. Why the order of each step matters
 * is said where it happens; the format is in ctl_log.h. */
#include "controller/ctl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/datadir.h"
#include "common/mem.h"
#include "common/trace.h"
#include "controller/ctl_chain.h"
#include "controller/meta/meta_chain.h"
#include "controller/meta/meta_snapshot.h"

#define CTL_LOG_FRAME_HEAD 8  /* body length, CRC */
#define CTL_LOG_BODY_HEAD  12 /* first offset, count */

struct ctl_log {
    char *dir;
    char *log_path;
    char *snap_path;
    int fd;              /* metadata.log, O_RDWR */
    uint64_t file_bytes; /* end of the last whole batch */
    int64_t start;       /* first offset held (snapshot end) */
    int64_t end;         /* next offset */
    struct weir_buf mem; /* u32be length | record, for every held record */
    uint32_t *pos;       /* pos[i]: where record start + i begins in mem */
    uint32_t n_pos;
    uint32_t cap_pos;
    struct ctl_chain chain; /* values from a tail before the snapshot on */
};

static char *ctl_log_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = mem_malloc(n);

    if (p != NULL) {
        (void)snprintf(p, n, "%s/%s", dir, name);
    }
    return p;
}

/* Whole file into *out (caller frees). A missing file is empty (*out NULL,
 * *len 0) when missing_ok. */
static int ctl_log_slurp(const char *path,
                         bool missing_ok,
                         uint8_t **out,
                         size_t *len,
                         struct err_detail *ed)
{
    struct stat st;
    uint8_t *p = NULL;
    size_t got = 0;
    int fd;

    *out = NULL;
    *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && missing_ok) {
            return 0;
        }
        return err_sys(ed, WEIR_EIO, errno, "open", "%s", path);
    }
    if (fstat(fd, &st) != 0) {
        (void)close(fd);
        return err_sys(ed, WEIR_EIO, errno, "fstat", "%s", path);
    }
    p = mem_malloc((size_t)st.st_size + 1);
    if (p == NULL) {
        (void)close(fd);
        return err_set(ed, WEIR_ENOMEM, "reading %s", path);
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            mem_free(p);
            (void)close(fd);
            return err_sys(ed, WEIR_EIO, e, "read", "%s", path);
        }
        got += (size_t)r;
    }
    (void)close(fd);
    *out = p;
    *len = got;
    return 0;
}

static int ctl_log_write_all(int fd,
                             const uint8_t *p,
                             size_t n,
                             uint64_t at,
                             const char *path,
                             struct err_detail *ed)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return err_sys(ed, WEIR_EIO, w < 0 ? errno : EIO, "pwrite", "%s",
                           path);
        }
        p += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return 0;
}

/* Keep the bytes of one record (u32be length | record) in memory, and
 * its chain value. */
static int ctl_log_hold(struct ctl_log *l, const uint8_t *p, size_t n)
{
    if (n < 4 || ctl_chain_push(&l->chain, p + 4, n - 4) != 0) {
        return WEIR_ENOMEM;
    }
    if (l->n_pos == l->cap_pos) {
        uint32_t cap = l->cap_pos == 0 ? 64 : l->cap_pos * 2;
        uint32_t *np = mem_realloc(l->pos, cap * sizeof(*np));
        if (np == NULL) {
            ctl_chain_drop_last(&l->chain, 1);
            return WEIR_ENOMEM;
        }
        l->pos = np;
        l->cap_pos = cap;
    }
    if (l->mem.len > UINT32_MAX - n) {
        ctl_chain_drop_last(&l->chain, 1);
        return WEIR_ENOMEM; /* a snapshot is long overdue */
    }
    l->pos[l->n_pos] = (uint32_t)l->mem.len;
    buf_put(&l->mem, p, n);
    if (!buf_ok(&l->mem)) {
        ctl_chain_drop_last(&l->chain, 1);
        return WEIR_ENOMEM;
    }
    l->n_pos++;
    return 0;
}

/* Decode, apply and hold the records of one CRC-valid batch body. */
static int ctl_log_replay_body(struct ctl_log *l,
                               const uint8_t *body,
                               uint32_t len,
                               struct meta_image *img,
                               struct err_detail *ed)
{
    struct weir_cursor c;
    struct meta_record rec;
    uint64_t first;
    uint32_t count;
    uint32_t i;
    int rv;

    cur_init(&c, body, len);
    if (!cur_u64be(&c, &first) || !cur_u32be(&c, &count)) {
        return err_set(ed, WEIR_ECORRUPT, "batch header truncated");
    }
    if ((int64_t)first + count <= meta_image_end_offset(img)) {
        return 0; /* the snapshot already holds it */
    }
    if ((int64_t)first != meta_image_end_offset(img)) {
        return err_set(ed, WEIR_ECORRUPT, "batch at offset %lld, expected %lld",
                       (long long)first, (long long)meta_image_end_offset(img));
    }
    for (i = 0; i < count; i++) {
        const uint8_t *start = c.p + c.pos;
        struct weir_slice rb;
        struct weir_cursor rc;
        uint32_t rlen;
        if (!cur_u32be(&c, &rlen) || !cur_bytes(&c, rlen, &rb)) {
            return err_set(ed, WEIR_ECORRUPT, "record %u truncated", i);
        }
        cur_init(&rc, rb.p, rb.len);
        rv = meta_record_decode(&rc, &rec, ed);
        if (rv == 0 && cur_remaining(&rc) != 0) {
            rv = err_set(ed, WEIR_ECORRUPT, "bytes after record");
        }
        if (rv == 0) {
            rv = meta_image_apply(img, &rec, ed);
        }
        if (rv == 0 && ctl_log_hold(l, start, 4 + rb.len) != 0) {
            rv = err_set(ed, WEIR_ENOMEM, "holding the metadata log");
        }
        if (rv != 0) {
            err_wrap(ed, "record at offset %lld", (long long)first + i);
            return rv;
        }
    }
    if (cur_remaining(&c) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "bytes after the last record");
    }
    return 0;
}

/* Could a whole batch start at byte pos? Its length fits the file, its
 * first offset is at most `next` + the bytes from pos to the end (the
 * damaged bytes before it hold fewer records than bytes; `next` is the
 * offset the bad batch started at), and its CRC holds. Cheap tests
 * first: most positions fail on the length or the offset. */
static bool
ctl_log_frame_at(const uint8_t *p, size_t len, size_t pos, int64_t next)
{
    size_t left = len - pos;
    uint32_t blen;
    uint64_t first;

    if (left < CTL_LOG_FRAME_HEAD + CTL_LOG_BODY_HEAD) {
        return false;
    }
    blen = wire_get_u32be(p + pos);
    if (blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BATCH ||
        blen > left - CTL_LOG_FRAME_HEAD) {
        return false;
    }
    first = wire_get_u64be(p + pos + CTL_LOG_FRAME_HEAD);
    if (next < 0 || first > (uint64_t)next + left) {
        return false;
    }
    return crc32c(p + pos + CTL_LOG_FRAME_HEAD, blen) ==
           wire_get_u32be(p + pos + 4);
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
 * are searched, byte by byte, for a whole batch (CRC-valid, a plausible
 * first offset): a crash during the last append cannot leave one there. */
static int ctl_log_torn_or_corrupt(const struct ctl_log *l,
                                   const uint8_t *p,
                                   size_t len,
                                   size_t at,
                                   int64_t next_offset,
                                   struct err_detail *ed)
{
    size_t left = len - at;
    uint32_t blen = wire_get_u32be(p + at);
    bool impossible = blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BATCH;
    const char *what = impossible ? "has an impossible length"
                       : blen > left - CTL_LOG_FRAME_HEAD
                           ? "runs past the end of the file"
                           : "fails its CRC";
    size_t i;

    for (i = at + 1; i < len; i++) {
        if (ctl_log_frame_at(p, len, i, next_offset)) {
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

/* Replay metadata.log bytes; *good is where the last whole batch ends. */
static int ctl_log_replay(struct ctl_log *l,
                          const uint8_t *p,
                          size_t len,
                          struct meta_image *img,
                          uint64_t *good,
                          uint32_t *batches,
                          struct err_detail *ed)
{
    size_t at = 0;
    int rv;

    *good = 0;
    while (at < len) {
        uint32_t blen;
        uint32_t crc;
        if (len - at < CTL_LOG_FRAME_HEAD) {
            return 0; /* a torn frame head: too short for a batch after it */
        }
        blen = wire_get_u32be(p + at);
        crc = wire_get_u32be(p + at + 4);
        if (blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BATCH ||
            blen > len - at - CTL_LOG_FRAME_HEAD ||
            crc32c(p + at + CTL_LOG_FRAME_HEAD, blen) != crc) {
            return ctl_log_torn_or_corrupt(l, p, len, at,
                                           meta_image_end_offset(img), ed);
        }
        rv = ctl_log_replay_body(l, p + at + CTL_LOG_FRAME_HEAD, blen, img, ed);
        if (rv != 0) {
            err_wrap(ed, "%s at byte %zu", l->log_path, at);
            return rv;
        }
        at += CTL_LOG_FRAME_HEAD + blen;
        *good = at;
        (*batches)++;
    }
    return 0;
}

static int ctl_log_write_atomic(struct ctl_log *l,
                                const char *name,
                                const uint8_t *p,
                                size_t n,
                                struct err_detail *ed);

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
            return ctl_log_write_atomic(l, st->cut_file, p + at, len - at, ed);
        }
    }
    return err_set(ed, WEIR_EIO,
                   "%s: no free name to save the %zu bytes cut at byte %llu",
                   l->log_path, (size_t)(len - at), (unsigned long long)at);
}

static void ctl_log_forget(struct ctl_log *l, int64_t start)
{
    buf_reset(&l->mem);
    l->n_pos = 0;
    l->start = l->end = start;
}

/* The snapshot file: chain values, then the image (or, written before
 * chains, the image alone: its end value is made from its bytes). */
static int ctl_log_load_snapshot(struct ctl_log *l,
                                 const uint8_t *p,
                                 size_t len,
                                 struct meta_image **img,
                                 struct err_detail *ed)
{
    int64_t chain_end = -1;
    size_t used = 0;
    int rv = 0;

    if (len >= 4 && wire_get_u32be(p) == CTL_CHAIN_MAGIC) {
        rv = ctl_chain_decode(&l->chain, p, len, &used, &chain_end, ed);
    }
    if (rv == 0) {
        rv = meta_snapshot_decode(p + used, len - used, img, ed);
    }
    if (rv == 0 && used == 0 &&
        ctl_chain_reset(&l->chain, meta_image_end_offset(*img),
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
        err_wrap(ed, "%s", l->snap_path);
    }
    return rv;
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
    rv = ctl_log_slurp(l->snap_path, true, &p, &len, ed);
    if (rv == 0 && p != NULL) {
        rv = ctl_log_load_snapshot(l, p, len, &img, ed);
    } else if (rv == 0 &&
               (meta_image_new(&img) != 0 ||
                ctl_chain_reset(&l->chain, 0, META_CHAIN_ZERO) != 0)) {
        rv = err_set(ed, WEIR_ENOMEM, "new image");
    }
    mem_free(p);
    p = NULL;
    if (rv != 0) {
        return rv;
    }
    st->snapshot_end = meta_image_end_offset(img);
    ctl_log_forget(l, st->snapshot_end);
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
        return rv;
    }
    l->file_bytes = good;
    l->end = meta_image_end_offset(img);
    *img_out = img;
    return 0;
}

int ctl_log_open(const char *dir,
                 struct ctl_log **out,
                 struct meta_image **img,
                 struct ctl_log_stats *stats,
                 struct err_detail *ed)
{
    struct ctl_log *l;
    int rv;

    *out = NULL;
    *img = NULL;
    rv = datadir_mkdirs(dir, ed);
    if (rv != 0) {
        return rv;
    }
    l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        return err_set(ed, WEIR_ENOMEM, "opening the metadata log");
    }
    l->fd = -1;
    buf_init(&l->mem);
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

void ctl_log_close(struct ctl_log *l)
{
    if (l == NULL) {
        return;
    }
    if (l->fd >= 0) {
        (void)close(l->fd);
    }
    buf_fini(&l->mem);
    ctl_chain_fini(&l->chain);
    mem_free(l->pos);
    mem_free(l->dir);
    mem_free(l->log_path);
    mem_free(l->snap_path);
    mem_free(l);
}

/* Frame the batch into b: head, then u32be length | record each. */
static int ctl_log_encode(const struct meta_record *recs,
                          uint32_t n,
                          int64_t first,
                          struct weir_buf *b,
                          struct err_detail *ed)
{
    uint32_t i;
    int rv;

    buf_put_u32be(b, 0);
    buf_put_u32be(b, 0);
    buf_put_u64be(b, (uint64_t)first);
    buf_put_u32be(b, n);
    for (i = 0; i < n; i++) {
        size_t at = b->len;
        buf_put_u32be(b, 0);
        rv = meta_record_encode(&recs[i], b, ed);
        if (rv != 0) {
            return rv;
        }
        if (buf_ok(b)) {
            wire_put_u32be(b->data + at, (uint32_t)(b->len - at - 4));
        }
    }
    if (!buf_ok(b) || b->len - CTL_LOG_FRAME_HEAD > CTL_LOG_MAX_BATCH) {
        return err_set(ed, buf_ok(b) ? WEIR_EINVALID_ARGUMENT : WEIR_ENOMEM,
                       "encoding a metadata batch of %u records", n);
    }
    wire_put_u32be(b->data, (uint32_t)(b->len - CTL_LOG_FRAME_HEAD));
    wire_put_u32be(b->data + 4, crc32c(b->data + CTL_LOG_FRAME_HEAD,
                                       b->len - CTL_LOG_FRAME_HEAD));
    return 0;
}

/* Hold the batch's records in memory, all or none. */
static int ctl_log_hold_batch(struct ctl_log *l, const struct weir_buf *b)
{
    size_t mem_len = l->mem.len;
    uint32_t n_pos = l->n_pos;
    size_t at = CTL_LOG_FRAME_HEAD + CTL_LOG_BODY_HEAD;

    while (at < b->len) {
        uint32_t rlen = wire_get_u32be(b->data + at);
        if (ctl_log_hold(l, b->data + at, 4 + (size_t)rlen) != 0) {
            ctl_chain_drop_last(&l->chain, l->n_pos - n_pos);
            l->mem.len = mem_len;
            l->mem.oom = false;
            l->n_pos = n_pos;
            return WEIR_ENOMEM;
        }
        at += 4 + (size_t)rlen;
    }
    return 0;
}

int ctl_log_append(struct ctl_log *l,
                   const struct meta_record *recs,
                   uint32_t n,
                   int64_t first_offset,
                   struct err_detail *ed)
{
    struct weir_buf b;
    int rv;

    if (n == 0) {
        return 0;
    }
    if (first_offset != l->end) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "batch at offset %lld, log ends at %lld",
                       (long long)first_offset, (long long)l->end);
    }
    buf_init(&b);
    rv = ctl_log_encode(recs, n, first_offset, &b, ed);
    if (rv == 0) {
        rv = ctl_log_write_all(l->fd, b.data, b.len, l->file_bytes, l->log_path,
                               ed);
    }
    if (rv == 0 && fdatasync(l->fd) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "fdatasync", "%s", l->log_path);
    }
    if (rv == 0 && ctl_log_hold_batch(l, &b) != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "holding the metadata log");
    }
    if (rv != 0) {
        /* a batch that is not acknowledged must not be replayed later */
        if (ftruncate(l->fd, (off_t)l->file_bytes) != 0) {
            trace_error("controller", "event=log_cut_failed path=%s errno=%d",
                        l->log_path, errno);
        }
        buf_fini(&b);
        return rv;
    }
    l->file_bytes += b.len;
    l->end += n;
    buf_fini(&b);
    return 0;
}

/* Write bytes to dir/name atomically (common/datadir.h): a crash leaves
 * either the old file or the new one. */
static int ctl_log_write_atomic(struct ctl_log *l,
                                const char *name,
                                const uint8_t *p,
                                size_t n,
                                struct err_detail *ed)
{
    return datadir_write(l->dir, name, p, n, ed);
}

int ctl_log_snapshot(struct ctl_log *l,
                     const struct meta_image *img,
                     struct err_detail *ed)
{
    struct weir_buf b;
    int fd;
    int rv;

    if (meta_image_end_offset(img) != l->end) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "image at %lld, log at %lld",
                       (long long)meta_image_end_offset(img),
                       (long long)l->end);
    }
    buf_init(&b);
    /* the chain values first: a restart goes on checking brokers' history
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
        rv = ctl_log_write_atomic(l, CTL_SNAPSHOT_FILE, b.data, b.len, ed);
    }
    buf_fini(&b);
    if (rv == 0) {
        /* the snapshot is durable: the log before it may go */
        rv = ctl_log_write_atomic(l, CTL_LOG_FILE, NULL, 0, ed);
    }
    if (rv != 0) {
        return rv;
    }
    fd = open(l->log_path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return err_sys(ed, WEIR_EIO, errno, "open", "%s", l->log_path);
    }
    (void)close(l->fd);
    l->fd = fd;
    l->file_bytes = 0;
    ctl_log_forget(l, l->end);
    ctl_chain_trim(&l->chain);
    return 0;
}

int64_t ctl_log_start_offset(const struct ctl_log *l)
{
    return l->start;
}

int64_t ctl_log_end_offset(const struct ctl_log *l)
{
    return l->end;
}

int64_t ctl_log_chain_at(const struct ctl_log *l, int64_t offset)
{
    return ctl_chain_at(&l->chain, offset);
}

int64_t ctl_log_chain_first(const struct ctl_log *l)
{
    return ctl_chain_first(&l->chain);
}

uint64_t ctl_log_records_since_snapshot(const struct ctl_log *l)
{
    return (uint64_t)(l->end - l->start);
}

int ctl_log_read(const struct ctl_log *l,
                 int64_t from,
                 uint32_t max_bytes,
                 struct weir_buf *out,
                 uint32_t *count)
{
    uint32_t i;
    size_t first_pos;
    size_t end_pos;

    *count = 0;
    if (from < l->start || from > l->end) {
        return WEIR_EINVALID_ARGUMENT;
    }
    i = (uint32_t)(from - l->start);
    if (i == l->n_pos) {
        return 0;
    }
    first_pos = l->pos[i];
    end_pos = first_pos;
    while (i < l->n_pos) {
        size_t next = i + 1 < l->n_pos ? l->pos[i + 1] : l->mem.len;
        if (*count > 0 && next - first_pos > max_bytes) {
            break;
        }
        end_pos = next;
        (*count)++;
        i++;
    }
    buf_put(out, l->mem.data + first_pos, end_pos - first_pos);
    return buf_ok(out) ? 0 : WEIR_ENOMEM;
}
