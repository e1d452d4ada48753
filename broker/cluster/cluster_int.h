/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct cluster, shared by the broker/cluster/ files only. */
#ifndef BROKER_CLUSTER_CLUSTER_INT_H
#define BROKER_CLUSTER_CLUSTER_INT_H

#include "broker/cluster/cluster.h"
#include "broker/cluster/cluster_conn.h"
#include "broker/cluster/cluster_finder.h"
#include "broker/cluster/cluster_watch.h"
#include "common/metaprops.h"

struct event;

/* What the broker last acted on for one partition it hosts. */
struct cluster_role_entry {
    int64_t topic_id;
    int32_t partition;
    enum cluster_role role;
    int32_t leader;
    int32_t leader_epoch;
    int32_t partition_epoch;
    struct meta_ids isr;
};

struct cluster_fwd; /* a forwarded CreateTopics/DeleteTopics (api) */

/* Why the controller's answers are being refused (cluster_ident.c). */
enum cluster_refusal {
    CLUSTER_REFUSAL_NONE,
    CLUSTER_REFUSAL_CLUSTER_ID,   /* it belongs to another cluster */
    CLUSTER_REFUSAL_HISTORY,      /* its metadata ends before ours */
    CLUSTER_REFUSAL_DIVERGED,     /* its history differs from ours */
    CLUSTER_REFUSAL_UNVERIFIABLE, /* it cannot show its history is ours */
};

struct cluster {
    struct broker *b;
    int32_t id;
    /* the quorum member both connections call (cluster_follow.c) */
    struct cluster_finder finder;
    struct cconn *rpc;   /* register, heartbeat, AlterIsr, forwards */
    struct cconn *fetch; /* the metadata long poll alone: it blocks */
    struct meta_image *img;
    bool caught_up;       /* applied everything the controller had */
    int64_t broker_epoch; /* -1 until registered */
    bool registering;
    bool fenced;
    bool hb_inflight;
    /* the controller did not know our epoch: register once a metadata
     * answer of it passed the identity and history checks */
    bool register_after_check;
    uint64_t backoff_ms;
    struct event *register_timer;
    struct event *heartbeat_timer;
    struct event *fetch_timer;   /* retry after a failed fetch */
    struct event *contact_timer; /* heartbeat soon after a move */
    struct event *shutdown_timer;
    bool shutting_down;
    bool shutdown_ok;
    cluster_partition_fn hook;
    void *hook_arg;
    struct cluster_role_entry *roles; /* image order (topic id, partition) */
    uint32_t n_roles;
    struct cluster_fwd *fwds;

    /* identity and history checks (cluster_ident.c) */
    char meta_cluster_id[METAPROPS_ID_MAX + 1]; /* of the metadata in img */
    int64_t chain; /* chain value of img's history at its end; -1 unknown */
    /* told METADATA_DIVERGED: until an answer shows this broker's history
     * point checked (history_checked), nothing is accepted */
    bool diverged;
    enum cluster_refusal refusal;
    uint64_t refusal_logged_ms;
    bool accepted_once;          /* an answer was accepted: may register */
    bool registered_once;        /* previous_broker_epoch is spent */
    int64_t sent_previous_epoch; /* in the last RegisterBroker */
    uint64_t applied_saved_ms;
    /* the cluster id a registration answer gave this new data dir, while
     * storing it keeps failing (retried from the heartbeat timer) */
    char cluster_id_unsaved[METAPROPS_ID_MAX + 1];
    uint64_t cluster_id_failed_ms; /* last cluster_id_not_saved trace */
    uint64_t session_timeout_ms;   /* the controller's, from registration */
    struct cluster_watch watch;    /* leading while cut off (12c) */
    char **strays;                 /* "name id" of stray logs reported */
    uint32_t n_strays;
    uint64_t offline_sig; /* offline replicas last reported (a hash) */
    /* the controller quorum as the active controller's last heartbeat
     * answer showed it (owned, rpc_allocator); NULL: none, or dropped
     * when a heartbeat failed or the broker moved to another member
     * (cluster_follow.c) */
    Weir__QuorumStatus *quorum;
};

/* cluster_offline.c: the offline replicas to report (owned arrays). */
struct cluster_offline {
    Weir__ReplicaRef *refs;
    Weir__ReplicaRef **ptrs;
    size_t n;
};
/* Every offline partition log of this broker, whole or (out of memory)
 * none at all; traces the set when it changed. */
