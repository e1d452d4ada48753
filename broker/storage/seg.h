/* SPDX-License-Identifier: Apache-2.0 */
/* One segment of a partition log: <base>.log holding whole record batches
 * back to back, plus its .index and .timeindex (seg_index.h). The active
 * (last) segment keeps its index files open for appends; closed segments
 * hold only the .log open and load their index on first use.
 * Invariant: bytes [0, size) of the .log are valid batches with dense
 * offsets base_offset .. next_offset - 1.
 * Locality: the owning plog's thread. */
#ifndef BROKER_STORAGE_SEG_H
#define BROKER_STORAGE_SEG_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/storage/seg_index.h"
#include "broker/storage/storage_ops.h"
#include "common/batch.h"
#include "common/err.h"

/* Byte ranges [from, to) of whole batches known to be valid: checked by
 * recovery, by a read or the scrub (CRC-32C, bounds, offsets), or written
 * by this process after plog_append validated them. */
#define SEG_VERIFIED_SPANS 8
struct seg_span {
    uint64_t from;
    uint64_t to;
};

struct seg {
    const struct storage_ops *ops;
    const char *dir;            /* borrowed from the owning plog */
    int64_t base_offset;        /* from the file name */
    int64_t next_offset;        /* one past the last offset held */
    int64_t last_batch_base;    /* base offset of the last batch, -1: empty */
    uint64_t size;              /* bytes of valid batches in the .log */
    int64_t max_timestamp;      /* largest batch max timestamp, or
                                   SEG_NO_TIMESTAMP */
    int64_t created_wall_ms;    /* age rolls count from here */
    uint64_t bytes_since_index; /* .log bytes since the last offset entry */
    struct storage_file *log;   /* owned */
    struct storage_file *index_file; /* owned; open while active, or NULL */
    struct storage_file *time_file;  /* likewise */
    struct seg_index idx;
    bool index_loaded; /* idx holds the whole index of [0, size) */
    bool dirty;        /* .log changed since its last fsync */
    bool sparse;       /* compacted log: batches may skip offsets, and a
                          closed segment's batches may end before
                          next_offset (the next segment's base) */
    struct seg_span verified[SEG_VERIFIED_SPANS]; /* ascending, disjoint,
                                                     never touching */
    uint32_t n_verified;
};

/* "<dir>/<base as %020lld><ext>" into out (STORAGE_PATH_MAX).
 * Errors: WEIR_EINVALID_ARGUMENT (too long). */
WEIR_MUST_CHECK int seg_path(const char *dir,
                             int64_t base,
                             const char *ext,
                             char *out,
                             struct err_detail *ed);
/* True when name is exactly 20 digits followed by ext; *base gets them. */
bool seg_parse_name(const char *name, const char *ext, int64_t *base);

/* Create an empty segment (its .log must be missing or empty: a non-empty
 * one is refused with WEIR_ECORRUPT rather than overwritten), with open,
 * emptied index files. Errors: WEIR_EIO, WEIR_ESTORAGE, WEIR_ENOMEM. */
WEIR_MUST_CHECK int seg_create(const struct storage_ops *ops,
                               const char *dir,
                               int64_t base,
                               int64_t wall_ms,
                               struct seg **out,
                               struct err_detail *ed);
/* Open an existing .log; size is its file size, next_offset is unknown
 * (set to base) and the index is not loaded. */
WEIR_MUST_CHECK int seg_open(const struct storage_ops *ops,
                             const char *dir,
                             int64_t base,
                             struct seg **out,
                             struct err_detail *ed);
/* Close files and free. NULL is a no-op. */
void seg_free(struct seg *s);
/* Unlink the .log, then the index files. Fails only when the .log stays;
 * index files that cannot be removed are traced (orphans are removed by
 * the next open). */
WEIR_MUST_CHECK int seg_delete_files(const struct storage_ops *ops,
                                     const char *dir,
                                     int64_t base,
                                     struct err_detail *ed);

/* Read and decode the batch header at pos; the batch must end within size.
 * Errors: WEIR_EIO, WEIR_ECORRUPT (naming file and position). */
WEIR_MUST_CHECK int seg_read_header(const struct seg *s,
                                    uint64_t pos,
                                    struct batch_header *h,
                                    struct err_detail *ed);

/* Account for a batch now at pos (the end of the segment): offsets, size,
 * max timestamp and index entries. The caller reserved one entry of each
 * index kind (seg_index_reserve). */
void seg_note_batch(struct seg *s,
                    const struct batch_header *h,
                    uint64_t pos,
                    uint32_t index_interval_bytes);

/* Open (creating) the index files and cut them to the entries written. */
WEIR_MUST_CHECK int seg_open_index_files(struct seg *s, struct err_detail *ed);
void seg_close_index_files(struct seg *s);
/* Append entries not yet in the (open) index files. */
WEIR_MUST_CHECK int seg_write_index(struct seg *s, struct err_detail *ed);
/* Replace both index files with the in-memory entries and fsync them;
 * files that were closed are closed again afterwards. */
WEIR_MUST_CHECK int seg_rewrite_index(struct seg *s, struct err_detail *ed);
/* Read both index files and check them against size and next_offset (and
 * the last offset entry against the batch it names). Any doubt gives
 * WEIR_ECORRUPT: the caller rebuilds from the log. */
WEIR_MUST_CHECK int
seg_load_index(struct seg *s, uint64_t span, struct err_detail *ed);
/* max_timestamp from the last .timeindex entry without loading the rest.
 * Errors: WEIR_ECORRUPT when that cannot be trusted. */
WEIR_MUST_CHECK int seg_load_max_timestamp(struct seg *s,
                                           struct err_detail *ed);

/* fsync the .log if it changed. */
WEIR_MUST_CHECK int seg_fsync(struct seg *s, struct err_detail *ed);
/* fsync both (open) index files. */
WEIR_MUST_CHECK int seg_fsync_index(struct seg *s, struct err_detail *ed);
/* Before a segment is closed (roll, shutdown): add the final time entry,
 * so the last one carries the segment's max timestamp, and write pending
 * entries to the open index files. No fsync. */
WEIR_MUST_CHECK int seg_finish_index(struct seg *s, struct err_detail *ed);

/* Record [from, to) as verified (merged with the spans it touches; when
 * all SEG_VERIFIED_SPANS are taken a span that merges with none is
 * forgotten, which only means checking it again). */
void seg_verified_add(struct seg *s, uint64_t from, uint64_t to);
/* Forget what lies at or past size (truncation). */
void seg_verified_cut(struct seg *s, uint64_t size);
/* The first byte at or past from (below s->size) not verified, with the
 * end of that unverified run in *gap_end; s->size when there is none. */
uint64_t
seg_verified_gap(const struct seg *s, uint64_t from, uint64_t *gap_end);

#endif /* BROKER_STORAGE_SEG_H */
