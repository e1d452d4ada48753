/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by repl_io.c and fetcher.c.
 * Locality: broker loop thread only. */
#ifndef BROKER_REPLICA_REPL_IO_INT_H
#define BROKER_REPLICA_REPL_IO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/cluster/cluster.h"
#include "broker/replica/repl_epochs.h"
#include "broker/replica/repl_io.h"

struct event;
struct fetcher;
struct plog;
struct repl_leader;
struct repl_io_lead;

struct repl_io_part {
    char *topic; /* owned */
    int64_t topic_id;
    int32_t partition;
    enum cluster_role role;
    int32_t leader; /* -1: none */
    int32_t leader_epoch;
    bool loaded; /* epochs read from the checkpoint (or none there) */
    struct repl_epochs epochs;
    struct repl_io_lead *lead; /* owned; leader with a repl_leader only */
    /* As a follower: the high watermark the leader last reported (-1 none).
     * A follower promoted to leader starts from it (capped at its log
     * end), so what consumers could read before the failover stays
     * readable; it is committed, so every ISR member holds it. */
    int64_t follower_hw;
};

struct repl_io {
    struct broker *b;
    struct repl_io_part **parts; /* owned; stable addresses (a
                                    repl_leader borrows p->epochs) */
    uint32_t n;
    uint32_t cap;
    struct fetcher **fetchers; /* owned; one per leader broker */
    uint32_t n_fetchers;
    struct event *wake_ev; /* deferred: complete waits after HW moved */
};

/* Load the part's epoch cache from the log's directory once. */
void repl_io_part_load(struct repl_io_part *p, const struct plog *log);
/* Write the part's epoch cache to <log dir>/leader-epoch-checkpoint;
 * failures are traced. */
void repl_io_part_store(const struct repl_io_part *p, const struct plog *log);

#endif /* BROKER_REPLICA_REPL_IO_INT_H */
