/* SPDX-License-Identifier: Apache-2.0 */
/* Partition log: record batches in segment files under one directory
 * (<data_dir>/<topic>-<partition>/). Segments are named by their 20-digit
 * base offset (.log), each with a sparse offset index (.index: relative
 * offset u32 | file position u32, one entry per index_interval_bytes) and a
 * time index (.timeindex: max timestamp i64 | relative offset u32).
 * Assigns dense offsets; callers never choose them. Indexes are derived
 * data: rebuilt on recovery, never trusted over the log.
 * Locality: broker loop thread only. */
#ifndef BROKER_STORAGE_PLOG_H
#define BROKER_STORAGE_PLOG_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/storage/storage_ops.h"
#include "common/batch.h"
#include "common/buf.h"
#include "common/err.h"

struct plog; /* opaque */

enum plog_flush_policy {
    PLOG_FLUSH_ACK,      /* fsync before acknowledging (group commit) */
    PLOG_FLUSH_INTERVAL, /* fsync every flush_ms or flush_messages */
    PLOG_FLUSH_NEVER,    /* leave it to the OS; fsync on roll and close */
};

/* cleanup.policy bits: what housekeeping does to closed segments. */
#define PLOG_CLEANUP_DELETE  0x1 /* retention by time and size */
#define PLOG_CLEANUP_COMPACT 0x2 /* keep the last record per key */

struct plog_config {
    uint64_t segment_bytes;        /* roll past this size */
    int64_t segment_ms;            /* roll when the active segment is older */
    int64_t retention_ms;          /* -1 = keep forever */
    int64_t retention_bytes;       /* -1 = no size limit */
    uint32_t index_interval_bytes; /* bytes between offset index entries */
    uint32_t max_batch_bytes;      /* largest batch accepted */
    enum plog_flush_policy flush_policy;
    int64_t flush_ms;              /* PLOG_FLUSH_INTERVAL: time bound */
    int64_t flush_messages;        /* PLOG_FLUSH_INTERVAL: count bound */
    uint32_t cleanup_policy;       /* PLOG_CLEANUP_* bits, at least one */
    int64_t delete_retention_ms;   /* tombstones live this long once cleaned */
    int64_t min_compaction_lag_ms; /* records younger stay uncompacted */
    double min_cleanable_dirty_ratio; /* dirty / closed bytes to compact */
};

void plog_config_defaults(struct plog_config *cfg);

/* Open or create the log in dir (created if missing). If the last close was
 * not clean, scans every segment from the one holding the recovery point:
 * validates each batch (bounds, CRC, offsets dense and increasing),
 * rebuilds its indexes, and truncates the log at the first invalid byte
 * (trace says file, position and why). `wall_ms` stamps new segments.
 * Success: *out owns the log. Errors: WEIR_EIO, WEIR_ESTORAGE,
 * WEIR_ECORRUPT (refuses to open: e.g. a segment file name that is not
 * 20 digits, or offsets going backwards between segments), WEIR_ENOMEM. */
WEIR_MUST_CHECK int plog_open(const struct storage_ops *ops,
                              const char *dir,
                              const struct plog_config *cfg,
                              int64_t wall_ms,
                              struct plog **out,
                              struct err_detail *ed);

/* Write checkpoints (recovery point = end offset) and a clean-shutdown
 * marker after an fsync, so the next open skips the recovery scan; then
 * close files and free. True when the marker was written; false for an
 * offline log or a failed fsync or write (the next open recovers). NULL
 * is a no-op (true). */
bool plog_close(struct plog *log);
/* Close without the clean marker (as a crash would leave it; for tests). */
void plog_free(struct plog *log);

/* Append a sequence of batches (whole, as received from a producer) to the
 * log. Validates every batch (batch_validate), then assigns offsets by
 * patching base offset and leader epoch in `batches` in place, and writes
 * them with one write. Rolls the segment first when it is full or old.
 * On success *base is the first offset assigned and *last the last.
 * Nothing is written when any batch is invalid.
 * Errors: WEIR_ECORRUPT_MESSAGE, WEIR_EMESSAGE_TOO_LARGE,
 * WEIR_EUNSUPPORTED_VERSION, WEIR_EIO, WEIR_ESTORAGE (disk full: the
 * partial write is cut off again, the log stays as it was). */
