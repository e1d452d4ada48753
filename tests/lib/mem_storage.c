/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory storage_ops: inodes in a tree, each with a current and a
 * durable state. Allocation here uses malloc directly (and aborts on
 * failure), not common/mem.h: OOM sweeps aim at the code under test, and
 * the fake file system must not change behaviour under them. */
#include "tests/lib/mem_storage_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mem_xalloc(size_t n)
{
    void *p = calloc(1, n == 0 ? 1 : n);

    if (p == NULL) {
        abort();
    }
    return p;
}

void *mem_xrealloc(void *p, size_t n)
{
    p = realloc(p, n == 0 ? 1 : n);
    if (p == NULL) {
        abort();
    }
    return p;
}

static char *mem_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mem_xalloc(n);

    memcpy(d, s, n);
    return d;
}

static struct mem_inode *mem_inode_new(bool is_dir)
{
    struct mem_inode *ino = mem_xalloc(sizeof(*ino));

    ino->is_dir = is_dir;
    return ino;
}

static void mem_entries_clear(struct mem_entries *e)
{
    size_t i;

    for (i = 0; i < e->n; i++) {
        free(e->v[i].name);
        mem_inode_unref(e->v[i].ino);
    }
    free(e->v);
    memset(e, 0, sizeof(*e));
}

void mem_inode_unref(struct mem_inode *ino)
{
    if (ino == NULL || --ino->refs > 0) {
        return;
    }
    mem_entries_clear(&ino->ents);
    mem_entries_clear(&ino->dur_ents);
    free(ino->data);
    free(ino->durable);
    free(ino);
}

static void
mem_entries_add(struct mem_entries *e, const char *name, struct mem_inode *ino)
{
    if (e->n == e->cap) {
        e->cap = e->cap == 0 ? 8 : e->cap * 2;
        e->v = mem_xrealloc(e->v, e->cap * sizeof(*e->v));
    }
    e->v[e->n].name = mem_xstrdup(name);
    e->v[e->n].ino = ino;
    ino->refs++;
    e->n++;
}

static struct mem_dirent *mem_entries_find(struct mem_entries *e,
                                           const char *name)
{
    size_t i;

    for (i = 0; i < e->n; i++) {
        if (strcmp(e->v[i].name, name) == 0) {
            return &e->v[i];
        }
    }
    return NULL;
}

static void mem_entries_remove(struct mem_entries *e, struct mem_dirent *d)
{
    size_t i = (size_t)(d - e->v);

    free(d->name);
    mem_inode_unref(d->ino);
    memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1) * sizeof(*e->v));
    e->n--;
}

void mem_entries_copy(struct mem_entries *dst, const struct mem_entries *src)
{
    size_t i;

    mem_entries_clear(dst);
    for (i = 0; i < src->n; i++) {
        mem_entries_add(dst, src->v[i].name, src->v[i].ino);
    }
}

/* Split a path into normalized components ("." dropped, ".." pops). */
struct mem_path {
    char buf[STORAGE_PATH_MAX];
    char *comp[MEM_MAX_DEPTH];
    int n;
};

static int mem_path_parse(const char *path, struct mem_path *mp)
{
    char *save = NULL;
    char *tok;

    if (strlen(path) >= sizeof(mp->buf)) {
        return ENAMETOOLONG;
    }
    strcpy(mp->buf, path);
    mp->n = 0;
    for (tok = strtok_r(mp->buf, "/", &save); tok != NULL;
         tok = strtok_r(NULL, "/", &save)) {
        if (strcmp(tok, ".") == 0) {
            continue;
        }
        if (strcmp(tok, "..") == 0) {
            if (mp->n > 0) {
                mp->n--;
            }
            continue;
        }
        if (mp->n == MEM_MAX_DEPTH) {
            return ENAMETOOLONG;
        }
        mp->comp[mp->n++] = tok;
    }
    return 0;
}

/* The directory holding the last component; *name is that component
 * (NULL for the root itself). */
