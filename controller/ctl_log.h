/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's metadata log on disk, in one directory:
 *   snapshot      a Raft head (ctl_log_frame.h: index, term and
 *                 readmission table of its last entry; a quorum member
 *                 writes it, a single controller does not: missing, index
 *                 and term are 0), chain values
 *                 (ctl_chain.h), then meta_snapshot bytes (written to
 *                 snapshot.tmp, fsynced, renamed, directory fsynced: never
 *                 half there)
 *   metadata.log  the entries after the snapshot, each framed as
 *                   u32be body length | u32be CRC-32C of body | body
 *                 version 0 (a single controller writes these):
 *                   body = i64be first offset | u32be count |
 *                          count x (u32be length | meta_record encoding)
 *                 version 1 (a quorum member, ctl_log_raft.h): the body
 *                 also carries the entry's Raft index, term and type
 *                 (NORMAL: a batch as above; NOOP; READMIT), see
 *                 ctl_log_frame.h
 * Raft indexes: every frame is one entry. A version-0 frame is a term-0
 * NORMAL entry whose index is implied: dense, one per frame, the first
 * after the snapshot at the snapshot's index + 1. A single controller's
 * snapshots have no Raft head (index 0), so its indexes restart at each
 * snapshot: they mean nothing until its history is sealed for a quorum
 * (ctl_log_raft_seal: a snapshot of term 1 at the last index).
 * A batch is one ctl_core step: replay sees it whole or not at all. Open
 * loads the snapshot, replays the log after it and cuts a torn tail off
 * the file: a last frame that is short or ends exactly at the end of the
 * file but fails its CRC, or zeros after the last whole frame; the bytes
 * cut are first saved to metadata.log.cut-<byte> (fsynced). A frame that
 * fails its CRC (or has an impossible length) with bytes after it, or
 * with a CRC-valid frame anywhere after it, is damage in the middle: open
 * refuses, naming the file and the byte. A CRC-valid frame with a field
 * out of range is damage too. Entries at or before the snapshot's index
 * are skipped (a crash between a snapshot and the log's rewrite); when
 * the log holds the entry at the snapshot's index with another term, the
 * entries after it are stale (an installed snapshot replaced them) and
 * are cut as a torn tail is. A log or snapshot of term > 0 belongs to a
 * quorum member: ctl_log_open refuses it (WEIR_ECONFIG). The
 * records applied since the snapshot are also kept in memory, encoded as
 * brokers fetch them (u32be length | record), so a FetchMetadata is a
 * copy. Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_LOG_H
#define CONTROLLER_CTL_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/meta/meta_image.h"
#include "controller/meta/meta_record.h"

#define CTL_LOG_FILE      "metadata.log"
#define CTL_SNAPSHOT_FILE "snapshot"
#define CTL_LOG_MAX_BATCH (64u * 1024 * 1024) /* bytes of one batch */

struct ctl_log; /* opaque */

/* What open found, for the start-up trace. */
struct ctl_log_stats {
    int64_t snapshot_end; /* offset the snapshot reached; 0 = none */
    uint32_t batches;     /* replayed from metadata.log */
    uint64_t cut_bytes;   /* torn tail removed */
    uint64_t cut_at_byte; /* where the cut began */
    char cut_file[128];   /* the cut bytes were saved here (in the dir) */
};

/* Open (creating dir if missing) and rebuild the image: snapshot, then the
 * log. Success: *out owns the log, *img (caller owns) is the image.
 * Every entry is applied as it is read.
 * Errors: WEIR_EIO (a system call failed: the message names it),
 * WEIR_ECORRUPT (bad snapshot, a bad frame before the last one, a
 * CRC-valid batch that does not apply, a gap between the snapshot and the
 * log), WEIR_ECONFIG (a quorum member's log: term > 0), WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_open(const char *dir,
                                 struct ctl_log **out,
                                 struct meta_image **img,
                                 struct ctl_log_stats *stats,
                                 struct err_detail *ed);
/* Close the file and free. NULL is a no-op. */
void ctl_log_close(struct ctl_log *l);

/* Rebuild the image from disk again (after the core ran ahead of the log).
 * Same errors as open. */
WEIR_MUST_CHECK int ctl_log_reload(struct ctl_log *l,
                                   struct meta_image **img,
                                   struct err_detail *ed);

/* Append the records of one step (the first at first_offset, which must be
 * the log's end offset) as one version-0 batch, then fsync; they count as
 * applied at once (the caller's core applied them). Nothing is kept in
 * memory unless the fsync succeeded; after a failure the file is cut back
 * to the end of the previous batch.
 * Errors: WEIR_EINVALID_ARGUMENT (offset gap, record that does not
 * encode, a log opened by ctl_log_raft_open), WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_append(struct ctl_log *l,
                                   const struct meta_record *recs,
                                   uint32_t n,
                                   int64_t first_offset,
                                   struct err_detail *ed);

/* Write a snapshot of img (the applied image: its end offset must equal
 * the log's end) atomically, as the entry last applied, then rewrite
 * metadata.log with the entries after it (none for a single controller).
 * A crash between the two leaves a log whose entries the snapshot already
 * holds: open skips them. Errors: WEIR_EIO, WEIR_ENOMEM,
 * WEIR_EINVALID_ARGUMENT. */
WEIR_MUST_CHECK int ctl_log_snapshot(struct ctl_log *l,
                                     const struct meta_image *img,
                                     struct err_detail *ed);

/* Offset of the first record still held (the snapshot's end offset). */
int64_t ctl_log_start_offset(const struct ctl_log *l);
/* Offset of the next record. */
int64_t ctl_log_end_offset(const struct ctl_log *l);
/* The chain value at offset (controller/meta/meta_chain.h), known from
 * ctl_log_chain_first to the end offset; META_CHAIN_UNKNOWN elsewhere. */
int64_t ctl_log_chain_at(const struct ctl_log *l, int64_t offset);
int64_t ctl_log_chain_first(const struct ctl_log *l);
/* Records applied since the last snapshot (or open). */
uint64_t ctl_log_records_since_snapshot(const struct ctl_log *l);

/* Append to out the records from `from` (start <= from <= end) on, each
 * as u32be length | record, stopping before max_bytes would be passed (at
 * least one record is copied when any is there). *count gets how many.
 * Errors: WEIR_EINVALID_ARGUMENT (from outside the held range),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_read(const struct ctl_log *l,
                                 int64_t from,
                                 uint32_t max_bytes,
                                 struct weir_buf *out,
                                 uint32_t *count);

#endif /* CONTROLLER_CTL_LOG_H */
