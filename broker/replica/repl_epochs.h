/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-epoch cache (Kafka's LeaderEpochFileCache, KIP-101): for each
 * leader epoch that wrote into this replica's log, the offset of its first
 * record. Invariant: entries strictly increase in both epoch and start
 * offset. The replica's log and this cache move together: whoever truncates
 * the log truncates the cache (repl_epochs_truncate_from_end) before
 * appending again. Checkpointed as text in `leader-epoch-checkpoint`.
 * Locality: broker loop thread; embedded by the partition that owns it. */
#ifndef BROKER_REPLICA_REPL_EPOCHS_H
#define BROKER_REPLICA_REPL_EPOCHS_H

#include <stddef.h>
#include <stdint.h>

#include "broker/replica/repl_core.h"
#include "common/buf.h"
#include "common/err.h"

struct repl_epoch_entry {
    int32_t epoch;        /* leader epoch, >= 0 */
    int64_t start_offset; /* first offset written in this epoch, >= 0 */
};

/* Embed and init; fini frees. Fields are read-only outside repl_epochs*.c
 * (use the accessors). */
struct repl_epochs {
    struct repl_epoch_entry *entries; /* owned; see the invariant above */
    uint32_t n;                       /* entries in use */
    uint32_t cap;                     /* entries allocated */
};

/* Kafka's OffsetsForLeaderEpoch answer. */
struct repl_epoch_end {
    int32_t epoch;      /* largest known epoch <= the one asked for */
    int64_t end_offset; /* where that epoch ends: the next entry's start,
                           or the log end offset for the latest epoch */
};

void repl_epochs_init(struct repl_epochs *c);
void repl_epochs_fini(struct repl_epochs *c);

/* Room for `want` entries in all. Errors: WEIR_ENOMEM (cache unchanged). */
WEIR_MUST_CHECK int repl_epochs_reserve(struct repl_epochs *c, uint32_t want);

/* Record that `epoch` starts writing at start_offset. Ignored when epoch is
 * older than the latest (stale) or equal to it (the entry already says
 * where that epoch starts). A newer epoch first drops entries whose start
 * is >= start_offset (the new one supersedes them: typically an epoch that
 * a leader recorded but never wrote into). Errors: WEIR_EINVALID_ARGUMENT
 * (negative epoch or offset), WEIR_ENOMEM (cache unchanged). */
WEIR_MUST_CHECK int
repl_epochs_assign(struct repl_epochs *c, int32_t epoch, int64_t start_offset);

/* Latest epoch, or REPL_EPOCH_NONE when empty. */
int32_t repl_epochs_latest_epoch(const struct repl_epochs *c);
uint32_t repl_epochs_count(const struct repl_epochs *c);
/* Entry i (0 = oldest); i must be < count. Valid until the next change. */
const struct repl_epoch_entry *repl_epochs_entry(const struct repl_epochs *c,
                                                 uint32_t i);
/* Start offset of exactly `epoch`, or REPL_OFFSET_NONE. */
int64_t repl_epochs_start_offset(const struct repl_epochs *c, int32_t epoch);

/* End offset of `epoch` as Kafka's endOffsetFor: the largest epoch <= the
 * requested one and the start of the entry after it (log_end_offset when
 * it is the latest). When every entry is newer than the request, the
 * answer is (requested epoch, start of the first entry): this replica
 * holds nothing of that epoch at or past that offset. An empty cache or a
 * negative request gives (REPL_EPOCH_NONE, REPL_OFFSET_NONE). */
struct repl_epoch_end repl_epochs_end_offset_for(const struct repl_epochs *c,
                                                 int32_t epoch,
                                                 int64_t log_end_offset);

/* The log was cut at end_offset: drop entries starting at or after it.
 * Returns the number dropped. */
uint32_t repl_epochs_truncate_from_end(struct repl_epochs *c,
                                       int64_t end_offset);
/* The log now starts at start_offset (retention): drop entries wholly
 * before it and move the start of the one covering it to start_offset.
 * Returns the number dropped. */
uint32_t repl_epochs_truncate_from_start(struct repl_epochs *c,
                                         int64_t start_offset);
/* Drop every entry (the log was emptied). */
void repl_epochs_clear(struct repl_epochs *c);

/* Bring a cache read from its checkpoint in line with the log it
 * describes, [log_start, log_end), whose last batch carries
 * last_batch_epoch (REPL_EPOCH_NONE for an empty log). The checkpoint may
 * lag the log: a replica that crashed between flushing records of a new
 * epoch and writing the checkpoint (or lost the file) would otherwise
 * report an older last epoch, or none, and escape the leader's divergence
 * check (KIP-320). Returns REPL_OFFSET_NONE when the latest entry starting
 * below log_end is the last batch's epoch (the cache is unchanged: entries
 * at or past log_end stay, so a broker never leads those epochs again).
 * Otherwise drops those entries, clears the cache when its latest epoch
 * is newer than the last batch's (it does not describe this log), and
 * returns where a scan of batch headers must start, each header then
 * given to repl_epochs_assign(c, epoch, base): the start of the latest
 * entry (or log_start when that is earlier or the cache is empty). Pure:
 * the caller reads the headers. */
int64_t repl_epochs_reconcile(struct repl_epochs *c,
                              int64_t log_start,
                              int64_t log_end,
                              int32_t last_batch_epoch);

/* Replace dst's entries with a copy of src's. Errors: WEIR_ENOMEM (dst
 * unchanged). */
WEIR_MUST_CHECK int repl_epochs_copy(struct repl_epochs *dst,
                                     const struct repl_epochs *src);

/* Checkpoint text, as Kafka's leader-epoch-checkpoint:
 *   "0\n"                  format version
 *   "<count>\n"            number of entries
 *   "<epoch> <offset>\n"   count times, oldest first
 * Decimal, no signs, no leading zeros, single spaces, '\n' line ends:
 * exactly one valid spelling per cache, so decode(encode(c)) == c and
 * encode(decode(b)) == b. */
#define REPL_EPOCHS_FORMAT_VERSION 0

/* Append the checkpoint text to out. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int repl_epochs_encode(const struct repl_epochs *c,
                                       struct weir_buf *out);
/* Parse checkpoint bytes (untrusted: from disk). On success c holds the
 * decoded entries; on failure c is unchanged and ed says where the text
 * went wrong. Errors: WEIR_ECORRUPT (any deviation from the format above,
 * an unknown version, a count that does not match the lines, entries not
 * strictly increasing, numbers out of range), WEIR_ENOMEM. */
WEIR_MUST_CHECK int repl_epochs_decode(struct repl_epochs *c,
                                       const uint8_t *p,
                                       size_t len,
                                       struct err_detail *ed);

/* 0, or WEIR_ECORRUPT when the invariant is broken (tests). */
int repl_epochs_check_invariants(const struct repl_epochs *c);

#endif /* BROKER_REPLICA_REPL_EPOCHS_H */
