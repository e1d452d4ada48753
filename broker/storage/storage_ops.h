/* SPDX-License-Identifier: Apache-2.0 */
/* Storage is a vtable so the partition log can run over real files (posix)
 * or over memory with injected faults (tests/lib/mem_storage.c): fail the
 * Nth call, lose unsynced writes on a simulated crash, tear the last write.
 * Every call fills err_detail with the path and the failing system call. */
#ifndef BROKER_STORAGE_STORAGE_OPS_H
#define BROKER_STORAGE_STORAGE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct storage_file; /* opaque, owned by the implementation */

/* Called once per directory entry name (not "." or ".."); return non-zero to
 * stop the listing early. */
typedef int (*storage_list_fn)(void *arg, const char *name);

struct storage_ops {
    void *ctx;
    /* Open (create when `create`) a file for reading and appending. */
    int (*open)(void *ctx,
                const char *path,
                bool create,
                struct storage_file **out,
                struct err_detail *ed);
    void (*close)(void *ctx, struct storage_file *f);
    /* Read exactly n bytes at off, or fewer at end of file (*got says). */
    int (*pread)(void *ctx,
                 struct storage_file *f,
                 void *buf,
                 size_t n,
                 uint64_t off,
                 size_t *got,
                 struct err_detail *ed);
    /* Write all n bytes at off (appends are writes at the current size). */
    int (*pwrite)(void *ctx,
                  struct storage_file *f,
                  const void *buf,
                  size_t n,
                  uint64_t off,
                  struct err_detail *ed);
    int (*fsync)(void *ctx, struct storage_file *f, struct err_detail *ed);
    int (*truncate)(void *ctx,
                    struct storage_file *f,
                    uint64_t size,
                    struct err_detail *ed);
    int (*size)(void *ctx,
                struct storage_file *f,
                uint64_t *out,
                struct err_detail *ed);
    /* OS file descriptor for zero-copy sends, or -1 (memory storage). */
    int (*fd)(void *ctx, struct storage_file *f);
    /* Succeeds when the directory exists already. */
    int (*mkdir)(void *ctx, const char *path, struct err_detail *ed);
    int (*rename)(void *ctx,
                  const char *from,
                  const char *to,
                  struct err_detail *ed);
    int (*unlink)(void *ctx, const char *path, struct err_detail *ed);
    int (*rmdir)(void *ctx, const char *path, struct err_detail *ed);
    int (*fsync_dir)(void *ctx, const char *path, struct err_detail *ed);
    /* WEIR_ENOT_FOUND when the directory is missing. */
    int (*list)(void *ctx,
                const char *dir,
                storage_list_fn fn,
                void *arg,
                struct err_detail *ed);
    /* 1 when the path exists, 0 when not. */
    int (*exists)(void *ctx, const char *path);
    /* Bytes an unprivileged writer may still use on the file system that
     * holds path (statvfs: f_bavail * f_frsize). */
    int (*free_bytes)(void *ctx,
                      const char *path,
                      uint64_t *out,
                      struct err_detail *ed);
};

/* The real thing: files through open/pread/pwrite/fdatasync. */
const struct storage_ops *storage_posix(void);

/* Write `data` to `path` atomically: temp file, fsync, rename, directory
 * fsync. `dir` is the directory holding path. */
WEIR_MUST_CHECK int storage_write_atomic(const struct storage_ops *ops,
                                         const char *dir,
                                         const char *path,
                                         const void *data,
                                         size_t n,
                                         struct err_detail *ed);
/* Read a whole small file (at most max bytes) into a NUL-terminated heap
 * buffer (mem_free). Errors: WEIR_ENOT_FOUND, WEIR_EIO, WEIR_ECORRUPT
 * (larger than max). */
WEIR_MUST_CHECK int storage_read_small(const struct storage_ops *ops,
                                       const char *path,
                                       size_t max,
                                       char **out,
                                       size_t *len,
                                       struct err_detail *ed);

/* Longest path the storage layer builds (data dir + partition + file). */
#define STORAGE_PATH_MAX 4096

/* "<dir>/<name>" into out. Errors: WEIR_EINVALID_ARGUMENT (too long). */
WEIR_MUST_CHECK int storage_join(char *out,
                                 size_t cap,
                                 const char *dir,
                                 const char *name,
                                 struct err_detail *ed);
/* Directory part of path ("/a/b" -> "/a", "b" -> "."); -1 if cap is too
 * small. */
int storage_parent_dir(const char *path, char *out, size_t cap);
/* Create path and any missing parents (mkdir -p), fsyncing the parent of
 * each directory created. */
WEIR_MUST_CHECK int storage_mkdirs(const struct storage_ops *ops,
                                   const char *path,
                                   struct err_detail *ed);
/* Unlink every entry of dir, then remove dir (one level: partition
 * directories hold only files). A missing dir is not an error. */
WEIR_MUST_CHECK int storage_remove_dir(const struct storage_ops *ops,
                                       const char *dir,
                                       struct err_detail *ed);

#endif /* BROKER_STORAGE_STORAGE_OPS_H */