static int mem_resolve_parent(struct mem_storage *ms,
                              const char *path,
                              struct mem_path *mp,
                              struct mem_inode **dir,
                              const char **name)
{
    struct mem_inode *d = ms->root;
    struct mem_dirent *e;
    int i;
    int rv = mem_path_parse(path, mp);

    if (rv != 0) {
        return rv;
    }
    for (i = 0; i + 1 < mp->n; i++) {
        e = mem_entries_find(&d->ents, mp->comp[i]);
        if (e == NULL) {
            return ENOENT;
        }
        if (!e->ino->is_dir) {
            return ENOTDIR;
        }
        d = e->ino;
    }
    *dir = d;
    *name = mp->n == 0 ? NULL : mp->comp[mp->n - 1];
    return 0;
}

struct mem_inode *mem_lookup(struct mem_storage *ms, const char *path)
{
    struct mem_path mp;
    struct mem_inode *d;
    const char *name;
    struct mem_dirent *e;

    if (mem_resolve_parent(ms, path, &mp, &d, &name) != 0) {
        return NULL;
    }
    if (name == NULL) {
        return ms->root;
    }
    e = mem_entries_find(&d->ents, name);
    return e == NULL ? NULL : e->ino;
}

static int mem_fail(struct err_detail *ed, int err_no, const char *fmt, ...)
    WEIR_PRINTF(3, 4);

static int mem_fail(struct err_detail *ed, int err_no, const char *fmt, ...)
{
    char what[400];
    int code = err_from_errno(err_no);
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    (void)err_set(ed, code, "%s: %s", what, strerror(err_no));
    if (ed != NULL) {
        ed->sys_errno = err_no;
    }
    return code;
}

/* Count the call and decide whether an injected fault hits it. */
static int mem_fault_check(struct mem_storage *ms, enum mem_op op)
{
    struct mem_fault *f = &ms->fault;

    ms->calls[op]++;
    ms->calls[MEM_OP_ANY]++;
    if (!f->armed || (f->op != MEM_OP_ANY && f->op != op)) {
        return 0;
    }
    if (f->countdown > 1) {
        f->countdown--;
        return 0;
    }
    if (!f->sticky) {
        f->armed = false;
    }
    ms->failed++;
    return f->err_no;
}

void mem_file_resize(struct mem_inode *ino, size_t len)
{
    if (len > ino->cap) {
        size_t ncap = ino->cap == 0 ? 4096 : ino->cap;
        while (ncap < len) {
            ncap *= 2;
        }
        ino->data = mem_xrealloc(ino->data, ncap);
        ino->cap = ncap;
    }
    if (len > ino->len) {
        memset(ino->data + ino->len, 0, len - ino->len);
    }
    ino->len = len;
}

void mem_file_write(struct mem_inode *ino,
                    uint64_t off,
                    const void *p,
                    size_t n)
{
    if (n == 0) {
        return;
    }
    if (off + n > ino->len) {
        mem_file_resize(ino, (size_t)(off + n));
    }
    memcpy(ino->data + off, p, n);
}

/* ---- the vtable ---------------------------------------------------- */

static int mem_open(void *ctx,
                    const char *path,
                    bool create,
                    struct storage_file **out,
                    struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    struct mem_path mp;
    struct mem_inode *d;
    struct mem_dirent *e;
    struct storage_file *f;
    const char *name;
    int err = mem_fault_check(ms, MEM_OP_OPEN);

    *out = NULL;
    if (err == 0) {
        err = mem_resolve_parent(ms, path, &mp, &d, &name);
    }
    if (err == 0 && name == NULL) {
        err = EISDIR;
    }
    if (err != 0) {
        return mem_fail(ed, err, "open %s", path);
    }
    e = mem_entries_find(&d->ents, name);
    if (e == NULL && !create) {
        return mem_fail(ed, ENOENT, "open %s", path);
    }
    if (e == NULL) {
        struct mem_inode *ino = mem_inode_new(false);
        mem_entries_add(&d->ents, name, ino);
        e = mem_entries_find(&d->ents, name);
    }
    if (e->ino->is_dir) {
        return mem_fail(ed, EISDIR, "open %s", path);
    }
    f = mem_xalloc(sizeof(*f));
    f->ino = e->ino;
    f->ino->refs++;
    f->path = mem_xstrdup(path);
    ms->open_files++;
    *out = f;
    return 0;
}

