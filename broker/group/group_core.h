/* SPDX-License-Identifier: Apache-2.0 */
/* Membership of one consumer group, as a pure state machine (STYLE 2.7):
 * JoinGroup / SyncGroup / Heartbeat / LeaveGroup / commit checks come in
 * as events stamped with the time; out come the answers to deliver (a
 * join or sync may be answered much later, when the rebalance completes),
 * whether the group's metadata must be persisted, and when to deliver the
 * next TICK. No clock, socket, file or random call.
 *
 * Durability: a rebalance is answered only once the group record that
 * holds its generation is committed. When the rebalance completes, the
 * core asks for a record (persist, with a persist_seq) and keeps every
 * join parked; the adapter writes the record and reports with a PERSISTED
 * event carrying that seq once it is below the high watermark (or that
 * the write failed). Only then are the joins answered. So a coordinator
 * that takes over loads a generation at least as new as any handed out,
 * and the next rebalance it completes has a new number: a generation id
 * never names two memberships. Likewise the leader's assignment is
 * answered to the syncs (and the group is STABLE) only once its record is
 * committed, so a successor restores the assignment the members hold. A
 * write that fails, or is not committed within the largest rebalance
 * timeout, answers what waits with the error (COORDINATOR_NOT_AVAILABLE
 * for the timeout) and the group prepares a new rebalance.
 *
 * States (Kafka's classic protocol):
 *   EMPTY                 no members (offsets may still be committed)
 *   PREPARING_REBALANCE   waiting for every known member to (re)join,
 *                         bounded by the largest rebalance timeout
 *   COMPLETING_REBALANCE  generation bumped, joins answered; waiting for
 *                         the leader's SyncGroup with the assignment
 *   STABLE                every member has its assignment
 *   DEAD                  deleted (DeleteGroups) or unloaded
 * Rules:
 *  - a join with member_id "" gets a new id (client_id + "-" + the
 *    adapter's unique token); any join from a new member, a leave, or a
 *    member whose session expired starts a rebalance; a join from a known
 *    member in STABLE or COMPLETING_REBALANCE does too;
 *  - the rebalance completes when every known member has a pending join,
 *    or when the rebalance timeout passes (members without a pending join
 *    are then removed); the generation is bumped, the protocol is the
 *    first of the leader's (the first joiner, or the previous leader if
 *    still there) that every member supports, and, once its record is
 *    committed, every pending join is answered (the leader's answer lists
 *    every member and its metadata); a join, leave or expiry before that
 *    starts the next round with the parked joins still parked;
 *  - syncs from followers wait for the leader's; the leader's sync sets
 *    every assignment, and once its record is committed the group is
 *    STABLE and every parked sync is answered;
 *  - a member not heard from (join, sync, heartbeat, commit) for its
 *    session timeout is removed; a member with a pending join is timed by
 *    the rebalance timeout instead;
 *  - heartbeats: STABLE and COMPLETING_REBALANCE answer OK for the current
 *    generation, PREPARING_REBALANCE (and COMPLETING_REBALANCE while the
 *    joins wait for their record) answers REBALANCE_IN_PROGRESS;
 *  - commits: generation -1 with member "" only while the group is EMPTY;
 *    else the member must be known and the generation current, and the
 *    group not in COMPLETING_REBALANCE (REBALANCE_IN_PROGRESS there);
 *  - errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
 *    INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, as Kafka; a new
 *    member beyond max_members gets POLICY_VIOLATION; every event to a
 *    DEAD group gets COORDINATOR_NOT_AVAILABLE.
 * Locality: broker loop thread (one instance per group). */
#ifndef BROKER_GROUP_GROUP_CORE_H
#define BROKER_GROUP_GROUP_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define GROUP_MAX_PROTOCOLS 8
#define GROUP_MAX_MEMBERS   1000

struct group_core; /* opaque */

struct group_config {
    uint32_t min_session_timeout_ms; /* 1000 */
    uint32_t max_session_timeout_ms; /* 300000 */
    /* an EMPTY group's first rebalance waits this long for more members
     * (Kafka's group.initial.rebalance.delay.ms) */
    uint32_t initial_rebalance_delay_ms; /* 0 */
    uint32_t max_members;                /* GROUP_MAX_MEMBERS */
};

void group_config_init(struct group_config *cfg);

enum group_state {
    GROUP_EMPTY,
    GROUP_PREPARING_REBALANCE,
    GROUP_COMPLETING_REBALANCE,
    GROUP_STABLE,
    GROUP_DEAD,
};

/* "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead". */
const char *group_state_name(enum group_state s);

enum group_event_type {
    GROUP_EV_TICK,
    GROUP_EV_JOIN,
    GROUP_EV_SYNC,
    GROUP_EV_HEARTBEAT,
    GROUP_EV_LEAVE,
    GROUP_EV_COMMIT,    /* check only: may this member commit now? */
    GROUP_EV_PERSISTED, /* the record of u.persisted.seq is committed, or
                           failed (u.persisted.error) */
};

