/* SPDX-License-Identifier: Apache-2.0 */
/* libweir admin calls: topics and offsets, synchronous: each call polls
 * until its replies come or its request times out (part of the public API;
 * include client/weir.h). Locality: the client's thread. */
#ifndef CLIENT_WEIR_ADMIN_H
#define CLIENT_WEIR_ADMIN_H

#include "client/weir_client.h"

struct weir_config_entry {
    char *key;
    char *value;
};

struct weir_new_topic {
    const char *name;
    int32_t partitions;
    int32_t replication_factor; /* 0 = broker default */
    const struct weir_config_entry *configs;
    size_t n_configs;
};

/* Errors: the broker's (WEIR_ETOPIC_EXISTS, WEIR_EINVALID_PARTITIONS, ...)
 * with its message, or transport errors. */
WEIR_MUST_CHECK int weir_admin_create_topic(struct weir_client *c,
                                            const struct weir_new_topic *t,
                                            struct err_detail *ed);
WEIR_MUST_CHECK int weir_admin_delete_topic(struct weir_client *c,
                                            const char *name,
                                            struct err_detail *ed);

struct weir_topic_list {
    size_t n;
    char **names; /* sorted */
};
WEIR_MUST_CHECK int weir_admin_list_topics(struct weir_client *c,
                                           bool include_internal,
                                           struct weir_topic_list **out,
                                           struct err_detail *ed);
void weir_topic_list_free(struct weir_topic_list *l);

struct weir_partition_desc {
    int32_t partition;
    int error_code; /* enum weir_err; the other fields may be unset */
    int32_t leader; /* broker id, -1 when none */
    int32_t leader_epoch;
    size_t n_replicas;
    int32_t *replicas;
    size_t n_isr;
    int32_t *isr;
    int64_t start_offset; /* log start offset */
    int64_t end_offset;   /* high watermark: next offset consumers see */
};

struct weir_topic_desc {
    char *name;
    bool internal;
    size_t n_partitions;
    struct weir_partition_desc *partitions; /* by partition number */
    size_t n_configs;
    struct weir_config_entry *configs;
};

/* Metadata with configs, then start/end offsets from each leader (falling
 * back to the metadata's log start and high watermark when a leader does
 * not answer). Errors: WEIR_EUNKNOWN_TOPIC_OR_PARTITION, transport. */
WEIR_MUST_CHECK int weir_admin_describe_topic(struct weir_client *c,
                                              const char *name,
                                              struct weir_topic_desc **out,
                                              struct err_detail *ed);
void weir_topic_desc_free(struct weir_topic_desc *d);

struct weir_offset_result {
    int32_t partition;
    int error_code;    /* enum weir_err */
    int64_t offset;    /* -1 when no record is at or after the timestamp */
    int64_t timestamp; /* of that record; -1 for earliest/latest */
};

/* Offsets of one topic by time: timestamp is WEIR_OFFSET_LATEST,
 * WEIR_OFFSET_EARLIEST or ms since the epoch. partition -1 = all, sorted.
 * Success: *out (weir_offsets_free) holds *n results. */
WEIR_MUST_CHECK int weir_admin_list_offsets(struct weir_client *c,
                                            const char *topic,
                                            int32_t partition,
                                            int64_t timestamp,
                                            struct weir_offset_result **out,
                                            size_t *n,
                                            struct err_detail *ed);
void weir_offsets_free(struct weir_offset_result *r);

/* The cluster as a broker (or the controller) sees it: `weir cluster`. */
#define WEIR_MAX_REPLICAS 16

struct weir_broker_desc {
    int32_t id;
    char *host;
    uint16_t port;
    char *rack;  /* "" when none */
    bool fenced; /* out of service (dead, stopping or not caught up) */
};

struct weir_cluster_partition {
    char *topic;
    int32_t partition;
    int error_code; /* enum weir_err of the metadata entry */
    int32_t leader; /* -1 when none */
    int32_t leader_epoch;
    size_t n_replicas;
    int32_t replicas[WEIR_MAX_REPLICAS];
    size_t n_isr;
    int32_t isr[WEIR_MAX_REPLICAS];
    int32_t min_insync_replicas; /* topic config; -1 when not set */
    size_t n_elr; /* eligible leader replicas: out of the ISR but holding */
    int32_t elr[WEIR_MAX_REPLICAS]; /* every committed record (KIP-966) */
};