static void mem_close(void *ctx, struct storage_file *f)
{
    struct mem_storage *ms = ctx;

    if (f == NULL) {
        return;
    }
    mem_inode_unref(f->ino);
    free(f->path);
    free(f);
    ms->open_files--;
}

static int mem_pread(void *ctx,
                     struct storage_file *f,
                     void *buf,
                     size_t n,
                     uint64_t off,
                     size_t *got,
                     struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    int err = mem_fault_check(ms, MEM_OP_PREAD);
    size_t k = 0;

    *got = 0;
    if (err != 0) {
        return mem_fail(ed, err, "pread %s at %llu", f->path,
                        (unsigned long long)off);
    }
    if (off < f->ino->len) {
        k = f->ino->len - (size_t)off;
        k = k < n ? k : n;
        memcpy(buf, f->ino->data + off, k);
    }
    *got = k;
    ms->bytes_read += k;
    return 0;
}

static void mem_undo_record(struct mem_storage *ms,
                            struct mem_inode *ino,
                            uint64_t off,
                            size_t n)
{
    struct mem_undo *u = &ms->undo;
    size_t keep = 0;

    mem_inode_unref(u->ino);
    free(u->old);
    u->ino = ino;
    ino->refs++;
    u->off = off;
    u->n = n;
    u->old_len = ino->len;
    if (off < ino->len) {
        keep = ino->len - (size_t)off < n ? ino->len - (size_t)off : n;
    }
    u->old = mem_xalloc(keep);
    if (keep > 0) {
        memcpy(u->old, ino->data + off, keep);
    }
}

static int mem_pwrite(void *ctx,
                      struct storage_file *f,
                      const void *buf,
                      size_t n,
                      uint64_t off,
                      struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    int err = mem_fault_check(ms, MEM_OP_PWRITE);
    size_t part = err != 0 ? ms->fault.partial : n;

    if (part > n) {
        part = n;
    }
    mem_undo_record(ms, f->ino, off, n);
    if (part > 0) {
        mem_file_write(f->ino, off, buf, part);
    }
    if (err != 0) {
        return mem_fail(ed, err, "pwrite %s at %llu", f->path,
                        (unsigned long long)(off + part));
    }
    return 0;
}

static int mem_fsync(void *ctx, struct storage_file *f, struct err_detail *ed)
{
    struct mem_inode *ino = f->ino;
    int err = mem_fault_check(ctx, MEM_OP_FSYNC);

    if (err != 0) {
        return mem_fail(ed, err, "fdatasync %s", f->path);
    }
    ino->durable = mem_xrealloc(ino->durable, ino->len);
    if (ino->len > 0) {
        memcpy(ino->durable, ino->data, ino->len);
    }
    ino->durable_len = ino->len;
    return 0;
}

static int mem_truncate(void *ctx,
                        struct storage_file *f,
                        uint64_t size,
                        struct err_detail *ed)
{
    int err = mem_fault_check(ctx, MEM_OP_TRUNCATE);

    if (err != 0) {
        return mem_fail(ed, err, "ftruncate %s to %llu", f->path,
                        (unsigned long long)size);
    }
    mem_file_resize(f->ino, (size_t)size);
    return 0;
}

static int mem_size(void *ctx,
                    struct storage_file *f,
                    uint64_t *out,
                    struct err_detail *ed)
{
    int err = mem_fault_check(ctx, MEM_OP_SIZE);

    if (err != 0) {
        return mem_fail(ed, err, "fstat %s", f->path);
    }
    *out = f->ino->len;
    return 0;
}

static int mem_fd(void *ctx, struct storage_file *f)
{
    (void)ctx;
    (void)f;
    return -1;
}

