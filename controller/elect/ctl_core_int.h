/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct ctl_core and the functions its files share. The image
 * is the durable state (rebuilt from the log); everything else here is soft
 * state that a restart rebuilds from the first events it sees. */
#ifndef CONTROLLER_ELECT_CTL_CORE_INT_H
#define CONTROLLER_ELECT_CTL_CORE_INT_H

#include "controller/elect/ctl_core.h"

/* Liveness of a broker: one for every registered broker (and possibly one
 * for a broker whose registration failed for lack of memory). */
struct ctl_live {
    int32_t id;
    uint64_t last_seen_ms; /* last heartbeat, registration or catch-up */
    uint64_t cut_at_ms;    /* its connection closed: fenced at this time
                              unless heard from first; 0 = not cut */
    bool shutting_down;    /* asked to stop: heartbeats do not unfence it */
    struct ctl_replica *offline; /* its offline replicas, ascending
                                    (topic id, partition), distinct; owned */
    uint32_t n_offline;
    /* the previous epoch its last registration was judged clean with
     * (same directory id), -1 none: a retry of that registration whose
     * answer was lost carries it again and is clean too */
    int64_t clean_prev_epoch;
};

struct ctl_core {
    struct ctl_config cfg;
    struct meta_image *img; /* owned */
    struct ctl_live *live;  /* ascending id */
    uint32_t n_live;
    uint32_t cap_live;
    bool started;       /* the first event stamped every broker's session */
    bool start_elected; /* the first TICK elected where it could */
    bool failed;        /* a batch was cut short after it changed the image */
    uint64_t now_ms;    /* latest event time */
    uint64_t next_rebalance_ms; /* preferred-leader check */
    int64_t pid_next;           /* next producer id to hand out */
    int64_t pid_end;            /* end of the block reserved by PRODUCER_IDS */
};

/* What the step in progress changes about brokers, for the planner
 * (ctl_elect.c). Zero-initialised: nothing. */
struct ctl_excl {
    const int32_t *ids; /* taken out of service (being fenced) */
    uint32_t n;
    /* back from an unclean stop: may have lost unflushed records, so it
     * leaves every ELR unless it is the last member of ISR and ELR, or
     * the topic's flush policy is ack (the topic's flush.policy, else
     * unclean_flush_ack: its default) */
    const int32_t *unclean;
    /* its data dir is new (the data is gone): leaves every ISR and ELR */
    const int32_t *wiped;
    bool unclean_flush_ack;
};

/* Append rec to the batch (copying its strings into out) and apply it.
 * Errors: WEIR_ENOMEM, WEIR_EUNKNOWN (the image refused a record the core
 * made: a bug). Either way the core is failed if the batch was begun. */
int ctl_core_emit(struct ctl_core *core,
                  struct ctl_actions *out,
                  const struct meta_record *rec);
/* Set the answer to a refused request. */
void ctl_core_refuse(struct ctl_actions *out, int code, const char *fmt, ...)
    WEIR_PRINTF(3, 4);
struct ctl_live *ctl_core_live(struct ctl_core *core, int32_t id);
/* Registered, unfenced and not excluded: may lead and may join an ISR. */
bool ctl_core_can_serve(const struct ctl_core *core,
                        int32_t id,
                        const struct ctl_excl *ex);
/* ctl_core_can_serve and its replica of the partition is not offline. */
bool ctl_core_replica_ok(const struct ctl_core *core,
                         int32_t id,
                         int64_t topic_id,
                         int32_t partition,
                         const struct ctl_excl *ex);
/* Replace broker id's offline replicas with list (n of them, any order,
 * duplicates allowed); *added / *removed say whether any replica was
 * newly listed / is no longer listed. Errors: WEIR_ENOMEM (unchanged). */
int ctl_core_set_offline(struct ctl_core *core,
                         int32_t id,
                         const struct ctl_replica *list,
                         uint32_t n,
                         bool *added,
                         bool *removed);
/* The broker (id, epoch) names, or NULL after refusing with NOT_FOUND. */
const struct meta_broker *ctl_core_broker(struct ctl_core *core,
                                          struct ctl_actions *out,
                                          int32_t id,
                                          int64_t epoch);

/* ctl_elect.c: leadership, ISR and ELR moves the controller makes itself.
 * evacuate applies ex (brokers leaving service, an unclean or wiped
 * broker's seats) and elects where a leader is needed and possible;
 * leaderless does the same with nothing leaving (after an unfence, an
 * offline replica listed or unlisted). Both visit every partition and
 * write a change only where one is due. */
int ctl_elect_evacuate(struct ctl_core *core,
                       struct ctl_actions *out,
                       const struct ctl_excl *ex);
int ctl_elect_leaderless(struct ctl_core *core, struct ctl_actions *out);
int ctl_elect_preferred(struct ctl_core *core, struct ctl_actions *out);
/* The ELR after an accepted AlterIsr of p to isr (ctl_isr.c): who left
 * joins it while isr is smaller than min.insync.replicas, who joined
 * leaves it, and it empties once isr reaches min.insync.replicas. */
void ctl_elect_elr_after(const struct ctl_core *core,
                         int64_t topic_id,
                         int32_t partition,
                         const struct meta_partition *p,
                         const struct meta_ids *isr,
                         struct meta_ids *elr);

/* ctl_offline.c: replace broker id's offline replicas with list (from a
 * heartbeat or registration) and, if it is in service, move leadership
 * and ISR seats off the newly listed ones and elect where an unlisted one
 * may lead now. */
int ctl_offline_update(struct ctl_core *core,
                       struct ctl_actions *out,
                       int32_t id,
                       const struct ctl_replica *list,
                       uint32_t n);

/* ctl_broker.c */
int ctl_broker_register(struct ctl_core *core,
                        const struct ctl_event *ev,
                        struct ctl_actions *out);
int ctl_broker_heartbeat(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out);
int ctl_broker_disconnected(struct ctl_core *core, const struct ctl_event *ev);
int ctl_broker_shutdown(struct ctl_core *core,
                        const struct ctl_event *ev,
                        struct ctl_actions *out);
int ctl_broker_expire(struct ctl_core *core, struct ctl_actions *out);

/* ctl_topic.c */
int ctl_topic_create(struct ctl_core *core,
                     const struct ctl_event *ev,
                     struct ctl_actions *out);
int ctl_topic_delete(struct ctl_core *core,
                     const struct ctl_event *ev,
                     struct ctl_actions *out);

/* ctl_auth.c: UPSERT_USER, DELETE_USER, ADD_ACL, REMOVE_ACL. */
int ctl_auth_upsert_user(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out);
int ctl_auth_delete_user(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out);
int ctl_auth_acl(struct ctl_core *core,
                 const struct ctl_event *ev,
                 struct ctl_actions *out);

/* ctl_isr.c */
int ctl_isr_alter(struct ctl_core *core,
                  const struct ctl_event *ev,
                  struct ctl_actions *out);

#endif /* CONTROLLER_ELECT_CTL_CORE_INT_H */
