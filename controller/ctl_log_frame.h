/* SPDX-License-Identifier: Apache-2.0 */
/* One frame of metadata.log, encoded and decoded: pure (no file calls),
 * fuzzed (tests/fuzz/fuzz_ctl_log_frame.c). Every frame is
 *   u32be body length | u32be CRC-32C of body | body
 * and the body comes in two versions, told apart by its first byte:
 *   version 0 (first byte 0x00-0x7f; what a single controller writes):
 *     a batch = i64be first offset | u32be count |
 *               count x (u32be length | meta_record encoding)
 *   version 1 (first byte 0x81; a Raft entry):
 *     u8 0x81 | u8 type | u64be index | u64be term | data
 *     type NORMAL (1): data = a batch, as in version 0
 *     type NOOP (2): no data
 *     type READMIT (3): data = u32be id | u64be nonce
 * A version-0 frame is a term-0 NORMAL entry whose index is implied: one
 * index per frame, dense, counted from the snapshot's index (see
 * ctl_log.h). Locality: any thread (no state). */
#ifndef CONTROLLER_CTL_LOG_FRAME_H
#define CONTROLLER_CTL_LOG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/meta/meta_record.h"
#include "controller/quorum/raft.h"

#define CTL_LOG_FRAME_HEAD    8  /* body length, CRC */
#define CTL_LOG_BODY_HEAD     12 /* a batch: first offset, count */
#define CTL_LOG_V1_HEAD       18 /* version, type, index, term */
#define CTL_LOG_V1            0x81
#define CTL_LOG_READMIT_BYTES 12
#define CTL_LOG_MAX_BODY      (64u * 1024 * 1024 + CTL_LOG_V1_HEAD)

/* What ctl_log_frame_decode found at the start of the bytes. */
enum ctl_log_frame_status {
    CTL_LOG_FRAME_OK = 0,
    CTL_LOG_FRAME_SHORT,      /* fewer bytes than the head or the length */
    CTL_LOG_FRAME_BAD_LENGTH, /* a length no frame can have */
    CTL_LOG_FRAME_BAD_CRC,    /* whole, but the CRC fails */
    CTL_LOG_FRAME_BAD_BODY,   /* CRC holds, a field is wrong (ed says) */
};

/* A decoded frame; the slices point into the decoded bytes. */
struct ctl_log_frame {
    uint8_t version;           /* 0 or 1 */
    enum raft_entry_type type; /* version 0: NORMAL */
    uint64_t index;            /* version 0: 0 (implied by position) */
    uint64_t term;             /* version 0: 0 */
    struct weir_slice data;    /* the entry's data (version 0: the body) */
    int64_t first;             /* NORMAL: the batch's first offset */
    uint32_t count;            /* NORMAL: records in the batch (>= 1) */
    uint32_t id;               /* READMIT */
    uint64_t nonce;            /* READMIT (!= 0) */
    size_t frame_bytes;        /* head + body */
};

/* Decode the frame at the start of p (untrusted, len bytes), checking
 * every field: lengths, CRC, version, type, index in [1, RAFT_LIMIT),
 * term below RAFT_LIMIT, a batch's record lengths adding up exactly, count
 * >= 1, first offset >= 0 and first + count not overflowing, READMIT id in
 * 1..RAFT_MAX_ID and nonce != 0. The records themselves are not decoded
 * (meta_record_decode does that when they are applied). BAD_BODY fills ed
 * (WEIR_ECORRUPT); the other failures leave it alone. */
enum ctl_log_frame_status ctl_log_frame_decode(const uint8_t *p,
                                               size_t len,
                                               struct ctl_log_frame *f,
                                               struct err_detail *ed);

/* Check a batch (i64be first | u32be count | records), as the decoder
 * does. Errors: WEIR_ECORRUPT (ed says which field). */
WEIR_MUST_CHECK int ctl_log_frame_check_batch(const uint8_t *p,
                                              size_t len,
                                              int64_t *first,
                                              uint32_t *count,
                                              struct err_detail *ed);

/* Append a version-0 frame of n >= 1 records (the first at offset first).
 * Errors: WEIR_EINVALID_ARGUMENT (a record that does not encode, a batch
 * past CTL_LOG_MAX_BATCH), WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_frame_put_batch(struct weir_buf *b,
                                            const struct meta_record *recs,
                                            uint32_t n,
                                            int64_t first,
                                            struct err_detail *ed);

/* Append a version-1 frame for e, after checking it as the decoder would.
 * Errors: WEIR_EINVALID_ARGUMENT (ed says), WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_frame_put_entry(struct weir_buf *b,
                                            const struct raft_entry *e,
                                            struct err_detail *ed);

/* The Raft head of the snapshot file, in front of the chain values
 * (ctl_chain.h) and the image:
 *   u32be magic 0x574d5253 ("WMRS") | u8 version (0) | u64be index |
 *   u64be term | u8 n (<= RAFT_MAX_VOTERS) | n x u64be admitted |
 *   u32be CRC-32C of the above
 * A snapshot file without it was written before Raft: index and term 0,
 * nobody readmitted. */
#define CTL_LOG_SNAP_MAGIC 0x574d5253u

struct ctl_log_snap_head {
    uint64_t index; /* the last entry the snapshot holds (0: none) */
    uint64_t term;
    uint64_t admitted[RAFT_MAX_VOTERS]; /* raft_snapshot.admitted */
};

void ctl_log_snap_head_put(struct weir_buf *b,
                           const struct ctl_log_snap_head *h);

/* Read the head at the start of p (untrusted). No magic there: *h zeros,
 * *used 0. Checks the version, n, the CRC, index and term below
 * RAFT_LIMIT, and term 0 when index is 0. Errors: WEIR_ECORRUPT. */
WEIR_MUST_CHECK int ctl_log_snap_head_decode(const uint8_t *p,
                                             size_t len,
                                             struct ctl_log_snap_head *h,
                                             size_t *used,
                                             struct err_detail *ed);

#endif /* CONTROLLER_CTL_LOG_FRAME_H */
