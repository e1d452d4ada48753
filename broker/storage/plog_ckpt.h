/* SPDX-License-Identifier: Apache-2.0 */
/* The small checkpoint files of a partition log, as pure text codecs:
 *   recovery-point-offset-checkpoint  "0\n<offset>\n"
 *   fsync-failed-offset               "0\n<offset>\n"
 *   cleaner-offset-checkpoint         "0\n<clean offset>\n<n>\n" then n
 *                                     lines "<offset> <wall ms>\n"
 * "0" is the format version. Numbers are strict decimals (common/decimal.h):
 * offsets and counts have no sign, wall times may be negative. Nothing
 * else is accepted: no spaces, no '+', no NUL, nothing after the last
 * newline. What a caller does with a refused file is its own choice (a
 * full recovery scan, no cut, a clean-all pass), never a guess at a value.
 * Locality: any thread; no I/O. */
#ifndef BROKER_STORAGE_PLOG_CKPT_H
#define BROKER_STORAGE_PLOG_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define PLOG_CLEAN_MARKS_MAX     32
#define PLOG_CKPT_OFFSET_MAX_LEN 64   /* bytes of an offset file, and more */
#define PLOG_CKPT_CLEANER_MAX    4096 /* bytes of a cleaner checkpoint, max */

/* "The cleaned part reached offset `offset` at wall time `wall_ms`": when
 * a tombstone entered the cleaned part, for delete_retention_ms. */
struct plog_clean_mark {
    int64_t offset;
    int64_t wall_ms;
};

/* A decoded cleaner checkpoint. */
struct plog_ckpt_cleaner {
    int64_t clean_offset; /* offsets below were compacted at least once */
    uint32_t n_marks;     /* <= PLOG_CLEAN_MARKS_MAX */
    struct plog_clean_mark marks[PLOG_CLEAN_MARKS_MAX]; /* ascending offsets */
};

/* text[0..len): one offset file (recovery point or fsync-failed note);
 * path only names the file in messages. Success: *out >= 0. Errors:
 * WEIR_ECORRUPT, with ed naming path and the byte offset; *out untouched. */
WEIR_MUST_CHECK int plog_ckpt_parse_offset(const char *text,
                                           size_t len,
                                           const char *path,
                                           int64_t *out,
                                           struct err_detail *ed);

/* The text of an offset file for offset (>= 0) into buf[0..cap); *len
 * gets its length (no NUL counted). Errors: WEIR_EINVALID_ARGUMENT (a
 * negative offset, or cap too small). */
WEIR_MUST_CHECK int
plog_ckpt_format_offset(int64_t offset, char *buf, size_t cap, size_t *len);

/* text[0..len): a cleaner checkpoint. Mark offsets must be strictly
 * ascending; at most PLOG_CLEAN_MARKS_MAX of them. Errors: WEIR_ECORRUPT as
 * for plog_ckpt_parse_offset; *out is then unspecified. */
WEIR_MUST_CHECK int plog_ckpt_parse_cleaner(const char *text,
                                            size_t len,
                                            const char *path,
                                            struct plog_ckpt_cleaner *out,
                                            struct err_detail *ed);

/* The text of a cleaner checkpoint into buf[0..cap). Errors:
 * WEIR_EINVALID_ARGUMENT (c not what the parser accepts, or cap too
 * small). */
WEIR_MUST_CHECK int plog_ckpt_format_cleaner(const struct plog_ckpt_cleaner *c,
                                             char *buf,
                                             size_t cap,
                                             size_t *len);

#endif /* BROKER_STORAGE_PLOG_CKPT_H */