/* One controller quorum member, as the active controller sees it. */
enum weir_quorum_state {
    WEIR_QUORUM_STATE_UNKNOWN = 0, /* a value this client does not know */
    WEIR_QUORUM_STATE_LEADER = 1,
    WEIR_QUORUM_STATE_FOLLOWER = 2,
    WEIR_QUORUM_STATE_UNREACHABLE = 3, /* no connection or contact */
};

struct weir_quorum_voter {
    uint32_t id;
    char *address; /* "host:port" */
    enum weir_quorum_state state;
    uint64_t log_end; /* last index the leader knows it holds */
    uint64_t lag;     /* entries behind the leader's log end */
};

struct weir_cluster_desc {
    char *controller; /* "host:port", "" without a controller */
    /* the controller quorum (n_voters 0: not shown: a single controller,
     * an older peer, or a broker that just moved to another member) */
    uint64_t quorum_term;
    uint32_t quorum_leader;
    size_t n_voters;
    struct weir_quorum_voter *voters; /* in --voters order */
    size_t n_brokers;
    struct weir_broker_desc *brokers; /* as the broker listed them */
    size_t n_partitions;
    struct weir_cluster_partition *partitions; /* topic, then partition */
};

/* Metadata of every topic with configs. Errors: transport. */
WEIR_MUST_CHECK int weir_admin_describe_cluster(struct weir_client *c,
                                                struct weir_cluster_desc **out,
                                                struct err_detail *ed);
void weir_cluster_desc_free(struct weir_cluster_desc *d);

/* ---- consumer groups (admin_group*.c): each call finds the group's
 * coordinator (FindCoordinator, retried while none is available) ---- */

struct weir_group_listing {
    char *group;
    char *state; /* Empty, PreparingRebalance, CompletingRebalance, Stable */
    char *protocol_type;
};

struct weir_group_list {
    size_t n;
    struct weir_group_listing *groups; /* sorted by name, no repeats */
};

/* Ask every broker in the metadata for its groups and merge. Errors:
 * transport (when no broker answers). */
WEIR_MUST_CHECK int weir_admin_list_groups(struct weir_client *c,
                                           struct weir_group_list **out,
                                           struct err_detail *ed);
void weir_group_list_free(struct weir_group_list *l);

struct weir_group_tp {
    char *topic;
    int32_t partition;
};

struct weir_group_member {
    char *member_id;
    char *client_id;
    char *client_host;
    size_t n_partitions;
    struct weir_group_tp *partitions; /* decoded assignment, sorted */
};

struct weir_group_desc {
    char *group;
    char *state;
    char *protocol_type;
    char *protocol; /* the assignor chosen, "" when none */
    int32_t generation;
    char *leader_id;
    size_t n_members;
    struct weir_group_member *members;
};

/* Errors: WEIR_EGROUP_NOT_FOUND, coordinator and transport errors. */
WEIR_MUST_CHECK int weir_admin_describe_group(struct weir_client *c,
                                              const char *group,
                                              struct weir_group_desc **out,
                                              struct err_detail *ed);
void weir_group_desc_free(struct weir_group_desc *d);

/* Errors: WEIR_ENON_EMPTY_GROUP (it has members), WEIR_EGROUP_NOT_FOUND. */
WEIR_MUST_CHECK int weir_admin_delete_group(struct weir_client *c,
                                            const char *group,
                                            struct err_detail *ed);

struct weir_group_offset {
    char *topic;
    int32_t partition;
    int64_t offset;    /* committed; -1 none */
    int64_t log_start; /* -1 unknown (weir_admin_group_lag fills) */
    int64_t log_end;   /* -1 unknown */
    int64_t lag;       /* log_end - offset (log_end - log_start without a
                          commit); -1 unknown */
};

struct weir_group_offsets {
    size_t n;
    struct weir_group_offset *o; /* sorted by topic, partition */
};

