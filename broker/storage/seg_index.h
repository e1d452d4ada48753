/* SPDX-License-Identifier: Apache-2.0 */
/* Sparse indexes of one segment, held in memory (growable arrays, empty
 * until used) and mirrored to the .index and .timeindex files, which are
 * derived data: checked on load and rebuilt from the log on any doubt.
 * Offsets are relative to the segment's base offset, positions are byte
 * positions in its .log; both fit in 32 bits (segments stay below 4 GiB).
 *   offset entry (u32be rel | u32be pos): the batch with base offset
 *     base + rel starts at pos. rel and pos strictly increase.
 *   time entry (i64be ts | u32be rel): every batch up to and including the
 *     one with base offset base + rel has max timestamp <= ts, and ts is
 *     the largest so far. ts and rel strictly increase.
 * Locality: the owning plog's thread. */
#ifndef BROKER_STORAGE_SEG_INDEX_H
#define BROKER_STORAGE_SEG_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define SEG_INDEX_ENTRY_BYTES 8
#define SEG_TIME_ENTRY_BYTES  12
#define SEG_NO_TIMESTAMP      INT64_MIN

struct seg_offset_entry {
    uint32_t rel; /* base offset of the batch - segment base */
    uint32_t pos; /* byte position of that batch in the .log */
};

struct seg_time_entry {
    int64_t ts;   /* max timestamp of the segment up to this batch */
    uint32_t rel; /* base offset of that batch - segment base */
};

struct seg_index {
    struct seg_offset_entry *off;
    uint32_t n_off;
    uint32_t cap_off;
    uint32_t off_written; /* leading entries already in the .index file */
    struct seg_time_entry *time;
    uint32_t n_time;
    uint32_t cap_time;
    uint32_t time_written; /* leading entries already in .timeindex */
};

void seg_index_init(struct seg_index *ix);
/* Frees the arrays; ix is empty afterwards (init state). */
void seg_index_fini(struct seg_index *ix);
/* Make room for `extra` more entries of each kind, so that the adds that
 * follow cannot fail. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int seg_index_reserve(struct seg_index *ix, uint32_t extra);
/* Appends; the caller reserved room and keeps the ordering rules. */
void seg_index_add_offset(struct seg_index *ix, uint32_t rel, uint32_t pos);
void seg_index_add_time(struct seg_index *ix, int64_t ts, uint32_t rel);

/* Position of the last offset entry with rel <= target, else 0. */
uint32_t seg_index_lookup(const struct seg_index *ix, uint32_t rel);
/* Count of leading offset entries with pos <= max_pos and rel < max_rel
 * (a prefix, as both increase). */
uint32_t seg_index_count_below(const struct seg_index *ix,
                               uint64_t max_pos,
                               uint64_t max_rel);
/* Relative offset from which a scan for the first record with timestamp
 * >= ts may start: rel of the last time entry whose ts is below it, or 0. */
uint32_t seg_index_time_lookup(const struct seg_index *ix, int64_t ts);
/* ts of the last time entry, or SEG_NO_TIMESTAMP. */
int64_t seg_index_last_ts(const struct seg_index *ix);

/* Drop offset entries at or past pos_end and time entries at or past
 * rel_end; written counts shrink with them. */
void seg_index_truncate(struct seg_index *ix,
                        uint32_t rel_end,
                        uint32_t pos_end);

/* Check ordering and bounds: pos < log_size, rel < span (offsets held by
 * the segment). Errors: WEIR_ECORRUPT saying which entry and why. */
WEIR_MUST_CHECK int seg_index_check(const struct seg_index *ix,
                                    uint64_t log_size,
                                    uint64_t span,
                                    struct err_detail *ed);

/* Replace the entries with those decoded from file bytes; entries count as
 * written. Checks as seg_index_check. Errors: WEIR_ECORRUPT (size not a
 * multiple of the entry size, or a check failed), WEIR_ENOMEM. */
WEIR_MUST_CHECK int seg_index_decode(struct seg_index *ix,
                                     struct weir_slice offsets,
                                     struct weir_slice times,
                                     uint64_t log_size,
                                     uint64_t span,
                                     struct err_detail *ed);
/* Encode entries from index `from` on (file layout) into b. */
void seg_index_encode_offsets(const struct seg_index *ix,
                              uint32_t from,
                              struct weir_buf *b);
void seg_index_encode_times(const struct seg_index *ix,
                            uint32_t from,
                            struct weir_buf *b);

#endif /* BROKER_STORAGE_SEG_INDEX_H */
