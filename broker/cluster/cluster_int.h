/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct cluster, shared by the broker/cluster/ files only. */
#ifndef BROKER_CLUSTER_CLUSTER_INT_H
#define BROKER_CLUSTER_CLUSTER_INT_H

#include "broker/cluster/cluster.h"
#include "broker/cluster/cluster_conn.h"

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

struct cluster {
    struct broker *b;
    int32_t id;
    char *controller;
    struct cconn *rpc;   /* register, heartbeat, AlterIsr, forwards */
    struct cconn *fetch; /* the metadata long poll alone: it blocks */
    struct meta_image *img;
    bool caught_up;       /* applied everything the controller had */
    int64_t broker_epoch; /* -1 until registered */
    bool registering;
    bool fenced;
    bool hb_inflight;
    uint64_t backoff_ms;
    struct event *register_timer;
    struct event *heartbeat_timer;
    struct event *fetch_timer; /* retry after a failed fetch */
    struct event *shutdown_timer;
    bool shutting_down;
    bool shutdown_ok;
    cluster_partition_fn hook;
    void *hook_arg;
    struct cluster_role_entry *roles; /* image order (topic id, partition) */
    uint32_t n_roles;
    struct cluster_fwd *fwds;
    uint64_t offline_sig; /* offline replicas last reported (a hash) */
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
/* cluster_api.c: forwards waiting for the image; final = answer all. */
void cluster_api_wake(struct cluster *c, bool final);

#endif /* BROKER_CLUSTER_CLUSTER_INT_H */
