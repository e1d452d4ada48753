/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct plog, shared by the plog_*.c files only.
 * Durability model: a segment is fsynced (log and indexes) before the next
 * one is created, so every closed segment is whole on disk and only the
 * active segment can hold a torn or lost tail. The recovery point
 * checkpoint therefore matters at segment granularity, and is rewritten
 * only when the durable offset moves into a newer segment.
 * Locality: broker loop thread only. */
#ifndef BROKER_STORAGE_PLOG_INT_H
#define BROKER_STORAGE_PLOG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_ckpt.h"
#include "broker/storage/seg.h"

#define PLOG_CLEAN_MARKER        "clean-shutdown"
#define PLOG_RECOVERY_CHECKPOINT "recovery-point-offset-checkpoint"
#define PLOG_CLEANER_CHECKPOINT  "cleaner-offset-checkpoint"
#define PLOG_CLEANED_EXT         ".cleaned" /* a compacted .log being made */
/* "0\n<durable offset>\n": written when an fsync of the log failed (the
 * end the last successful one covered), removed once an open has cut the
 * log back there and fsynced it. Not fsynced itself: it only has to
 * outlive the process (after a power loss the page cache it guards
 * against is gone too). */
#define PLOG_FSYNC_FAILED_CHECKPOINT "fsync-failed-offset"

struct plog {
    const struct storage_ops *ops;
    char *dir; /* owned */
    struct plog_config cfg;
    struct seg **segs; /* owned; ascending base offsets, last = active */
    uint32_t n_segs;
    uint32_t cap_segs;
    int64_t durable_offset;    /* end offset covered by the last fsync */
    int64_t checkpoint_offset; /* recovery point on disk; -1 = none */
    int64_t unflushed_messages;
    bool recovered;       /* the last open ran a recovery scan */
    bool compacted;       /* a cleaner checkpoint exists: segments may
                             skip offsets whatever the policy says */
    bool cleaner_loaded;  /* the fields below were read from disk */
    int64_t clean_offset; /* offsets below were compacted at least once */
    struct plog_clean_mark *clean_marks; /* owned; ascending offsets */
    uint32_t n_clean_marks;
    bool offline; /* a storage call failed or a batch is corrupt: no
                     appends, reads or changes until plog_recover */
    enum plog_offline_cause offline_cause;
    int offline_err;            /* weir_err of the failure */
    bool offline_sync;          /* an fsync failed: only durable_offset holds */
    int64_t corrupt_offset;     /* PLOG_OFFLINE_CORRUPT: first bad offset */
    int64_t corrupt_base;       /* ... base offset of its segment, -1 none */
    uint64_t corrupt_pos;       /* ... byte position of the bad batch */
    char offline_why[256];      /* for traces and error answers */
    plog_offline_fn offline_fn; /* hook, or NULL */
    void *offline_arg;
    bool verified_all; /* the scrub reached the end of the log */
};

static inline struct seg *plog_active(const struct plog *log)
{
    return log->segs[log->n_segs - 1];
}

/* Index of the segment holding offset: the last with base <= offset, or 0
 * when offset is below every base. */
uint32_t plog_seg_at(const struct plog *log, int64_t offset);
/* Append a segment to the array (consumes s, freeing it on failure).
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int
plog_push_seg(struct plog *log, struct seg *s, struct err_detail *ed);
/* "<dir>/<name>". */
WEIR_MUST_CHECK int plog_path(const struct plog *log,
                              const char *name,
                              char *out,
                              struct err_detail *ed);

/* plog_offline.c: a storage call on the log failed with rv (detail in
 * ed): unless it is ENOMEM or a bad argument, take the log offline (sync:
 * it was an fsync). Returns rv. */
int plog_failed(struct plog *log,
                int rv,
                bool sync,
                const struct err_detail *ed);

/* plog_offline.c: an fsync of the log failed: note its durable offset in
 * PLOG_FSYNC_FAILED_CHECKPOINT unless a note is there already (the first
 * failure's offset stands until a reopen cut there). Failures are traced:
 * the in-place recovery still cuts, only a restart would not. */
void plog_note_fsync_failed(struct plog *log);
/* plog_offline.c: the offset noted by plog_note_fsync_failed, or -1 when
 * there is none (or it is unreadable: traced, nothing is cut). */