struct group_protocol {
    const char *name;
    struct weir_slice metadata;
};

struct group_assignment {
    const char *member_id;
    struct weir_slice assignment;
};

/* Pointers are borrowed for the duration of group_core_step; the core
 * copies what it keeps. */
struct group_event {
    enum group_event_type type;
    uint64_t now_ms;     /* monotonic */
    uint64_t request_id; /* JOIN, SYNC: the adapter's handle for the
                            parked request, echoed in the answer */
    const char *member_id;
    int32_t generation_id; /* SYNC, HEARTBEAT, COMMIT */
    union {
        struct {
            const char *client_id;
            const char *client_host;
            const char *new_member_token; /* unique, for "" member ids */
            uint32_t session_timeout_ms;
            uint32_t rebalance_timeout_ms;
            const char *protocol_type;
            const struct group_protocol *protocols;
            size_t n_protocols;
        } join;
        struct {
            const struct group_assignment *assignments; /* leader only */
            size_t n_assignments;
        } sync;
        struct {
            uint64_t seq; /* an actions.persist_seq: that record and every
                             earlier one of this group are committed */
            int error;    /* 0, or why the write failed (then nothing is
                             known of it: COORDINATOR_NOT_AVAILABLE,
                             NOT_COORDINATOR, ...) */
        } persisted;
    } u;
};

/* One answer to a parked (or immediate) JOIN or SYNC. Strings and slices
 * point into the core and stay valid until the next step. */
struct group_member_view {
    const char *member_id;
    const char *client_id;
    const char *client_host;
    struct weir_slice metadata;   /* subscription for the chosen protocol */
    struct weir_slice assignment; /* empty until synced */
    uint32_t session_timeout_ms;
    uint32_t rebalance_timeout_ms;
};

struct group_answer {
    enum group_event_type type; /* GROUP_EV_JOIN or GROUP_EV_SYNC */
    uint64_t request_id;
    int error; /* 0 or an enum weir_err */
    /* JOIN */
    int32_t generation_id;
    const char *protocol;
    const char *leader_id;
    const char *member_id;
    const struct group_member_view *members; /* leader's answer only */
    size_t n_members;
    /* SYNC */
    struct weir_slice assignment;
};

/* What a step decided. The caller embeds it (group_actions_init once,
 * group_actions_fini at the end); every step resets it. */
struct group_actions {
    int result; /* the immediate answer to HEARTBEAT, LEAVE, COMMIT and to
                   a refused JOIN/SYNC; 0 when answered through answers[] */
    struct group_answer *answers;
    size_t n_answers;
    bool persist;          /* group metadata changed: write a group record (its
                              content: group_core_describe) */
    uint64_t persist_seq;  /* with persist: report the record's fate with a
                              PERSISTED event carrying this seq */
    uint64_t next_tick_ms; /* UINT64_MAX: none */
    /* private */
    size_t cap_answers;
};

void group_actions_init(struct group_actions *a);
void group_actions_fini(struct group_actions *a);

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int group_core_new(const struct group_config *cfg,
                                   const char *group_id,
                                   struct group_core **out);
void group_core_free(struct group_core *g);

/* Errors: WEIR_ENOMEM only (refusals are in out->result or the answers);
 * after an error the group is unchanged. */
WEIR_MUST_CHECK int group_core_step(struct group_core *g,
                                    const struct group_event *ev,
                                    struct group_actions *out);

/* Snapshot for DescribeGroups and for the persisted group record. */
struct group_view {
    enum group_state state;
    const char *protocol_type; /* "" when none */
    const char *protocol;      /* "" when none */
    int32_t generation_id;
    const char *leader_id; /* "" when none */
    const struct group_member_view *members;
    size_t n_members;
    /* COMPLETING_REBALANCE before the leader's assignment: the generation
     * is handed out, the assignment not yet (restore resumes there) */
    bool assignment_pending;
};
/* Valid until the next step. */
void group_core_describe(const struct group_core *g, struct group_view *v);
bool group_core_is_empty(const struct group_core *g);

/* Rebuild from a persisted group record after a coordinator change: the
 * group comes back STABLE (EMPTY without members; COMPLETING_REBALANCE,
 * waiting for the leader's sync, if v->assignment_pending) in its
 * generation, and every member gets a full session from now_ms.
 * Errors: WEIR_ENOMEM, WEIR_EINVALID_ARGUMENT. */
WEIR_MUST_CHECK int group_core_restore(struct group_core *g,
                                       const struct group_view *v,
                                       uint64_t now_ms);

/* DeleteGroups: DEAD if EMPTY (true), else unchanged (false). */
bool group_core_delete(struct group_core *g);

/* Tests: 0, or WEIR_ECORRUPT if an internal invariant is broken (one
 * leader iff members; STABLE members hold this generation's assignment;
 * joins parked only while preparing or while a completed rebalance waits
 * for its record, syncs only while completing). */
int group_core_check_invariants(const struct group_core *g);

#endif /* BROKER_GROUP_GROUP_CORE_H */
