/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers over any storage_ops: atomic small-file replace, whole small-file
 * read, path joining and directory removal. */
#include <stdio.h>
#include <string.h>

#include "broker/storage/storage_ops.h"
#include "common/mem.h"

int storage_join(char *out,
                 size_t cap,
                 const char *dir,
                 const char *name,
                 struct err_detail *ed)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);

    if (n < 0 || (size_t)n >= cap) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "path %s/%s is longer than %zu bytes", dir, name,
                       cap - 1);
    }
    return 0;
}

int storage_write_atomic(const struct storage_ops *ops,
                         const char *dir,
                         const char *path,
                         const void *data,
                         size_t n,
                         struct err_detail *ed)
{
    char tmp[STORAGE_PATH_MAX];
    struct storage_file *f;
    struct err_detail ignored;
    int rv;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "path %s is too long", path);
    }
    rv = ops->open(ops->ctx, tmp, true, &f, ed);
    if (rv != 0) {
        return rv;
    }
    /* a temp file left by an earlier crash may be longer than this one */
    rv = ops->truncate(ops->ctx, f, 0, ed);
    if (rv == 0 && n > 0) {
        rv = ops->pwrite(ops->ctx, f, data, n, 0, ed);
    }
    if (rv == 0) {
        rv = ops->fsync(ops->ctx, f, ed);
    }
    ops->close(ops->ctx, f);
    if (rv == 0) {
        rv = ops->rename(ops->ctx, tmp, path, ed);
    }
    if (rv != 0) {
        (void)ops->unlink(ops->ctx, tmp, &ignored);
        return rv;
    }
    /* the rename is durable only once the directory is */
    return ops->fsync_dir(ops->ctx, dir, ed);
}

int storage_read_small(const struct storage_ops *ops,
                       const char *path,
                       size_t max,
                       char **out,
                       size_t *len,
                       struct err_detail *ed)
{
    struct storage_file *f;
    uint64_t size;
    size_t got;
    char *p;
    int rv;

    *out = NULL;
    *len = 0;
    rv = ops->open(ops->ctx, path, false, &f, ed);
    if (rv != 0) {
        return rv;
    }
    rv = ops->size(ops->ctx, f, &size, ed);
    if (rv != 0) {
        goto out_close;
    }
    if (size > max) {
        rv = err_set(ed, WEIR_ECORRUPT, "%s is %llu bytes, more than %zu", path,
                     (unsigned long long)size, max);
        goto out_close;
    }
    p = mem_malloc((size_t)size + 1);
    if (p == NULL) {
        rv = err_set(ed, WEIR_ENOMEM, "reading %s: out of memory", path);
        goto out_close;
    }
    rv = ops->pread(ops->ctx, f, p, (size_t)size, 0, &got, ed);
    if (rv != 0) {
        mem_free(p);
        goto out_close;
    }
    p[got] = '\0';
    *out = p;
    *len = got;

out_close:
    ops->close(ops->ctx, f);
    return rv;
}

struct storage_rm {
    const struct storage_ops *ops;
    const char *dir;
    int rv;
    struct err_detail *ed;
};

static int storage_rm_entry(void *arg, const char *name)
{
    struct storage_rm *rm = arg;
    char path[STORAGE_PATH_MAX];
    int rv;

    rv = storage_join(path, sizeof(path), rm->dir, name, rm->ed);
    if (rv == 0) {
        rv = rm->ops->unlink(rm->ops->ctx, path, rm->ed);
    }
    if (rv != 0 && rm->rv == 0) {
        rm->rv = rv;
    }
    return 0; /* keep going: remove as much as possible */
}

int storage_remove_dir(const struct storage_ops *ops,
                       const char *dir,
                       struct err_detail *ed)
{
    struct storage_rm rm = {ops, dir, 0, ed};
    int rv;

    rv = ops->list(ops->ctx, dir, storage_rm_entry, &rm, ed);
    if (rv == WEIR_ENOT_FOUND) {
        return 0;
    }
    if (rv != 0) {
        return rv;
    }
    if (rm.rv != 0) {
        return rm.rv;
    }
    return ops->rmdir(ops->ctx, dir, ed);
}

int storage_parent_dir(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n;

    if (slash == NULL) {
        n = 1;
        path = ".";
    } else if (slash == path) {
        n = 1; /* "/x" -> "/" */
    } else {
        n = (size_t)(slash - path);
    }
    if (n >= cap) {
        return -1;
    }
    memcpy(out, path, n);
    out[n] = '\0';
    return 0;
}

int storage_mkdirs(const struct storage_ops *ops,
                   const char *path,
                   struct err_detail *ed)
{
    char part[STORAGE_PATH_MAX];
    char parent[STORAGE_PATH_MAX];
    size_t n = strlen(path);
    size_t i;
    int rv;

    if (n >= sizeof(part)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "path %s is too long", path);
    }
    /* each missing level is created, then made durable in its parent */
    for (i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') {
            continue;
        }
        memcpy(part, path, i);
        part[i] = '\0';
        if (ops->exists(ops->ctx, part)) {
            continue;
        }
        rv = ops->mkdir(ops->ctx, part, ed);
        if (rv == 0 && storage_parent_dir(part, parent, sizeof(parent)) == 0) {
            rv = ops->fsync_dir(ops->ctx, parent, ed);
        }
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}
