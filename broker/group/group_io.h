/* SPDX-License-Identifier: Apache-2.0 */
/* The group coordinator's adapter: joins group_core (membership, one per
 * group) to the broker. It owns the groups of the __consumer_offsets
 * partitions this broker leads: loads a partition when it becomes its
 * leader (requests for its groups are answered
 * COORDINATOR_LOAD_IN_PROGRESS meanwhile), drops it when it stops leading,
 * parks JoinGroup/SyncGroup requests until the core answers them, keeps
 * committed offsets in memory (OffsetFetch answers from there), and writes
 * commits and group metadata to the offsets partition: a commit is
 * answered once it is below the partition's high watermark (acks=all), and
 * only then is it visible to OffsetFetch; the joins and syncs of a
 * rebalance are answered once its group record is (group_io_persist.c).
 * Handlers take ownership of the decoded request r and answer req once.
 * Locality: broker loop thread. */
#ifndef BROKER_GROUP_GROUP_IO_H
#define BROKER_GROUP_GROUP_IO_H

#include "broker/broker.h"

struct group_io; /* opaque */
struct plog;

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int group_io_new(struct broker *b, struct group_io **out);
/* Answers everything parked with NOT_COORDINATOR and every appended
 * commit still waiting with NOT_COORDINATOR_AFTER_APPEND, frees.
 * NULL is a no-op. */
void group_io_free(struct group_io *g);

/* The log of a partition moved (high watermark or durable end): answer the
 * commits now committed. */
void group_io_complete_waits(struct group_io *g);
/* Writes to log failed (flush error, leadership lost): answer them with
 * an indefinite code (they were appended): NOT_COORDINATOR_AFTER_APPEND
 * for a lost leadership, IO for any other definite code. */
void group_io_fail_log(struct group_io *g,
                       const struct plog *log,
                       int code,
                       const char *msg);

void group_io_find_coordinator(struct group_io *g,
                               struct srv_req *req,
                               Weir__Request *r);
void group_io_join(struct group_io *g, struct srv_req *req, Weir__Request *r);
void group_io_sync(struct group_io *g, struct srv_req *req, Weir__Request *r);
void group_io_heartbeat(struct group_io *g,
                        struct srv_req *req,
                        Weir__Request *r);
void group_io_leave(struct group_io *g, struct srv_req *req, Weir__Request *r);
void group_io_offset_commit(struct group_io *g,
                            struct srv_req *req,
                            Weir__Request *r);
void group_io_offset_fetch(struct group_io *g,
                           struct srv_req *req,
                           Weir__Request *r);
void group_io_list(struct group_io *g, struct srv_req *req, Weir__Request *r);
void group_io_describe(struct group_io *g,
                       struct srv_req *req,
                       Weir__Request *r);
void group_io_delete(struct group_io *g, struct srv_req *req, Weir__Request *r);

#endif /* BROKER_GROUP_GROUP_IO_H */