void cluster_offline_collect(struct cluster *c, struct cluster_offline *out);
void cluster_offline_fini(struct cluster_offline *o);

/* cluster_apply.c: apply a FetchMetadata answer to the image, then (when
 * caught up) sync partition logs and roles. Errors: WEIR_ECORRUPT,
 * WEIR_ENOMEM (the image is then as before the answer). */
int cluster_apply(struct cluster *c,
                  const Weir__FetchMetadataResponse *m,
                  const uint8_t *payload,
                  uint32_t len,
                  struct err_detail *ed);
/* cluster.c: the broker's image changed; finish what waited for it. */
void cluster_applied(struct cluster *c);
/* cluster_apply.c: logs and roles follow the image again (after the
 * broker's own registration changed); no-op until caught up. */
void cluster_resync(struct cluster *c);
/* Has the image applied this incarnation's own registration? Until then
 * no leadership is acted on (cluster_sync_roles, cluster_route). */
bool cluster_incarnation_applied(const struct cluster *c);
/* May this topic's partitions be acted on here? False when local logs
 * under its name carry another topic id (stray logs, kept). */
bool cluster_logs_usable(const struct cluster *c, const struct meta_topic *t);
/* Number of partitions whose leader role is applied here now. */
uint32_t cluster_leading_count(const struct cluster *c);

/* cluster_ident.c. May this FetchMetadata answer be applied? False (and
 * an error trace naming both sides) when it comes from another cluster,
 * or its history ends before what this broker applied. */
bool cluster_ident_accept_fetch(struct cluster *c,
                                const Weir__FetchMetadataResponse *m);
/* The same for a registration answer (cluster id only); stores the
 * cluster id the first time. */
bool cluster_ident_accept_register(struct cluster *c,
                                   const Weir__RegisterBrokerResponse *r);
/* Store the cluster id a registration gave this data dir, if that has
 * not succeeded yet (heartbeat timer). */
void cluster_ident_save_cluster(struct cluster *c);
/* The controller refused the registration: another cluster. */
void cluster_ident_refused(struct cluster *c, const char *msg);
/* The controller refused a metadata fetch with err (METADATA_DIVERGED,
 * METADATA_HISTORY_UNVERIFIABLE, INCONSISTENT_CLUSTER_ID), or this broker
 * found the history different while applying it (METADATA_DIVERGED):
 * refuse it, with msg. False for any other err. */
bool cluster_ident_refuse_fetch(struct cluster *c, int err, const char *msg);
/* The history point to send in a FetchMetadata: the end of the image, or
 * the stored (offset, chain value) while the image is behind it. *offset
 * 0: none. */
void cluster_ident_history_point(const struct cluster *c,
                                 int64_t *offset,
                                 int64_t *chain);
/* Store the applied metadata end offset: at most once a second, unless
 * now (clean shutdown). */
void cluster_ident_save_applied(struct cluster *c, bool now);
/* A stray: local logs whose topic id the metadata does not know (or that
 * another topic's name now takes). Traced once per (name, id). */
void cluster_ident_stray(struct cluster *c,
                         const char *name,
                         int64_t topic_id,
                         const char *why);
/* cluster_follow.c: parse b->cfg.controller into c->finder.
 * Errors: WEIR_ECONFIG naming the bad element. */
int cluster_follow_init(struct cluster *c, struct err_detail *ed);
/* Keep a copy of the quorum status a heartbeat answer carried (NULL: it
 * carried none), for Metadata answers; out of memory keeps none. */
void cluster_follow_quorum(struct cluster *c, const Weir__QuorumStatus *qs);
/* The cconn outcome function (arg = the cluster): a NOT_CONTROLLER hint,
 * a failure or a timeout may move both connections to another member. */
void cluster_follow_outcome(void *arg,
                            const char *addr,
                            int err,
                            const Weir__ActiveController *hint);

/* cluster.c: heartbeat (or register) and poll metadata delay_ms from now,
 * after a move to another member (the poll only if none is in flight). */
void cluster_contact_soon(struct cluster *c, uint64_t delay_ms);

/* cluster_api.c: forwards waiting for the image; final = answer all. */
void cluster_api_wake(struct cluster *c, bool final);

#endif /* BROKER_CLUSTER_CLUSTER_INT_H */