static int mem_mkdir(void *ctx, const char *path, struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    struct mem_path mp;
    struct mem_inode *d;
    struct mem_dirent *e;
    const char *name;
    int err = mem_fault_check(ms, MEM_OP_MKDIR);

    if (err == 0) {
        err = mem_resolve_parent(ms, path, &mp, &d, &name);
    }
    if (err == 0 && name == NULL) {
        return 0; /* the root */
    }
    if (err != 0) {
        return mem_fail(ed, err, "mkdir %s", path);
    }
    e = mem_entries_find(&d->ents, name);
    if (e != NULL) {
        return e->ino->is_dir ? 0 : mem_fail(ed, EEXIST, "mkdir %s", path);
    }
    {
        struct mem_inode *ino = mem_inode_new(true);
        mem_entries_add(&d->ents, name, ino);
    }
    return 0;
}

/* True when b is a or lies below it (component-wise). */
static bool mem_path_within(const struct mem_path *a, const struct mem_path *b)
{
    int i;

    if (b->n < a->n) {
        return false;
    }
    for (i = 0; i < a->n; i++) {
        if (strcmp(a->comp[i], b->comp[i]) != 0) {
            return false;
        }
    }
    return true;
}

static int mem_rename_entries(struct mem_dirent *src,
                              struct mem_inode *tdir,
                              const char *tname)
{
    struct mem_dirent *dst = mem_entries_find(&tdir->ents, tname);

    if (dst != NULL) {
        if (dst->ino == src->ino) {
            return 0;
        }
        if (dst->ino->is_dir != src->ino->is_dir) {
            return dst->ino->is_dir ? EISDIR : ENOTDIR;
        }
        if (dst->ino->is_dir && dst->ino->ents.n > 0) {
            return ENOTEMPTY;
        }
        mem_inode_unref(dst->ino);
        dst->ino = src->ino;
        dst->ino->refs++;
        return 0;
    }
    mem_entries_add(&tdir->ents, tname, src->ino);
    return 0;
}

static int
mem_rename(void *ctx, const char *from, const char *to, struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    struct mem_path fp;
    struct mem_path tp;
    struct mem_inode *fd;
    struct mem_inode *td;
    const char *fname;
    const char *tname;
    struct mem_dirent *src;
    int err = mem_fault_check(ms, MEM_OP_RENAME);

    if (err == 0) {
        err = mem_resolve_parent(ms, from, &fp, &fd, &fname);
    }
    if (err == 0) {
        err = mem_resolve_parent(ms, to, &tp, &td, &tname);
    }
    if (err == 0 && (fname == NULL || tname == NULL)) {
        err = EBUSY;
    }
    src = err == 0 ? mem_entries_find(&fd->ents, fname) : NULL;
    if (err == 0 && src == NULL) {
        err = ENOENT;
    }
    if (err == 0 && src->ino->is_dir && mem_path_within(&fp, &tp) &&
        tp.n > fp.n) {
        err = EINVAL; /* into itself */
    }
    if (err == 0) {
        err = mem_rename_entries(src, td, tname);
    }
    if (err != 0) {
        return mem_fail(ed, err, "rename %s to %s", from, to);
    }
    /* the target entry took its own reference; src may have moved if the
     * same directory grew, so look it up again */
    if (!(fd == td && strcmp(fname, tname) == 0)) {
        mem_entries_remove(&fd->ents, mem_entries_find(&fd->ents, fname));
    }
    return 0;
}

static int mem_remove(struct mem_storage *ms,
                      enum mem_op op,
                      const char *path,
                      struct err_detail *ed)
{
    const char *call = op == MEM_OP_UNLINK ? "unlink" : "rmdir";
    struct mem_path mp;
    struct mem_inode *d;
    struct mem_dirent *e = NULL;
    const char *name;
    int err = mem_fault_check(ms, op);

    if (err == 0) {
        err = mem_resolve_parent(ms, path, &mp, &d, &name);
    }
    if (err == 0 && name == NULL) {
        err = EBUSY;
    }
    if (err == 0 && (e = mem_entries_find(&d->ents, name)) == NULL) {
        err = ENOENT;
    }
    if (err == 0 && op == MEM_OP_UNLINK && e->ino->is_dir) {
        err = EISDIR;
    }
    if (err == 0 && op == MEM_OP_RMDIR && !e->ino->is_dir) {
        err = ENOTDIR;
    }
    if (err == 0 && op == MEM_OP_RMDIR && e->ino->ents.n > 0) {
        err = ENOTEMPTY;
    }
    if (err != 0) {
        return mem_fail(ed, err, "%s %s", call, path);
    }
    mem_entries_remove(&d->ents, e);
    return 0;
}

