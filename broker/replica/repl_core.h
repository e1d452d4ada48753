/* SPDX-License-Identifier: Apache-2.0 */
/* Vocabulary shared by the pure replication state machines (repl_leader,
 * repl_follower, repl_epochs): limits, sentinels, replica id sets and the
 * fetch parameters a follower sends and a leader validates. Nothing here
 * reads a clock, a socket or a file (STYLE 2.7).
 * Locality: broker loop thread only (plain data, no shared state). */
#ifndef BROKER_REPLICA_REPL_CORE_H
#define BROKER_REPLICA_REPL_CORE_H

#include <stdbool.h>
#include <stdint.h>

#define REPL_MAX_REPLICAS 16 /* replicas per partition */

#define REPL_EPOCH_NONE  ((int32_t)-1) /* no leader epoch (empty log) */
#define REPL_OFFSET_NONE ((int64_t)-1) /* offset unknown / undefined */
#define REPL_TICK_NEVER  UINT64_MAX    /* no timer needed */

/* A set of broker ids, kept in the order given (replica order matters for
 * elections and for stable proposals). At most REPL_MAX_REPLICAS ids, each
 * >= 0, no duplicates (repl_ids_is_valid). Plain value: copy freely. */
struct repl_ids {
    uint32_t n;
    int32_t ids[REPL_MAX_REPLICAS];
};

/* True when n is within the limit, every id is >= 0 and none repeats. */
bool repl_ids_is_valid(const struct repl_ids *s);
bool repl_ids_contains(const struct repl_ids *s, int32_t id);
/* True when every id of `sub` is in `set`. */
bool repl_ids_is_subset(const struct repl_ids *sub, const struct repl_ids *set);
/* Same members, in any order. */
bool repl_ids_same_members(const struct repl_ids *a, const struct repl_ids *b);
/* Append id unless present. False when the set is full. */
bool repl_ids_add(struct repl_ids *s, int32_t id);
/* Remove id if present, keeping the order of the others. */
void repl_ids_remove(struct repl_ids *s, int32_t id);

/* What a follower sends with each fetch, and what the leader validates
 * (KIP-320). The contract for durability: a follower sends fetch_offset X
 * only once everything below X is durable on it under its flush policy
 * (fsynced for flush=ack; appended for flush=none). The leader therefore
 * takes X both as the follower's log end offset and as its durable end
 * offset when computing the high watermark. repl_follower_next_fetch
 * enforces this on the follower side. */
struct repl_fetch_params {
    int32_t replica;              /* broker id of the follower */
    int64_t fetch_offset;         /* follower's log end offset */
    int32_t last_fetched_epoch;   /* latest epoch in its epoch cache, or
                                     REPL_EPOCH_NONE for an empty cache */
    int32_t current_leader_epoch; /* follower's view of the leader epoch */
};

#endif /* BROKER_REPLICA_REPL_CORE_H */