int64_t plog_fsync_failed_offset(struct plog *log);
/* plog_offline.c: remove the note (after the cut and an fsync). */
WEIR_MUST_CHECK int plog_forget_fsync_failed(struct plog *log,
                                             struct err_detail *ed);

/* plog_compact.c: the log may skip offsets from now on (a replica append
 * with a gap the leader's cleaner made): write the cleaner checkpoint
 * first if there is none, so every later open knows the segments are
 * sparse whatever the policy says, and mark them so. A failure takes the
 * log offline. */
WEIR_MUST_CHECK int plog_mark_sparse(struct plog *log, struct err_detail *ed);

/* plog_verify.c: verify the parts of [from, to) of segment s not known
 * valid (from on a batch boundary). A bad batch takes the log offline as
 * corrupt (WEIR_ELOG_OFFLINE), so does a failed read; *checked grows by
 * the bytes read. */
WEIR_MUST_CHECK int plog_verify_range(struct plog *log,
                                      struct seg *s,
                                      uint64_t from,
                                      uint64_t to,
                                      uint64_t *checked,
                                      struct err_detail *ed);
/* plog_verify.c: a read of s near `offset` met an invalid header (rv is
 * WEIR_ECORRUPT): find the bad batch from the index entry before offset
 * and take the log offline as corrupt there. Returns the error for the
 * read (WEIR_ELOG_OFFLINE, or rv when nothing bad is found again). */
WEIR_MUST_CHECK int plog_corrupt_near(struct plog *log,
                                      struct seg *s,
                                      int64_t offset,
                                      int rv,
                                      struct err_detail *ed);

/* fsync a segment's .log (and its index files when `indexes`); a failure
 * takes the log offline. */
WEIR_MUST_CHECK int plog_sync_seg(struct plog *log,
                                  struct seg *s,
                                  bool indexes,
                                  struct err_detail *ed);
/* fsync the log directory; a failure takes the log offline. */
WEIR_MUST_CHECK int plog_sync_dir(struct plog *log, struct err_detail *ed);
/* WEIR_ELOG_OFFLINE when the log is offline. */
WEIR_MUST_CHECK int plog_check_online(const struct plog *log,
                                      struct err_detail *ed);
/* Write the recovery point checkpoint (atomically). */
WEIR_MUST_CHECK int
plog_write_checkpoint(struct plog *log, int64_t offset, struct err_detail *ed);
/* Rewrite the checkpoint when the durable offset lies in a newer segment
 * than the one on disk (or the one on disk is past the end). Failures are
 * traced, not returned: a stale checkpoint only makes recovery scan more. */
void plog_maybe_checkpoint(struct plog *log);
/* Make the index of segment s usable (closed segments load lazily). */
WEIR_MUST_CHECK int
plog_ensure_index(struct plog *log, struct seg *s, struct err_detail *ed);

/* plog_read.c: the batch of s holding offset (s's index loaded); for a
 * sparse segment the first batch past it when offset was compacted away,
 * or WEIR_ENOT_FOUND (ed untouched) when none follows in s. */
WEIR_MUST_CHECK int plog_find_batch(const struct seg *s,
                                    int64_t offset,
                                    uint64_t *pos,
                                    struct batch_header *h,
                                    struct err_detail *ed);

/* plog_read.c: the first batch holding offset or, where compaction
 * removed it, a later offset: segment index and position, walking on to
 * later segments past compacted ends. WEIR_ENOT_FOUND (ed untouched) when
 * no batch follows. */
WEIR_MUST_CHECK int plog_locate(struct plog *log,
                                int64_t offset,
                                uint32_t *seg,
                                uint64_t *pos,
                                struct batch_header *h,
                                struct err_detail *ed);

/* Seal the active segment and start a new one at the end offset. */
WEIR_MUST_CHECK int
plog_roll(struct plog *log, int64_t wall_ms, struct err_detail *ed);

/* plog_open.c: read the directory and bring every segment up (clean load
 * or recovery scan); fills log->segs. */
WEIR_MUST_CHECK int
plog_load(struct plog *log, int64_t wall_ms, struct err_detail *ed);

#endif /* BROKER_STORAGE_PLOG_INT_H */