static int mem_unlink(void *ctx, const char *path, struct err_detail *ed)
{
    return mem_remove(ctx, MEM_OP_UNLINK, path, ed);
}

static int mem_rmdir(void *ctx, const char *path, struct err_detail *ed)
{
    return mem_remove(ctx, MEM_OP_RMDIR, path, ed);
}

static int mem_fsync_dir(void *ctx, const char *path, struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    struct mem_inode *d;
    int err = mem_fault_check(ms, MEM_OP_FSYNC_DIR);

    if (err != 0) {
        return mem_fail(ed, err, "fsync %s", path);
    }
    d = mem_lookup(ms, path);
    if (d == NULL || !d->is_dir) {
        return mem_fail(ed, d == NULL ? ENOENT : ENOTDIR, "open %s", path);
    }
    mem_entries_copy(&d->dur_ents, &d->ents);
    return 0;
}

static int mem_list(void *ctx,
                    const char *dir,
                    storage_list_fn fn,
                    void *arg,
                    struct err_detail *ed)
{
    struct mem_storage *ms = ctx;
    struct mem_inode *d;
    char **names;
    size_t n;
    size_t i;
    int err = mem_fault_check(ms, MEM_OP_LIST);

    if (err != 0) {
        return mem_fail(ed, err, "opendir %s", dir);
    }
    d = mem_lookup(ms, dir);
    if (d == NULL || !d->is_dir) {
        return mem_fail(ed, d == NULL ? ENOENT : ENOTDIR, "opendir %s", dir);
    }
    /* a snapshot, so callbacks may unlink what they are given */
    n = d->ents.n;
    names = mem_xalloc(n * sizeof(*names));
    for (i = 0; i < n; i++) {
        names[i] = mem_xstrdup(d->ents.v[i].name);
    }
    for (i = 0; i < n; i++) {
        if (fn(arg, names[i]) != 0) {
            break;
        }
    }
    for (i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
    return 0;
}

static int mem_exists(void *ctx, const char *path)
{
    return mem_lookup(ctx, path) != NULL ? 1 : 0;
}

static int mem_free_bytes(void *ctx,
                          const char *path,
                          uint64_t *out,
                          struct err_detail *ed)
{
    struct mem_storage *ms = ctx;

    *out = 0;
    if (mem_lookup(ms, path) == NULL) {
        return mem_fail(ed, ENOENT, "statvfs %s", path);
    }
    *out = ms->free_bytes;
    return 0;
}

struct mem_storage *mem_storage_new(void)
{
    struct mem_storage *ms = mem_xalloc(sizeof(*ms));

    ms->root = mem_inode_new(true);
    ms->root->refs = 1;
    ms->ops.ctx = ms;
    ms->ops.open = mem_open;
    ms->ops.close = mem_close;
    ms->ops.pread = mem_pread;
    ms->ops.pwrite = mem_pwrite;
    ms->ops.fsync = mem_fsync;
    ms->ops.truncate = mem_truncate;
    ms->ops.size = mem_size;
    ms->ops.fd = mem_fd;
    ms->ops.mkdir = mem_mkdir;
    ms->ops.rename = mem_rename;
    ms->ops.unlink = mem_unlink;
    ms->ops.rmdir = mem_rmdir;
    ms->ops.fsync_dir = mem_fsync_dir;
    ms->ops.list = mem_list;
    ms->ops.exists = mem_exists;
    ms->ops.free_bytes = mem_free_bytes;
    ms->free_bytes = UINT64_MAX;
    return ms;
}

void mem_storage_free(struct mem_storage *ms)
{
    if (ms == NULL) {
        return;
    }
    mem_inode_unref(ms->undo.ino);
    free(ms->undo.old);
    mem_inode_unref(ms->root);
    free(ms);
}

const struct storage_ops *mem_storage_ops(struct mem_storage *ms)
{
    return &ms->ops;
}
