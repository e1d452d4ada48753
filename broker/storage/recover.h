/* SPDX-License-Identifier: Apache-2.0 */
/* Recovery: rebuild what a segment holds by reading its batches, because
 * the log is the only truth and indexes are derived from it.
 * Locality: the owning plog's thread. */
#ifndef BROKER_STORAGE_RECOVER_H
#define BROKER_STORAGE_RECOVER_H

#include <stdint.h>

#include "broker/storage/seg.h"
#include "common/err.h"

enum recover_mode {
    RECOVER_TRUNCATE, /* cut the .log at the first invalid byte (the active
                         segment: torn or unsynced tail) */
    RECOVER_REFUSE,   /* an invalid byte is corruption: WEIR_ECORRUPT */
};

/* Scan the whole .log of s: every batch must lie within the file, pass
 * batch_validate (CRC, records) and continue the offsets densely from the
 * segment base. Rebuilds s->idx, size, next_offset, last_batch_base and
 * max_timestamp; index files are not written. At the first invalid byte,
 * RECOVER_TRUNCATE cuts the file there (a trace names file, position,
 * offset and reason) and adds the bytes cut to *cut; RECOVER_REFUSE
 * returns WEIR_ECORRUPT saying the same. Errors: WEIR_EIO, WEIR_ESTORAGE,
 * WEIR_ECORRUPT, WEIR_ENOMEM. */
WEIR_MUST_CHECK int recover_segment(struct seg *s,
                                    enum recover_mode mode,
                                    uint32_t index_interval_bytes,
                                    uint64_t *cut,
                                    struct err_detail *ed);

/* Load the index of a closed segment whose size and next_offset are known,
 * rebuilding it from the log (RECOVER_REFUSE) when the files are missing
 * or doubtful. Errors: as recover_segment, plus WEIR_ECORRUPT when the
 * batches do not end exactly at next_offset. */
WEIR_MUST_CHECK int recover_ensure_index(struct seg *s,
                                         uint32_t index_interval_bytes,
                                         struct err_detail *ed);

/* Rebuild the index of a closed segment from its log (RECOVER_REFUSE),
 * which must end exactly at next_offset and size, and rewrite the files.
 * Errors: as recover_segment, plus WEIR_ECORRUPT for a mismatched end. */
WEIR_MUST_CHECK int recover_rebuild_index(struct seg *s,
                                          uint32_t index_interval_bytes,
                                          struct err_detail *ed);

/* Cheap check that a closed segment ends exactly at next_offset: read the
 * last .index entry and walk batch headers from there to the file end.
 * WEIR_ECORRUPT on any doubt (the caller then rebuilds the index, which
 * scans the whole segment and refuses a real mismatch). */
WEIR_MUST_CHECK int recover_check_end(struct seg *s, struct err_detail *ed);

/* After a clean shutdown: load the active segment's index and walk batch
 * headers from its last entry to the end of the file to find next_offset.
 * WEIR_ECORRUPT when anything does not line up; the caller then runs
 * recover_segment instead. */
WEIR_MUST_CHECK int recover_clean_tail(struct seg *s,
                                       uint32_t index_interval_bytes,
                                       struct err_detail *ed);

/* What recover_verify found: every batch of [from, end) is valid; when
 * bad, the batch at bad_pos (= end) is not, for the reason in why. */
struct recover_verdict {
    uint64_t end; /* batch boundary reached: >= to, or the size */
    bool bad;
    uint64_t bad_pos;   /* byte position of the first invalid batch */
    int64_t bad_offset; /* its base offset, or the expected one; -1 when
                           neither is known */
    struct err_detail why;
};

/* Check the batches of s from byte `from` (a batch boundary) until the
 * first boundary at or past `to` (or the segment end) the way recovery
 * does (bounds, CRC-32C, records, offsets continuing and inside the
 * segment's), stopping at the first invalid one. Nothing is changed.
 * Returns non-zero only for I/O and memory errors (in ed); a bad batch is
 * reported in *v. */
WEIR_MUST_CHECK int recover_verify(const struct seg *s,
                                   uint64_t from,
                                   uint64_t to,
                                   struct recover_verdict *v,
                                   struct err_detail *ed);

#endif /* BROKER_STORAGE_RECOVER_H */