/* Committed offsets of a group: of one topic (every partition of it), or
 * every partition the group committed (topic NULL). Errors: coordinator
 * and transport errors, WEIR_EUNKNOWN_TOPIC_OR_PARTITION. */
WEIR_MUST_CHECK int weir_admin_group_offsets(struct weir_client *c,
                                             const char *group,
                                             const char *topic,
                                             struct weir_group_offsets **out,
                                             struct err_detail *ed);
/* Fill log_start, log_end and lag from ListOffsets (entries whose leader
 * does not answer stay -1). Errors: WEIR_ENOMEM, transport. */
WEIR_MUST_CHECK int weir_admin_group_lag(struct weir_client *c,
                                         struct weir_group_offsets *o,
                                         struct err_detail *ed);
void weir_group_offsets_free(struct weir_group_offsets *o);

/* Commit offsets as an operator (generation -1, member ""): accepted only
 * while the group has no members. Errors: WEIR_ENON_EMPTY_GROUP (with a
 * message saying to stop the consumers), the first partition's error,
 * coordinator and transport errors. */
WEIR_MUST_CHECK int
weir_admin_commit_group_offsets(struct weir_client *c,
                                const char *group,
                                const struct weir_group_offset *o,
                                size_t n,
                                struct err_detail *ed);

/* ---- users and ACLs (admin_auth.c): sent to any broker, which passes
 * them to the controller. Errors, besides those named: the request's
 * (WEIR_ECLUSTER_AUTHORIZATION_FAILED, ...) or the item's, with the
 * broker's message, and transport errors. ---- */

/* Create a user or replace its credential for one mechanism. The SCRAM
 * credential (random salt, iterations, StoredKey, ServerKey) is computed
 * here; the password is never sent. mechanism NULL = "SCRAM-SHA-256";
 * iterations 0 = 4096. Errors: WEIR_EINVALID_ARGUMENT (empty name,
 * unknown mechanism, iterations out of range). */
WEIR_MUST_CHECK int weir_admin_user_upsert(struct weir_client *c,
                                           const char *name,
                                           const char *mechanism,
                                           uint32_t iterations,
                                           const char *password,
                                           struct err_detail *ed);
/* Remove a user's credential for mechanism (NULL = "SCRAM-SHA-256"). */
WEIR_MUST_CHECK int weir_admin_user_delete(struct weir_client *c,
                                           const char *name,
                                           const char *mechanism,
                                           struct err_detail *ed);

struct weir_user_info {
    char *name;
    char *mechanism;
    uint32_t iterations;
};

struct weir_user_list {
    size_t n;
    struct weir_user_info *users; /* sorted by name, then mechanism */
};

WEIR_MUST_CHECK int weir_admin_user_list(struct weir_client *c,
                                         struct weir_user_list **out,
                                         struct err_detail *ed);
void weir_user_list_free(struct weir_user_list *l);

/* One ACL rule. The numbers are common/acl.h's enums (acl_*_parse and
 * acl_*_name convert): resource 1 topic, 2 group, 3 cluster; pattern
 * 1 literal, 2 prefixed; operation 1 read .. 8 all; permission 1 allow,
 * 2 deny. */
struct weir_acl {
    char *principal; /* "User:alice", a certificate subject, or "*" */
    int resource;
    int pattern;
    char *name; /* "" for the cluster */
    int operation;
    int permission;
};

struct weir_acl_list {
    size_t n;
    struct weir_acl *acls; /* as the broker listed them */
};

/* Add one rule, or remove the rules equal to it. */
WEIR_MUST_CHECK int weir_admin_acl_create(struct weir_client *c,
                                          const struct weir_acl *acl,
                                          struct err_detail *ed);
WEIR_MUST_CHECK int weir_admin_acl_delete(struct weir_client *c,
                                          const struct weir_acl *acl,
                                          struct err_detail *ed);
/* Every rule. */
WEIR_MUST_CHECK int weir_admin_acl_list(struct weir_client *c,
                                        struct weir_acl_list **out,
                                        struct err_detail *ed);
void weir_acl_list_free(struct weir_acl_list *l);

#endif /* CLIENT_WEIR_ADMIN_H */
