/* SPDX-License-Identifier: Apache-2.0 */
/* A process's data directory: created if missing (with its parents) and
 * locked with flock(2) on <dir>/.lock for the life of the process, so two
 * processes never share one directory. Also the small files a process
 * keeps beside its data (identity, markers, checkpoints): read whole,
 * written atomically (temp file, fsync, rename, directory fsync, so a
 * crash leaves the old file or the new one), removed durably. */
#ifndef COMMON_DATADIR_H
#define COMMON_DATADIR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define DATADIR_SMALL_MAX 65536 /* largest file datadir_read accepts */

/* mkdir -p dir. Errors: WEIR_EIO naming the path and the call. */
WEIR_MUST_CHECK int datadir_mkdirs(const char *dir, struct err_detail *ed);

/* Create dir (mkdir -p) and take its lock; *fd_out holds it (close to
 * release). Errors: WEIR_EIO (cannot create or open: the message names the
 * path and the call), WEIR_ECONFIG (in use by another process). */
WEIR_MUST_CHECK int
datadir_lock(const char *dir, int *fd_out, struct err_detail *ed);

/* Read dir/name (at most DATADIR_SMALL_MAX bytes) into a NUL-terminated
 * heap buffer (*out, mem_free; *len without the NUL). A missing file is
 * not an error: *found is false and *out NULL.
 * Errors: WEIR_EIO (the message names the file and the call),
 * WEIR_ECORRUPT (larger than DATADIR_SMALL_MAX), WEIR_ENOMEM. */
WEIR_MUST_CHECK int datadir_read(const char *dir,
                                 const char *name,
                                 char **out,
                                 size_t *len,
                                 bool *found,
                                 struct err_detail *ed);

/* Replace dir/name with n bytes atomically (dir/name.tmp, fsync, rename,
 * directory fsync). Errors: WEIR_EIO naming the file and the call. */
WEIR_MUST_CHECK int datadir_write(const char *dir,
                                  const char *name,
                                  const void *p,
                                  size_t n,
                                  struct err_detail *ed);

/* Remove dir/name and fsync dir, so the removal survives a crash. A
 * missing file is not an error. Errors: WEIR_EIO. */
WEIR_MUST_CHECK int
datadir_remove(const char *dir, const char *name, struct err_detail *ed);

/* Does dir/name exist? (stat; an error other than ENOENT counts as yes,
 * so a caller never takes an unreadable file for a missing one.) */
bool datadir_exists(const char *dir, const char *name);

#endif /* COMMON_DATADIR_H */
