/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata log: the helpers every ctl_log*.c shares, holding entries and
 * applied records in memory, the single controller's append (a batch
 * appended and applied at once) and the queries brokers' fetches use.
 * Loading is in ctl_log_load.c, snapshots in ctl_log_snapshot.c, the Raft
 * side in ctl_log_raft.c; the format is in ctl_log.h. */
#include "controller/ctl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"
#include "common/trace.h"
#include "controller/ctl_log_int.h"

char *ctl_log_path(const char *dir, const char *name)
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
int ctl_log_slurp(const char *path,
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

int ctl_log_write_all(int fd,
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

void ctl_log_forget(struct ctl_log *l, int64_t start)
{
    buf_reset(&l->mem);
    l->n_pos = 0;
    l->start = l->end = start;
}

uint64_t ctl_log_last_index(const struct ctl_log *l)
{
    return l->n_ents > 0 ? l->ents[l->n_ents - 1].index : l->snap_index;
}

uint64_t ctl_log_last_term(const struct ctl_log *l)
{
    return l->n_ents > 0 ? l->ents[l->n_ents - 1].term : l->snap_term;
}

int ctl_log_ent_push(struct ctl_log *l,
                     const struct raft_entry *e,
                     uint64_t file_at)
{
    struct ctl_log_ent *x;

    if (l->n_ents == l->cap_ents) {
        uint32_t cap = l->cap_ents == 0 ? 64 : l->cap_ents * 2;
        struct ctl_log_ent *np = mem_realloc(l->ents, cap * sizeof(*np));
        if (np == NULL) {
            return WEIR_ENOMEM;
        }
        l->ents = np;
        l->cap_ents = cap;
    }
    x = &l->ents[l->n_ents];
    x->index = e->index;
    x->term = e->term;
    x->type = (uint8_t)e->type;
    x->file_at = file_at;
    x->data_at = l->ent_data.len;
    x->len = e->len;
    if (e->len > 0) {
        buf_put(&l->ent_data, e->data, e->len);
    }
    if (!buf_ok(&l->ent_data)) {
        l->ent_data.len = x->data_at;
        l->ent_data.oom = false;
        return WEIR_ENOMEM;
    }
    l->n_ents++;
    return 0;
}

void ctl_log_ent_cut(struct ctl_log *l, uint32_t k)
{
    if (k < l->n_ents) {
        l->ent_data.len = l->ents[k].data_at;
        l->n_ents = k;
    }
}

/* Decode, apply and hold the records of one batch (checked by
 * ctl_log_frame_check_batch when it was read or appended). */
static int ctl_log_apply_batch(struct ctl_log *l,
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
        l->end++;
    }
    return 0;
}

int ctl_log_apply_ent(struct ctl_log *l,
                      uint32_t k,
                      struct meta_image *img,
                      struct err_detail *ed)
{
    const struct ctl_log_ent *x = &l->ents[k];
    const uint8_t *data = l->ent_data.data + x->data_at;
    uint32_t id;
    uint32_t i;

    switch (x->type) {
    case RAFT_ENTRY_NORMAL:
        return ctl_log_apply_batch(l, data, x->len, img, ed);
    case RAFT_ENTRY_READMIT:
        id = wire_get_u32be(data);
        for (i = 0; i < l->n_voters; i++) {
            if (l->voters[i] == id) {
                l->admitted[i] = wire_get_u64be(data + 4);
                return 0;
            }
        }
        return err_set(ed, WEIR_ECORRUPT, "READMIT of %u, not a voter", id);
    default:
        return 0; /* NOOP */
    }
}

int ctl_log_open(const char *dir,
                 struct ctl_log **out,
                 struct meta_image **img,
                 struct ctl_log_stats *stats,
                 struct err_detail *ed)
{
    return ctl_log_open_mode(dir, false, NULL, 0, out, img, stats, ed);
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
    buf_fini(&l->ent_data);
    ctl_chain_fini(&l->chain);
    mem_free(l->ents);
    mem_free(l->pos);
    mem_free(l->dir);
    mem_free(l->log_path);
    mem_free(l->snap_path);
    mem_free(l);
}

/* Hold the records of the batch frame in b, all or none. */
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
    struct raft_entry e;
    struct weir_buf b;
    int rv;

    if (n == 0) {
        return 0;
    }
    if (l->raft || first_offset != l->end) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "batch at offset %lld, log ends at %lld%s",
                       (long long)first_offset, (long long)l->end,
                       l->raft ? " (a quorum member's log)" : "");
    }
    buf_init(&b);
    rv = ctl_log_frame_put_batch(&b, recs, n, first_offset, ed);
    if (rv == 0) {
        rv = ctl_log_write_all(l->fd, b.data, b.len, l->file_bytes, l->log_path,
                               ed);
    }
    if (rv == 0 && fdatasync(l->fd) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "fdatasync", "%s", l->log_path);
    }
    e.index = ctl_log_last_index(l) + 1;
    e.term = 0;
    e.type = RAFT_ENTRY_NORMAL;
    e.data = b.data + CTL_LOG_FRAME_HEAD;
    e.len = (uint32_t)(b.len - CTL_LOG_FRAME_HEAD);
    if (rv == 0 && ctl_log_ent_push(l, &e, l->file_bytes) != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "holding the metadata log");
    }
    if (rv == 0 && ctl_log_hold_batch(l, &b) != 0) {
        /* the caller's core applied the records already: only hold them */
        ctl_log_ent_cut(l, l->n_ents - 1);
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
    l->next_off = l->end;
    l->applied = e.index;
    buf_fini(&b);
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
