/* SPDX-License-Identifier: Apache-2.0 */
/* A process's data directory: created if missing (with its parents) and
 * locked with flock(2) on <dir>/.lock for the life of the process, so two
 * processes never share one directory. */
#ifndef COMMON_DATADIR_H
#define COMMON_DATADIR_H

#include "common/err.h"

/* Create dir (mkdir -p) and take its lock; *fd_out holds it (close to
 * release). Errors: WEIR_EIO (cannot create or open: the message names the
 * path and the call), WEIR_ECONFIG (in use by another process). */
WEIR_MUST_CHECK int
datadir_lock(const char *dir, int *fd_out, struct err_detail *ed);

#endif /* COMMON_DATADIR_H */
