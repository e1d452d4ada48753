/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory storage_ops with fault injection, for storage tests.
 * Models a file system with a page cache: every file keeps its current
 * bytes and the bytes of its last fsync; every directory keeps its current
 * entries and those of its last fsync_dir. mem_storage_crash() replaces the
 * current state by the durable one, as a power failure would: unsynced
 * writes and unsynced creates, renames and unlinks are lost.
 * Faults: fail the Nth call of a kind (or of any kind) with an errno, a
 * pwrite that writes part of its bytes before failing (disk full), tearing
 * the last write, and raw corruption of file bytes.
 * Locality: one test thread. */
#ifndef TESTS_LIB_MEM_STORAGE_H
#define TESTS_LIB_MEM_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/storage/storage_ops.h"
#include "common/buf.h"

enum mem_op {
    MEM_OP_ANY = 0,
    MEM_OP_OPEN,
    MEM_OP_PREAD,
    MEM_OP_PWRITE,
    MEM_OP_FSYNC,
    MEM_OP_TRUNCATE,
    MEM_OP_SIZE,
    MEM_OP_MKDIR,
    MEM_OP_RENAME,
    MEM_OP_UNLINK,
    MEM_OP_RMDIR,
    MEM_OP_FSYNC_DIR,
    MEM_OP_LIST,
    MEM_OP_COUNT /* number of kinds */
};

struct mem_storage;

/* An empty file system holding only the root directory "/". */
struct mem_storage *mem_storage_new(void);
/* Frees everything; files still open are freed too. NULL is a no-op. */
void mem_storage_free(struct mem_storage *ms);
/* The vtable; valid while ms lives. */
const struct storage_ops *mem_storage_ops(struct mem_storage *ms);

/* Fail the nth call of kind op from now on (1 = the next one; MEM_OP_ANY
 * counts every call) with err_no; sticky: every matching call after it
 * fails too. For a pwrite, `partial` bytes are written before the failure
 * (a disk filling up mid-write). One fault is armed at a time. */
void mem_storage_fail(struct mem_storage *ms,
                      enum mem_op op,
                      unsigned long nth,
                      int err_no,
                      size_t partial,
                      bool sticky);
void mem_storage_fail_clear(struct mem_storage *ms);
/* Calls of kind op since creation (MEM_OP_ANY: all). */
unsigned long mem_storage_calls(const struct mem_storage *ms, enum mem_op op);
/* Bytes returned by pread since creation. */
uint64_t mem_storage_bytes_read(const struct mem_storage *ms);
/* Calls that failed through injection. */
unsigned long mem_storage_failed(const struct mem_storage *ms);
/* What free_bytes reports from now on (default UINT64_MAX); writes are
 * not limited by it (inject ENOSPC with mem_storage_fail). */
void mem_storage_set_free_bytes(struct mem_storage *ms, uint64_t n);

/* Power failure: keep only what was fsynced (file bytes and directory
 * entries). Handles still open keep pointing at their (reverted) files. */
void mem_storage_crash(struct mem_storage *ms);
/* Make everything durable, as if every file and directory were synced. */
void mem_storage_sync_all(struct mem_storage *ms);
/* Keep only the first `keep` bytes of the last pwrite (of any file): the
 * rest of it reverts to what was there, or is cut if it grew the file.
 * Current contents only. Returns -1 when there was no write. */
int mem_storage_tear_last_write(struct mem_storage *ms, size_t keep);

/* Raw edits of a file's current and durable bytes, as disk corruption
 * would make them; off may be the size (append). -1 if path is no file. */
int mem_storage_write_raw(struct mem_storage *ms,
                          const char *path,
                          uint64_t off,
                          const void *data,
                          size_t n);
/* n pseudo-random bytes from seed at off. */
int mem_storage_garbage(struct mem_storage *ms,
                        const char *path,
                        uint64_t off,
                        size_t n,
                        uint32_t seed);
int mem_storage_truncate_raw(struct mem_storage *ms,
                             const char *path,
                             uint64_t size);
/* Current size, or -1 when path is not a file. */
int64_t mem_storage_size_of(struct mem_storage *ms, const char *path);
/* Current bytes appended to out; -1 when path is not a file. */
int mem_storage_read_raw(struct mem_storage *ms,
                         const char *path,
                         struct weir_buf *out);
/* Files open right now. */
size_t mem_storage_open_files(const struct mem_storage *ms);

/* Every current path below the root, depth first, e.g. "/data/t-0". */
typedef void (*mem_storage_walk_fn)(void *arg, const char *path, bool is_dir);
void mem_storage_walk(struct mem_storage *ms,
                      mem_storage_walk_fn fn,
                      void *arg);

#endif /* TESTS_LIB_MEM_STORAGE_H */