WEIR_MUST_CHECK int plog_append(struct plog *log,
                                uint8_t *batches,
                                size_t len,
                                int32_t leader_epoch,
                                int64_t wall_ms,
                                int64_t *base,
                                int64_t *last,
                                struct err_detail *ed);

/* Append batches a follower fetched from its leader, KEEPING their base
 * offsets and leader epochs (no re-stamping). Validates every batch as
 * plog_append does, except for max_batch_bytes (the leader accepted the
 * batch: a follower must not refuse it), and requires the offsets to increase
 * from the log end: the first base offset >= plog_end_offset(log), each next
 * one > the previous last offset. A base past that skips offsets the leader's
 * cleaner removed (Kafka's appendAsFollower); the log end moves past the
 * gap, and the log is marked sparse for good first (cleaner checkpoint).
 * Rolls segments like plog_append.
 * On success *last is the last offset written (end offset - 1).
 * Nothing is written when any batch is invalid or out of place.
 * Errors: as plog_append, plus WEIR_EOFFSET_OUT_OF_RANGE (a batch starting
 * below the log end or overlapping the one before). */
WEIR_MUST_CHECK int plog_append_replica(struct plog *log,
                                        const uint8_t *batches,
                                        size_t len,
                                        int64_t wall_ms,
                                        int64_t *last,
                                        struct err_detail *ed);

/* Offsets: start = first offset still held, end = next offset to assign. */
int64_t plog_start_offset(const struct plog *log);
int64_t plog_end_offset(const struct plog *log);
/* End offset covered by the last fsync. */
int64_t plog_durable_offset(const struct plog *log);
/* Appended records not yet fsynced. */
int64_t plog_unflushed_messages(const struct plog *log);
/* Bytes held in all segments. */
uint64_t plog_size_bytes(const struct plog *log);
uint32_t plog_segment_count(const struct plog *log);
/* True when the last open ran a recovery scan (unclean shutdown). */
bool plog_recovered(const struct plog *log);

/* fsync what was appended (every segment with unsynced data) and advance
 * the durable offset; writes the recovery-point checkpoint.
 * Errors: WEIR_EIO, WEIR_ESTORAGE. */
WEIR_MUST_CHECK int plog_flush(struct plog *log, struct err_detail *ed);

/* Where to read for a fetch: whole batches starting with the batch that
 * holds `offset`, ending before `max_offset` (exclusive, e.g. the high
 * watermark), at most max_bytes - but always at least the first batch, so a
 * consumer can make progress past a batch larger than max_bytes.
 * The range lies in one segment; the next read continues in the next.
 * out->bytes == 0 when offset == max_offset (nothing yet).
 * Errors: WEIR_EOFFSET_OUT_OF_RANGE (offset < start or > end), WEIR_EIO. */
struct plog_read_result {
    struct storage_file *file; /* borrowed; valid until the next call that
                                  can delete segments (retention, delete) */
    int fd;                    /* OS descriptor or -1 (memory storage) */
    uint64_t position;         /* byte position of the first batch */
    uint32_t bytes;            /* whole batches */
    int64_t first_offset;      /* base offset of the first batch */
};
WEIR_MUST_CHECK int plog_read(struct plog *log,
                              int64_t offset,
                              int64_t max_offset,
                              uint32_t max_bytes,
                              struct plog_read_result *out,
                              struct err_detail *ed);
/* Copy the bytes of a read result into buf (for memory storage, tests and
 * the CLI-less paths). */
WEIR_MUST_CHECK int plog_read_copy(struct plog *log,
                                   const struct plog_read_result *r,
                                   struct weir_buf *buf,
                                   struct err_detail *ed);

/* Header of every batch from the one holding from_offset to the end of
 * the log, in order, for scans that need no record data (rebuilding the
 * idempotent producer state). Reads headers only, through a small buffer.
 * fn returns 0 to go on; anything else stops the scan and is returned.
 * Errors: WEIR_EOFFSET_OUT_OF_RANGE, WEIR_EIO, WEIR_ECORRUPT, WEIR_ENOMEM. */
typedef int (*plog_scan_fn)(void *arg, const struct batch_header *h);
WEIR_MUST_CHECK int plog_scan(struct plog *log,
                              int64_t from_offset,
                              plog_scan_fn fn,
                              void *arg,
                              struct err_detail *ed);
