/* SPDX-License-Identifier: Apache-2.0 */
/* Broker control plane (cluster mode, --controller set): registration with
 * the controller, heartbeats, tailing the metadata log into a local
 * meta_image, partition logs for the replicas this broker hosts, the
 * leader/follower role of each, controlled shutdown, and the AlterIsr call
 * the data plane will use. Without --controller none of this exists
 * (b->cluster is NULL) and the broker runs alone as before.
 * Locality: the broker loop thread. */
#ifndef BROKER_CLUSTER_CLUSTER_H
#define BROKER_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "controller/meta/meta_image.h"
#include "proto/weir.pb-c.h"

struct broker;
struct srv_req;
struct cluster; /* opaque */

enum cluster_role {
    CLUSTER_ROLE_NONE,     /* not a replica (any more) */
    CLUSTER_ROLE_LEADER,   /* this broker leads it */
    CLUSTER_ROLE_FOLLOWER, /* a replica led by another broker (or none) */
};

/* A partition's state as this broker must act on it; pointers valid
 * during the hook call only. */
struct cluster_partition_state {
    const char *topic;
    int64_t topic_id;
    int32_t partition;
    enum cluster_role role;
    int32_t leader; /* -1: none */
    int32_t leader_epoch;
    int32_t partition_epoch;
    const struct meta_ids *replicas;
    const struct meta_ids *isr;
};

/* Called, after each applied metadata batch that leaves the broker caught
 * up, once for every partition of which this broker is (or just stopped
 * being) a replica and whose leader, epochs or ISR changed. The data plane
 * (replica fetcher, ISR tracking) plugs in here. */
typedef void (*cluster_partition_fn)(void *arg,
                                     const struct cluster_partition_state *st);

/* Start: connect to b->cfg.controller (a list of quorum members: the
 * active one is found and followed), register (retrying with backoff),
 * heartbeat and tail the metadata log. Errors: WEIR_ENOMEM, WEIR_ECONFIG
 * (bad address, named). */
WEIR_MUST_CHECK int
cluster_new(struct broker *b, struct cluster **out, struct err_detail *ed);
/* Answers parked forwards with SHUTTING_DOWN, drops connections, frees.
 * NULL is a no-op. */
void cluster_free(struct cluster *c);

/* The default partition hook (arg = the cluster): traces leader and ISR
 * changes. A replacement hook chains to it to keep those traces. */
void cluster_role_trace(void *arg, const struct cluster_partition_state *st);

/* Replace the partition hook (default: role bookkeeping and traces). */
void cluster_set_partition_hook(struct cluster *c,
                                cluster_partition_fn fn,
                                void *arg);

/* SIGTERM: ask the controller to move this broker's leaderships away
 * (heartbeats with want_shutdown) and stop the loop once it agreed and the
 * move is applied here, or after the controlled-shutdown timeout. False
 * when there is nothing to wait for (the caller stops at once). */
bool cluster_shutdown_begin(struct cluster *c);

/* Store the end offset of the metadata applied here now (clean stop). */
void cluster_save_applied(struct cluster *c);

const struct meta_image *cluster_image(const struct cluster *c);
/* The address of the controller (quorum member) in use now: the active
 * controller once one answered; valid until the next loop turn. */
const char *cluster_controller(const struct cluster *c);
int64_t cluster_broker_epoch(const struct cluster *c); /* -1: unregistered */
bool cluster_fenced(const struct cluster *c);

/* May this broker serve reads and writes of topic/partition? 0 when it
 * leads it; else WEIR_ENOT_LEADER (another broker leads),
 * WEIR_ELEADER_NOT_AVAILABLE (no leader now) or
 * WEIR_EUNKNOWN_TOPIC_OR_PARTITION, with a message in msg. */
int cluster_route(const struct cluster *c,
                  const char *topic,
                  int32_t partition,
                  char *msg,
                  size_t msg_cap);
/* The same for handlers: always 0 in single-broker mode. */
int broker_route(const struct broker *b,
                 const char *topic,
                 int32_t partition,
                 char *msg,
                 size_t msg_cap);

/* Answer of an AlterIsr: err 0 = accepted. The partition's state after
 * the call comes back also on refusal (epochs -1 on transport errors). */
typedef void (*cluster_alter_isr_fn)(void *arg,
                                     int err,
                                     int32_t leader_epoch,
                                     int32_t partition_epoch,
                                     const struct meta_ids *isr);
/* Propose a new ISR for a partition this broker leads (compare-and-set on
 * both epochs at the controller). fn is called exactly once, later.
 * Errors: WEIR_ENOT_FOUND (not registered), WEIR_ENOMEM, WEIR_ENETWORK. */
WEIR_MUST_CHECK int cluster_alter_isr(struct cluster *c,
                                      int64_t topic_id,
                                      int32_t partition,
                                      int32_t leader_epoch,
                                      int32_t partition_epoch,
                                      const struct meta_ids *isr,
                                      cluster_alter_isr_fn fn,
                                      void *arg);

/* Answer of an AllocateProducerIds: err 0 = [first, first + count) are
 * this broker's to give out. msg says why otherwise. */
typedef void (*cluster_pids_fn)(
    void *arg, int err, const char *msg, int64_t first, int64_t count);
/* Ask the controller for a block of count producer ids. fn is called
 * exactly once, later, unless the cluster is freed first.
 * Errors: WEIR_ENOT_FOUND (not registered), WEIR_ENOMEM, WEIR_ENETWORK. */
WEIR_MUST_CHECK int cluster_allocate_producer_ids(struct cluster *c,
                                                  int64_t count,
                                                  cluster_pids_fn fn,
                                                  void *arg);

/* Ask the controller to create a topic (the broker's own need, such as
 * __consumer_offsets); replication factor and min ISR are the
 * controller's defaults. fn is called once, later, unless the cluster is
 * freed first. Errors: WEIR_ENOT_FOUND (not registered), WEIR_ENOMEM,
 * WEIR_ENETWORK. */
typedef void (*cluster_done_fn)(void *arg, int err, const char *msg);
struct logmgr_kv;
WEIR_MUST_CHECK int cluster_create_topic(struct cluster *c,
                                         const char *name,
                                         int32_t partitions,
                                         const struct logmgr_kv *configs,
                                         uint32_t n_configs,
                                         cluster_done_fn fn,
                                         void *arg);

/* Handlers in cluster mode (cluster_api.c); each takes ownership of r. */
void cluster_api_metadata(struct broker *b,
                          struct srv_req *req,
                          Weir__Request *r);
/* CreateTopics / DeleteTopics: forwarded to the controller; the answer
 * waits (bounded) until this broker's image shows the change. */
void cluster_api_forward(struct broker *b,
                         struct srv_req *req,
                         Weir__Request *r);

#endif /* BROKER_CLUSTER_CLUSTER_H */
