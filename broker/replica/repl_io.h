/* SPDX-License-Identifier: Apache-2.0 */
/* Data-plane adapter between the cluster control plane and the partition
 * logs (STYLE 2.7: thin, no replication decisions). It keeps, per hosted
 * partition, the role and leader epoch the controller assigned and the
 * leader-epoch cache (repl_epochs), checkpointed atomically in
 * <partition dir>/leader-epoch-checkpoint and reconciled with the log's
 * batch headers on load. A leader stamps its epoch into every batch it
 * appends (produce asks repl_io_leader_epoch) and runs the repl_leader
 * core (follower positions, ISR changes through the controller, the
 * replicated high watermark, acks=all). A follower runs the repl_follower
 * core, fed by a fetcher (fetcher.h) to its leader's broker. A partition
 * that cannot run its core (an epoch it has seen already, a failed
 * checkpoint or log write) is failed: LEADER_NOT_AVAILABLE, no HW
 * (docs/replication.md).
 * Locality: broker loop thread only. */
#ifndef BROKER_REPLICA_REPL_IO_H
#define BROKER_REPLICA_REPL_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/cluster/cluster.h"
#include "broker/replica/repl_leader.h"
#include "common/err.h"

struct broker;
struct plog;
struct repl_io; /* opaque */

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int repl_io_new(struct broker *b, struct repl_io **out);
/* NULL is a no-op. */
void repl_io_free(struct repl_io *io);

/* The cluster partition hook (arg = the repl_io): chains to the default
 * trace hook, then records role and epoch; on becoming leader loads the
 * epoch cache, records that the new epoch starts at the log end offset and
 * writes the checkpoint (a failure is traced; the cache stays in memory). */
void repl_io_on_partition(void *arg, const struct cluster_partition_state *st);

/* Leader epoch to stamp into batches appended to topic/partition: the
 * epoch of this broker's leadership, or 0 when it holds none (single
 * broker mode). io may be NULL. */
int32_t repl_io_leader_epoch(const struct repl_io *io,
                             const char *topic,
                             int32_t partition);

/* Leader side of a follower fetch (Kafka's epoch validation, KIP-320):
 * true when the follower's log, whose last batch has last_fetched_epoch
 * and which ends at fetch_offset, diverges from this leader's log; then
 * the follower must truncate to *end_offset (epoch *epoch) and fetch
 * again. Also true when fetch_offset is past this log's end. */
bool repl_io_diverging(struct repl_io *io,
                       const char *topic,
                       int32_t partition,
                       const struct plog *log,
                       int32_t last_fetched_epoch,
                       int64_t fetch_offset,
                       int32_t *epoch,
                       int64_t *end_offset);

/* The epoch cache of a hosted partition, or NULL (tests, fetch). */
const struct repl_epochs *
repl_io_epochs(const struct repl_io *io, const char *topic, int32_t partition);

/* Replicated high watermark of a partition this broker leads with a
 * leader core (repl_leader): true and *hw. A partition led here that
 * failed (no core): true and *hw = -1, none. Else false (not led here). */
bool repl_io_high_watermark(const struct repl_io *io,
                            const struct plog *log,
                            int64_t *hw);

/* The log's end or durable end may have moved (after an append or a
 * group-commit flush): tells the leader core, if any. io may be NULL. */
/* False while log is led here by a leader whose high watermark is not
 * established yet (it may be below one an earlier leader published):
 * "latest" offsets must not be answered then (OFFSET_NOT_AVAILABLE). */
bool repl_io_hw_established(const struct repl_io *io, const struct plog *log);

/* Requests to a partition this broker leads must also pass here (after
 * the metadata's leader check): WEIR_ELEADER_NOT_AVAILABLE (retriable,
 * msg says why) when it leads it without a leader core, i.e. the
 * partition failed; produce, consumer and follower fetches and
 * ListOffsets are refused then. 0 otherwise. io may be NULL. */
int repl_io_route(const struct repl_io *io,
                  const char *topic,
                  int32_t partition,
                  char *msg,
                  size_t msg_cap);

/* The logs of a topic are about to be deleted: forget its partitions
 * (leaders stop, waiting acks=all writes fail NOT_LEADER). */
void repl_io_drop_topic(struct repl_io *io, const char *topic);

void repl_io_log_moved(struct repl_io *io, const struct plog *log);

/* acks=all admission: *replicated when a leader core runs for the
 * partition (the write then waits for the high watermark); returns
 * WEIR_ENOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas,
 * else 0. io may be NULL. */
int repl_io_acks_all(const struct repl_io *io,
                     const char *topic,
                     int32_t partition,
                     bool *replicated);

/* Leader side of a follower fetch through the leader core: true with
 * *out when the core answered (the follower's position is recorded);
 * false when no core runs for the partition. */
bool repl_io_follower_fetch(struct repl_io *io,
                            const char *topic,
                            int32_t partition,
                            const struct repl_fetch_params *fp,
                            struct repl_fetch_answer *out);

/* The high watermark this broker knows for a partition it hosts: the
 * replicated one where it leads with a leader core, the one its leader
 * last reported where it follows (-1 before the first answer). False
 * when it keeps no such state (not a replica, or led without a core). */
bool repl_io_known_hw(const struct repl_io *io,
                      const char *topic,
                      int32_t partition,
                      int64_t *hw);

/* The log of a hosted partition came back online after a storage failure
 * (plog_recover), maybe shorter: epoch cache entries at or past its end
 * go (and the checkpoint is written again), and a follower's fetcher is
 * woken. io may be NULL. */
void repl_io_log_reopened(struct repl_io *io,
                          const char *topic,
                          int32_t partition,
                          struct plog *log);

#endif /* BROKER_REPLICA_REPL_IO_H */