/* Where a scan for records with timestamps >= ts may start: the base
 * offset of the first segment that is not wholly older (by its max
 * timestamp; unknown counts as recent), or of the active segment. */
int64_t plog_scan_start_for_time(const struct plog *log, int64_t ts);

/* First offset whose record timestamp is >= ts, by the time index then a
 * scan of the batches (records of uncompressed batches are read one by one;
 * a compressed batch counts as a whole, by its max timestamp).
 * *offset = -1 and *found_ts = -1 when there is none; else *found_ts is that
 * record's timestamp. Errors: WEIR_EIO. */
WEIR_MUST_CHECK int plog_offset_for_time(struct plog *log,
                                         int64_t ts,
                                         int64_t *offset,
                                         int64_t *found_ts,
                                         struct err_detail *ed);

/* Delete closed segments (never the active one) whose newest record is
 * older than retention_ms, then the oldest closed ones while the total
 * exceeds retention_bytes - but never a segment holding an offset at or
 * above keep_from (the partition's high watermark: what is not committed
 * yet, or not yet copied by every in-sync replica, stays). *deleted
 * counts them. Errors: WEIR_EIO, WEIR_ELOG_OFFLINE. */
WEIR_MUST_CHECK int plog_enforce_retention(struct plog *log,
                                           int64_t wall_ms,
                                           int64_t keep_from,
                                           uint32_t *deleted,
                                           struct err_detail *ed);

/* Compaction (plog_compact.c), for logs with PLOG_CLEANUP_COMPACT: keep
 * the last record of every key in the closed segments (records with a null
 * key stay; tombstones go delete_retention_ms after they were first
 * cleaned), preserving offsets and timestamps. Offsets removed leave gaps:
 * a read at one returns the next record kept. */
struct plog_compact_stats {
    uint32_t segments;     /* segments rewritten */
    uint64_t bytes_before; /* of those segments */
    uint64_t bytes_after;
    uint64_t records_removed;
};
/* keep_from is the partition's high watermark: a segment holding an
 * offset at or above it is neither cleaned nor read for the key map, so
 * no record that is not committed yet (a failover may still cut it)
 * decides that an older, committed one goes (retention's bound, see
 * plog_enforce_retention).
 * True when compaction is configured and enough of the closed segments
 * older than min_compaction_lag_ms and wholly below keep_from is dirty
 * (not cleaned yet). */
bool plog_compact_needed(struct plog *log, int64_t wall_ms, int64_t keep_from);
/* One cleaning pass over the closed segments wholly below keep_from (the
 * active one is never touched). Each rewritten segment is swapped in
 * crash-safely (see docs/storage.md, Compaction). Does nothing when not
 * needed. Errors: WEIR_EIO, WEIR_ESTORAGE, WEIR_ECORRUPT, WEIR_ENOMEM; a
 * failure leaves every segment either as it was or cleaned. */
WEIR_MUST_CHECK int plog_compact(struct plog *log,
                                 int64_t wall_ms,
                                 int64_t keep_from,
                                 struct plog_compact_stats *st,
                                 struct err_detail *ed);

/* Roll when the active segment is older than segment_ms and not empty
 * (called from a timer so idle partitions roll too). */
WEIR_MUST_CHECK int
plog_maybe_roll(struct plog *log, int64_t wall_ms, struct err_detail *ed);

/* Remove every batch at or after offset (replication truncation; tests). */
WEIR_MUST_CHECK int
plog_truncate_to(struct plog *log, int64_t offset, struct err_detail *ed);

/* Drop every segment and start an empty log whose next offset (and start)
 * is `offset` (plog_restart.c; a follower behind its leader's log start).
 * Crash-safe: a crash midway leaves a log that opens, holding a run of
 * the old segments, nothing (a fresh log at 0), or the new empty one.
 * Errors: WEIR_EINVALID_ARGUMENT (offset < 0), WEIR_ESTORAGE (offline),
 * WEIR_EIO; when the new segment cannot be made after the old ones went,
 * the log is taken offline. */
WEIR_MUST_CHECK int plog_restart_at(struct plog *log,
                                    int64_t offset,
                                    int64_t wall_ms,
                                    struct err_detail *ed);

/* Change configuration of an open log (topic config altered). */
void plog_set_config(struct plog *log, const struct plog_config *cfg);
const struct plog_config *plog_config(const struct plog *log);
const char *plog_dir(const struct plog *log);

