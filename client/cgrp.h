/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer group membership as a pure state machine: FindCoordinator,
 * JoinGroup, SyncGroup, OffsetFetch, then Heartbeat and periodic commits
 * until a rebalance, a fencing error or close. The core decides which
 * request to send and when; the adapter (consumer_group.c) builds and
 * sends them and feeds the replies back as events stamped with the time.
 * Invariant: at most one request of each kind in flight, and at most one
 * of Find/Join/Sync/OffsetFetch/Leave (the membership chain).
 * No clock, socket or allocation-free promise: strings are copied.
 * Locality: the consumer's thread. */
#ifndef CLIENT_CGRP_H
#define CLIENT_CGRP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum cgrp_state {
    CGRP_STATE_IDLE,     /* not subscribed */
    CGRP_STATE_JOIN,     /* JoinGroup to send or in flight */
    CGRP_STATE_SYNC,     /* SyncGroup to send or in flight */
    CGRP_STATE_OFFSETS,  /* assignment known; committed offsets wanted */
    CGRP_STATE_STABLE,   /* assigned: heartbeats and commits */
    CGRP_STATE_REVOKING, /* commit before giving the partitions up */
    CGRP_STATE_LEAVING,  /* close: final commit, then LeaveGroup */
    CGRP_STATE_CLOSED,
    CGRP_STATE_FAILED, /* a fatal error (bad config, protocol mismatch) */
};

enum cgrp_req {
    CGRP_REQ_FIND,
    CGRP_REQ_JOIN,
    CGRP_REQ_SYNC,
    CGRP_REQ_OFFSETS, /* OffsetFetch of the new assignment */
    CGRP_REQ_HEARTBEAT,
    CGRP_REQ_COMMIT,
    CGRP_REQ_LEAVE,
    CGRP_REQ_COUNT,
};

#define CGRP_BIT(req) (1u << (req))

struct cgrp_config {
    uint32_t session_timeout_ms;
    uint32_t heartbeat_interval_ms;
    uint32_t rebalance_timeout_ms;
    bool auto_commit;
    uint32_t auto_commit_interval_ms;
    uint32_t retry_backoff_ms;     /* first backoff after a failure */
    uint32_t retry_backoff_max_ms; /* doubling stops here */
};

/* A (topic, partition) the member owns; topic owned by the array. */
struct cgrp_tp {
    char *topic;
    int32_t partition;
};

enum cgrp_event_type {
    CGRP_EV_TICK,
    CGRP_EV_SUBSCRIBE, /* (re)join with the current subscription */
    CGRP_EV_COMMIT,    /* the application asks for a commit */
    CGRP_EV_CLOSE,     /* commit (auto), revoke, leave */
    CGRP_EV_REPLY,     /* the reply (or failure) of u.reply.req */
};

struct cgrp_event {
    enum cgrp_event_type type;
    uint64_t now_ms;
    struct {
        enum cgrp_req req;
        int err; /* transport error, or the body's error code */
        const char *err_msg;
        /* FIND */
        const char *host;
        uint16_t port;
        /* JOIN */
        int32_t generation;
        const char *member_id;
        const char *leader_id;
        const char *protocol;
        /* SYNC: borrowed, copied */
        const struct cgrp_tp *tps;
        size_t n_tps;
    } reply;
};

/* What the adapter does after a step, in this order. */
struct cgrp_actions {
    bool revoke;   /* give up cg->assigned (read it first): on_revoke */
    bool assign;   /* cg->assigned is new: positions from the committed
                      offsets kept from the OffsetFetch reply; on_assign */
    uint32_t send; /* CGRP_BIT(req) of requests to build and send now */
    int err;       /* to report to the application, 0 none */
    char err_msg[300];
    uint64_t next_ms; /* step again (TICK) by then; UINT64_MAX none */
};

struct cgrp {
    struct cgrp_config cfg;
    enum cgrp_state state;
    char *member_id; /* "" before the first join */
    int32_t generation;
    char *leader_id;
    char *protocol;
    bool coord_known;
    char *coord_host;
    uint16_t coord_port;
    uint32_t inflight;         /* CGRP_BIT of requests awaiting replies */
    uint64_t backoff_until_ms; /* membership chain waits until then */
    uint32_t backoff_ms;       /* current, doubles to the max */
    uint64_t next_heartbeat_ms;
    uint64_t next_commit_ms;  /* auto commit */
    uint64_t last_contact_ms; /* last heartbeat the coordinator answered */
    bool commit_wanted;       /* a commit to send when possible */
    bool revoke_committed;    /* REVOKING/LEAVING: the final commit done */
    bool final_commit_sent;   /* ... and sent (not an older one's reply) */
    bool leave_sent;
    struct cgrp_tp *assigned; /* owned partitions (valid in STABLE) */
    size_t n_assigned;
    struct cgrp_tp *pending; /* from SyncGroup, until OffsetFetch answers */
    size_t n_pending;
    bool has_assignment; /* assigned is live (between assign and revoke) */
};

void cgrp_init(struct cgrp *cg, const struct cgrp_config *cfg);
void cgrp_fini(struct cgrp *cg);

/* Apply one event. Errors: WEIR_ENOMEM (the state is unchanged). */
WEIR_MUST_CHECK int
cgrp_step(struct cgrp *cg, const struct cgrp_event *ev, struct cgrp_actions *a);

/* A member is fenced (its commits will be refused) by these. */
bool cgrp_is_fencing_err(int err);
/* Errors after which the coordinator must be looked up again. */
bool cgrp_is_coordinator_err(int err);
const char *cgrp_state_name(enum cgrp_state s);

#endif /* CLIENT_CGRP_H */
