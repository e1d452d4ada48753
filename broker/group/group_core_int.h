/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the group core shared by group_core.c (step, rebalance)
 * and group_core_member.c (member memory, views, restore). Not for the
 * adapter. Memory that an answer may point at is never freed during a
 * step: it is "retired" onto g->dead and freed when the next step starts,
 * so answers stay valid until then even if their member left meanwhile.
 * Locality: broker loop thread. */
#ifndef BROKER_GROUP_GROUP_CORE_INT_H
#define BROKER_GROUP_GROUP_CORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/group/group_core.h"

/* First field of every retirable allocation. */
struct group_dead {
    struct group_dead *next;
};

/* A member's protocols, immutable once built. Refs: its member, and the
 * group while one of its names is the group's chosen protocol. */
struct group_protos {
    struct group_dead dead;
    uint32_t refs;
    size_t n;
    struct group_protocol p[GROUP_MAX_PROTOCOLS]; /* point into data[] */
    uint8_t data[];
};

struct group_bytes {
    struct group_dead dead;
    size_t len;
    uint8_t data[];
};

/* One member. Owner: the group's members[] (then g->dead once removed). */
struct group_member {
    struct group_dead dead;
    const char *member_id; /* these three point into strings[] */
    const char *client_id;
    const char *client_host;
    struct group_protos *protos;    /* one ref */
    struct group_bytes *assignment; /* NULL: none */
    int32_t assignment_generation;  /* generation of the assignment, -1 */
    uint32_t session_timeout_ms;
    uint32_t rebalance_timeout_ms;
    uint64_t last_heard_ms;   /* join, sync, heartbeat, commit, completion */
    bool join_pending;        /* PREPARING_REBALANCE, or COMPLETING while
                                 the joins wait for their record */
    bool sync_pending;        /* only in COMPLETING_REBALANCE */
    uint64_t join_request_id; /* valid when join_pending */
    uint64_t sync_request_id; /* valid when sync_pending */
    char strings[];
};

struct group_core {
    struct group_config cfg;
    char *group_id;
    enum group_state state;
    int32_t generation_id; /* 0 until the first rebalance completes */
    char *protocol_type;   /* "" while no member ever joined */
    struct group_protos *protocol_blob; /* holds the chosen name, or NULL */
    size_t protocol_idx;                /* in protocol_blob */
    struct group_member *leader;        /* NULL iff no members */
    struct group_member **members;      /* join order */
    uint32_t n_members;
    uint32_t cap_members;
    struct group_member_view *views; /* describe: refreshed after a step */
    uint32_t cap_views;
    struct group_member_view *answer_views; /* leaders' join answers */
    uint32_t n_answer_views;
    uint32_t cap_answer_views;
    uint64_t now_ms;                  /* latest time seen */
    uint64_t rebalance_start_ms;      /* entering PREPARING_REBALANCE */
    uint64_t rebalance_not_before_ms; /* initial rebalance delay */
    uint64_t persist_seq;             /* group records asked for so far */
    uint64_t hold_seq;         /* parked answers wait for this record to be
                                  committed; 0: none (COMPLETING only) */
    uint64_t hold_deadline_ms; /* then they get COORDINATOR_NOT_AVAILABLE */
    bool assigned; /* COMPLETING: the leader's assignment is in (the hold,
                      if any, is the syncs'; else the joins') */
    struct group_dead *dead; /* retired, freed at the next step */
};

void group_retire(struct group_core *g, void *p);
void group_free_dead(struct group_core *g);

WEIR_MUST_CHECK int group_protos_new(const struct group_protocol *p,
                                     size_t n,
                                     struct group_protos **out);
void group_protos_unref(struct group_core *g, struct group_protos *p);
/* Index of name in p, or -1. */
int group_protos_find(const struct group_protos *p, const char *name);

WEIR_MUST_CHECK int group_bytes_new(struct weir_slice s,
                                    struct group_bytes **out);

/* A member with id `prefix` "-" `token` (or just `id` when token is NULL)
 * and no protocols yet. */
WEIR_MUST_CHECK int group_member_new(const char *id,
                                     const char *token,
                                     const char *client_id,
                                     const char *client_host,
                                     struct group_member **out);
/* Free a member that was never in the group (no retiring). */
void group_member_free_unused(struct group_member *m);
/* Retire a removed member and what it holds. */
void group_member_retire(struct group_core *g, struct group_member *m);

/* What a step may install, allocated before anything changes. Whatever
 * is left here at the end was not used and is freed. */
struct group_draft {
    struct group_member *member;   /* JOIN with member id "" */
    struct group_protos *protos;   /* JOIN: the joiner's protocols */
    char *protocol_type;           /* JOIN: for a group without members */
    struct group_bytes **assigned; /* SYNC: parallel to the event's */
};

/* In group_core.c, for group_core_sync.c. */
struct group_answer *group_answer_add(struct group_actions *out,
                                      enum group_event_type type,
                                      uint64_t request_id,
                                      int error);
/* Answer whatever m has parked with `error`. */
void group_answer_parked(struct group_member *m,
                         int error,
                         struct group_actions *out);
void group_remove_at(struct group_core *g,
                     uint32_t i,
                     struct group_actions *out);
void group_prepare_rebalance(struct group_core *g,
                             uint64_t now_ms,
                             struct group_actions *out);
void group_try_complete(struct group_core *g,
                        uint64_t now_ms,
                        struct group_actions *out);
/* Ask for a group record; parked answers may wait for it (hold). */
void group_persist(struct group_core *g,
                   bool hold,
                   uint64_t now_ms,
                   struct group_actions *out);
void group_answer_joins(struct group_core *g,
                        uint64_t now_ms,
                        struct group_actions *out);

/* In group_core_sync.c: the events of known members and the records. */
void group_hold_fail(struct group_core *g,
                     int error,
                     uint64_t now_ms,
                     struct group_actions *out);
void group_on_sync(struct group_core *g,
                   const struct group_event *ev,
                   struct group_draft *d,
                   struct group_actions *out);
void group_on_persisted(struct group_core *g,
                        const struct group_event *ev,
                        struct group_actions *out);
void group_on_heartbeat(struct group_core *g,
                        const struct group_event *ev,
                        struct group_actions *out);
void group_on_leave(struct group_core *g,
                    const struct group_event *ev,
                    struct group_actions *out);
void group_on_commit(struct group_core *g,
                     const struct group_event *ev,
                     struct group_actions *out);

/* COMPLETING, the joins parked until the record of their generation is
 * committed (every member has a pending join). */
bool group_joins_held(const struct group_core *g);

/* Index of the member, or -1. */
int group_find(const struct group_core *g, const char *member_id);
const char *group_protocol_name(const struct group_core *g);
/* Fill v from m, with m's metadata for the chosen protocol. */
void group_member_view_fill(const struct group_core *g,
                            const struct group_member *m,
                            struct group_member_view *v);
void group_views_refresh(struct group_core *g);

#endif /* BROKER_GROUP_GROUP_CORE_INT_H */
