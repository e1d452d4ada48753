/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of the memory file system, shared by mem_storage.c (the vtable)
 * and mem_storage_ctl.c (the test controls). Locality: one test thread. */
#ifndef TESTS_LIB_MEM_STORAGE_INT_H
#define TESTS_LIB_MEM_STORAGE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/mem_storage.h"

#define MEM_MAX_DEPTH 64

struct mem_inode;

struct mem_dirent {
    char *name;
    struct mem_inode *ino; /* holds a reference */
};

struct mem_entries {
    struct mem_dirent *v;
    size_t n;
    size_t cap;
};

struct mem_inode {
    int refs; /* directory entries (current and durable), handles, undo */
    bool is_dir;
    uint8_t *data; /* file: current bytes */
    size_t len;
    size_t cap;
    uint8_t *durable; /* file: bytes at the last fsync */
    size_t durable_len;
    struct mem_entries ents;     /* dir: current entries */
    struct mem_entries dur_ents; /* dir: entries at the last fsync_dir */
};

struct storage_file {
    struct mem_inode *ino; /* holds a reference */
    char *path;
};

struct mem_fault {
    bool armed;
    enum mem_op op;
    unsigned long countdown;
    int err_no;
    size_t partial;
    bool sticky;
};

struct mem_undo {          /* the last pwrite, for tearing */
    struct mem_inode *ino; /* holds a reference, or NULL */
    uint64_t off;
    size_t n;
    size_t old_len;
    uint8_t *old; /* bytes [off, min(off + n, old_len)) before the write */
};

struct mem_storage {
    struct storage_ops ops;
    struct mem_inode *root;
    struct mem_fault fault;
    unsigned long calls[MEM_OP_COUNT];
    unsigned long failed;
    uint64_t bytes_read;
    struct mem_undo undo;
    size_t open_files;
    uint64_t free_bytes; /* what free_bytes answers (no quota is enforced) */
};

/* malloc that aborts on failure (see mem_storage.c for why not mem.h) */
void *mem_xalloc(size_t n);
void *mem_xrealloc(void *p, size_t n);
void mem_inode_unref(struct mem_inode *ino);
void mem_entries_copy(struct mem_entries *dst, const struct mem_entries *src);
/* The inode at path (current namespace), or NULL. */
struct mem_inode *mem_lookup(struct mem_storage *ms, const char *path);
/* Grow (zero-filled) or cut the current bytes of a file. */
void mem_file_resize(struct mem_inode *ino, size_t len);
void mem_file_write(struct mem_inode *ino,
                    uint64_t off,
                    const void *p,
                    size_t n);

#endif /* TESTS_LIB_MEM_STORAGE_INT_H */
