/* SPDX-License-Identifier: Apache-2.0 */
/* Test controls of the memory file system: fault injection, crashes, torn
 * writes, raw corruption and inspection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/mem_storage_int.h"

void mem_storage_fail(struct mem_storage *ms,
                      enum mem_op op,
                      unsigned long nth,
                      int err_no,
                      size_t partial,
                      bool sticky)
{
    ms->fault.armed = nth > 0;
    ms->fault.op = op;
    ms->fault.countdown = nth;
    ms->fault.err_no = err_no;
    ms->fault.partial = partial;
    ms->fault.sticky = sticky;
    ms->failed = 0;
}

void mem_storage_fail_clear(struct mem_storage *ms)
{
    ms->fault.armed = false;
}

unsigned long mem_storage_calls(const struct mem_storage *ms, enum mem_op op)
{
    return ms->calls[op];
}

uint64_t mem_storage_bytes_read(const struct mem_storage *ms)
{
    return ms->bytes_read;
}

unsigned long mem_storage_failed(const struct mem_storage *ms)
{
    return ms->failed;
}

void mem_storage_set_free_bytes(struct mem_storage *ms, uint64_t n)
{
    ms->free_bytes = n;
}

static void mem_crash_inode(struct mem_inode *ino, int depth)
{
    size_t i;

    if (depth > MEM_MAX_DEPTH) {
        return;
    }
    if (!ino->is_dir) {
        mem_file_resize(ino, 0);
        mem_file_write(ino, 0, ino->durable, ino->durable_len);
        return;
    }
    mem_entries_copy(&ino->ents, &ino->dur_ents);
    for (i = 0; i < ino->ents.n; i++) {
        mem_crash_inode(ino->ents.v[i].ino, depth + 1);
    }
}

void mem_storage_crash(struct mem_storage *ms)
{
    mem_inode_unref(ms->undo.ino);
    free(ms->undo.old);
    memset(&ms->undo, 0, sizeof(ms->undo));
    mem_crash_inode(ms->root, 0);
}

static void mem_sync_inode(struct mem_inode *ino, int depth)
{
    size_t i;

    if (depth > MEM_MAX_DEPTH) {
        return;
    }
    if (!ino->is_dir) {
        ino->durable = mem_xrealloc(ino->durable, ino->len);
        if (ino->len > 0) {
            memcpy(ino->durable, ino->data, ino->len);
        }
        ino->durable_len = ino->len;
        return;
    }
    mem_entries_copy(&ino->dur_ents, &ino->ents);
    for (i = 0; i < ino->ents.n; i++) {
        mem_sync_inode(ino->ents.v[i].ino, depth + 1);
    }
}

void mem_storage_sync_all(struct mem_storage *ms)
{
    mem_sync_inode(ms->root, 0);
}

int mem_storage_tear_last_write(struct mem_storage *ms, size_t keep)
{
    struct mem_undo *u = &ms->undo;
    struct mem_inode *ino = u->ino;
    uint64_t cut;
    size_t i;

    if (ino == NULL) {
        return -1;
    }
    if (keep >= u->n) {
        return 0;
    }
    cut = u->off + keep;
    /* bytes that existed before the write get their old values back */
    for (i = keep; i < u->n && u->off + i < u->old_len; i++) {
        if (u->off + i < ino->len) {
            ino->data[u->off + i] = u->old[i];
        }
    }
    /* bytes the write appended beyond the old end disappear */
    if (ino->len > u->old_len) {
        mem_file_resize(ino, (size_t)(cut > u->old_len ? cut : u->old_len));
    }
    return 0;
}

static struct mem_inode *mem_file_at(struct mem_storage *ms, const char *path)
{
    struct mem_inode *ino = mem_lookup(ms, path);

    return ino != NULL && !ino->is_dir ? ino : NULL;
}

int mem_storage_write_raw(struct mem_storage *ms,
                          const char *path,
                          uint64_t off,
                          const void *data,
                          size_t n)
{
    struct mem_inode *ino = mem_file_at(ms, path);
    uint64_t end = off + n;

    if (ino == NULL) {
        return -1;
    }
    mem_file_write(ino, off, data, n);
    if (end > ino->durable_len) {
        ino->durable = mem_xrealloc(ino->durable, (size_t)end);
        memset(ino->durable + ino->durable_len, 0,
               (size_t)end - ino->durable_len);
        ino->durable_len = (size_t)end;
    }
    if (n > 0) {
        memcpy(ino->durable + off, data, n);
    }
    return 0;
}

int mem_storage_garbage(struct mem_storage *ms,
                        const char *path,
                        uint64_t off,
                        size_t n,
                        uint32_t seed)
{
    uint8_t *p = mem_xalloc(n);
    uint32_t x = seed * 2654435761u + 1;
    size_t i;
    int rv;

    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    rv = mem_storage_write_raw(ms, path, off, p, n);
    free(p);
    return rv;
}

int mem_storage_truncate_raw(struct mem_storage *ms,
                             const char *path,
                             uint64_t size)
{
    struct mem_inode *ino = mem_file_at(ms, path);

    if (ino == NULL) {
        return -1;
    }
    mem_file_resize(ino, (size_t)size);
    if (ino->durable_len > size) {
        ino->durable_len = (size_t)size;
    }
    return 0;
}

int64_t mem_storage_size_of(struct mem_storage *ms, const char *path)
{
    struct mem_inode *ino = mem_file_at(ms, path);

    return ino == NULL ? -1 : (int64_t)ino->len;
}

int mem_storage_read_raw(struct mem_storage *ms,
                         const char *path,
                         struct weir_buf *out)
{
    struct mem_inode *ino = mem_file_at(ms, path);

    if (ino == NULL) {
        return -1;
    }
    buf_put(out, ino->data, ino->len);
    return buf_ok(out) ? 0 : -1;
}

size_t mem_storage_open_files(const struct mem_storage *ms)
{
    return ms->open_files;
}

static void mem_walk_dir(struct mem_inode *d,
                         char *path,
                         size_t len,
                         mem_storage_walk_fn fn,
                         void *arg,
                         int depth)
{
    size_t i;

    if (depth > MEM_MAX_DEPTH) {
        return;
    }
    for (i = 0; i < d->ents.n; i++) {
        int n = snprintf(path + len, STORAGE_PATH_MAX - len, "/%s",
                         d->ents.v[i].name);
        if (n < 0 || (size_t)n >= STORAGE_PATH_MAX - len) {
            continue;
        }
        fn(arg, path, d->ents.v[i].ino->is_dir);
        if (d->ents.v[i].ino->is_dir) {
            mem_walk_dir(d->ents.v[i].ino, path, len + (size_t)n, fn, arg,
                         depth + 1);
        }
        path[len] = '\0';
    }
}

void mem_storage_walk(struct mem_storage *ms, mem_storage_walk_fn fn, void *arg)
{
    char path[STORAGE_PATH_MAX] = "";

    mem_walk_dir(ms->root, path, 0, fn, arg, 0);
}