/* Offline (plog_offline.c). After a failed write, fsync, truncate,
 * unlink or checkpoint of the log, or a read that met a batch failing its
 * CRC, the log is offline: it takes no appends and serves no reads (both
 * answer WEIR_ELOG_OFFLINE) until plog_recover brings it back. A failed
 * fsync is never retried: the page cache state is unknown after it. */
enum plog_offline_cause {
    PLOG_ONLINE = 0,
    PLOG_OFFLINE_IO,      /* a storage call failed (EIO, ENOSPC, EROFS) */
    PLOG_OFFLINE_CORRUPT, /* a batch failed verification */
    PLOG_OFFLINE_REPLICA, /* the files are fine, but the replica cannot
                             lead in its current leadership (a stale
                             epoch, no memory): offline, so the controller
                             moves the leadership (repl_io_part_failed) */
};

/* Take the log offline because of err (a weir_err; the text `why` names
 * the file and call, or the reason). The cause follows err: corrupt for
 * WEIR_ECORRUPT(_MESSAGE), io for the errors a failing disk gives
 * (WEIR_EIO, WEIR_ESTORAGE, WEIR_ENOT_FOUND), replica for anything else.
 * The first cause stays; later calls only trace. Calls the offline
 * hook. */
void plog_mark_offline(struct plog *log, int err, const char *why);
/* A storage call about the log made outside it (its leader-epoch
 * checkpoint) failed with err: take the log offline as a failing call of
 * its own would (plog_failed: not for WEIR_ENOMEM or
 * WEIR_EINVALID_ARGUMENT, which say nothing about the disk). True when the
 * log is offline now. */
bool plog_storage_failed(struct plog *log, int err, const char *why);
bool plog_is_offline(const struct plog *log);
enum plog_offline_cause plog_offline_cause(const struct plog *log);
/* Why it went offline ("" while online); valid until plog_recover. */
const char *plog_offline_reason(const struct plog *log);
/* Offline as corrupt: the base offset of the first batch found invalid
 * (-1 otherwise or when unknown). */
int64_t plog_corrupt_offset(const struct plog *log);
/* Called (once per transition) when the log goes offline, from inside the
 * failing call: the hook should only note it and act later. */
typedef void (*plog_offline_fn)(void *arg, struct plog *log);
void plog_set_offline_hook(struct plog *log, plog_offline_fn fn, void *arg);

/* Bring an offline log back, in place (the struct plog stays the same,
 * so pointers to it remain valid): open the directory again as after a
 * crash (recovery scan from the recovery point), then
 *   - after a failed fsync: cut the log to its durable offset (what the
 *     last successful fsync covered: later bytes may be lost);
 *   - when corrupt: cut the log at the first invalid batch (its segment
 *     truncated there, later segments deleted) - the records from there
 *     on must come from another replica;
 * and fsync all of it. On success *end_before and *end_after are the end
 * offsets before and after. The caller decides when (free space, role).
 * Errors: as plog_open, plus plog_truncate_to's; the log stays offline. */
WEIR_MUST_CHECK int plog_recover(struct plog *log,
                                 int64_t wall_ms,
                                 int64_t *end_before,
                                 int64_t *end_after,
                                 struct err_detail *ed);

/* Verification (plog_verify.c). Bytes this process did not write or scan
 * itself (closed segments after a clean start, the part of the active one
 * from before) are checked like recovery checks them (bounds, CRC-32C,
 * records, offsets) before plog_read first serves them, and by the scrub.
 * A batch that fails takes the log offline as corrupt. */

/* Check up to about budget bytes not yet verified, oldest first (whole
 * batches, so a little more). *checked says how many were read.
 * Errors: WEIR_ELOG_OFFLINE (offline, or it just went offline: corrupt
 * or unreadable), WEIR_ENOMEM. */
WEIR_MUST_CHECK int plog_scrub(struct plog *log,
                               uint64_t budget,
                               uint64_t *checked,
                               struct err_detail *ed);
/* True when every byte of the log is known valid (the scrub is done). */
bool plog_verified(const struct plog *log);

/* Check internal invariants (tests): offsets increase, indexes sorted and
 * inside their segments. Returns 0 or WEIR_ECORRUPT. */
int plog_check_invariants(const struct plog *log, struct err_detail *ed);

#endif /* BROKER_STORAGE_PLOG_H */
