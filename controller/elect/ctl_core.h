/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core: the pure state machine that decides cluster metadata
 * (registration, fencing, elections, ISR changes, placement, producer ids,
 * SCRAM users and ACL rules).
 * An event stamped with the time goes in; out come metadata records, the
 * answer to the event and when to deliver the next TICK. It reads no clock
 * and makes no socket, file or random call (STYLE 2.7).
 * Contract with the adapter that drives it:
 *  1. out->records are one batch: append them to the metadata log as a unit
 *     that replay sees whole or not at all, then fsync.
 *  2. They are already applied to the core's image (so the next event sees
 *     them). Expose nothing of the step (its reply, records served to
 *     brokers) before the log is durable through out->end_offset - 1.
 *  3. A step that returns an error has nothing to persist. If
 *     ctl_core_failed() is then true, the image ran ahead of the log: drop
 *     the core and rebuild it from the log.
 *  4. Restart: meta_snapshot_decode, meta_image_apply of the log after the
 *     snapshot, then ctl_core_new with that image.
 * Locality: the controller loop thread only. */
#ifndef CONTROLLER_ELECT_CTL_CORE_H
#define CONTROLLER_ELECT_CTL_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "controller/meta/meta_image.h"
#include "controller/meta/meta_record.h"

#define CTL_MAX_PRODUCER_IDS 1000000 /* per ALLOCATE_PRODUCER_IDS */
#define CTL_MAX_OFFLINE      65536   /* offline replicas one broker lists */
#define CTL_MAX_INTERVAL_MS  (7ull * 24 * 3600 * 1000) /* timeouts, periods */

struct ctl_core; /* opaque */

struct ctl_config {
    uint64_t session_timeout_ms;        /* 3000: fenced after no heartbeat */
    uint64_t disconnect_timeout_ms;     /* 1000: fenced this long after its
                                           connection closed, unless heard
                                           from again; 0 = sessions only */
    uint64_t first_contact_timeout_ms;  /* 1500: after a (re)start, a broker
                                           not heard from within this is
                                           fenced; 0 = a whole session */
    uint64_t rebalance_interval_ms;     /* 300000: preferred leaders; 0 = off */
    int32_t default_partitions;         /* 1 */
    int32_t default_replication_factor; /* 3, capped at registered brokers */
    int32_t default_min_insync_replicas; /* 2, capped at the RF */
    bool unclean_leader_election; /* false: never lead from outside ISR */
    int64_t producer_id_block;    /* 1000 ids per PRODUCER_IDS record */
};

/* The defaults above. */
void ctl_config_init(struct ctl_config *cfg);

enum ctl_event_type {
    CTL_EV_TICK,
    CTL_EV_BROKER_REGISTER,
    CTL_EV_BROKER_HEARTBEAT,
    CTL_EV_BROKER_CAUGHT_UP,
    CTL_EV_CONTROLLED_SHUTDOWN,
    CTL_EV_CREATE_TOPIC,
    CTL_EV_DELETE_TOPIC,
    CTL_EV_ALTER_ISR,
    CTL_EV_ALLOCATE_PRODUCER_IDS,
    CTL_EV_BROKER_DISCONNECTED, /* a connection it spoke on was closed by
                                   the peer (process gone, or a reset) */
    CTL_EV_UPSERT_USER,         /* set a user's credential for cred->mech */
    CTL_EV_DELETE_USER,         /* NOT_FOUND when (name, mech) has none */
    CTL_EV_ADD_ACL,             /* a rule already present: 0 and no record */
    CTL_EV_REMOVE_ACL,          /* NOT_FOUND when absent */
};

struct ctl_kv {
    const char *key;
    const char *value;
};

/* A replica of a partition on the broker that names it. */
struct ctl_replica {
    int64_t topic_id;
    int32_t partition;
};

/* Pointers are borrowed for the duration of ctl_core_step. A broker names
 * itself by (broker_id, broker_epoch); an epoch that is not the current
 * one is refused with WEIR_ENOT_FOUND ("register again"). */
struct ctl_event {
    enum ctl_event_type type;
    uint64_t now_ms; /* monotonic; an earlier time than before counts as
                        the latest one seen */
    union {
        struct {
            int32_t broker_id;
            const char *host; /* advertised address */
            uint16_t port;
            const char *rack;     /* NULL or "" when none */
            const char *tls_host; /* TLS listener: NULL/"" when none */
            uint16_t tls_port;
            /* made when its data dir was first used; NULL/"" = unknown
             * (a broker that sends neither this nor the next field) */
            const char *directory_id;
            /* the epoch it held when it last stopped cleanly, -1 after an
             * unclean stop; the epoch it holds, when a running broker
             * registers again; read only with a directory id */
            int64_t previous_broker_epoch;
            /* its default flush policy ("ack", "interval", "never";
             * NULL/"" = not said): under "ack" an unclean stop loses
             * nothing it acknowledged */
            const char *default_flush_policy;
            const struct ctl_replica *offline; /* replicas offline there */
            uint32_t n_offline;                /* 0..CTL_MAX_OFFLINE */
        } reg;
        struct {
            int32_t broker_id;
            int64_t broker_epoch;
            int64_t applied_offset; /* last metadata record it applied;
                                       -1 for none */
            bool want_shutdown;
            /* every replica whose log is offline there now (the whole
             * set each time): they may not lead or be in an ISR */
            const struct ctl_replica *offline;
            uint32_t n_offline; /* 0..CTL_MAX_OFFLINE */
        } heartbeat;
        struct {
            int32_t broker_id;
            int64_t broker_epoch;
        } broker; /* BROKER_CAUGHT_UP, CONTROLLED_SHUTDOWN,
                     BROKER_DISCONNECTED */
        struct {
            const char *name;
            int32_t partitions;         /* 0: default */
            int32_t replication_factor; /* 0: default */
            uint32_t n_configs;
            const struct ctl_kv *configs;
        } create;
        struct {
            const char *name;
        } del;
        struct {
            int32_t broker_id; /* the proposer, which must lead */
            int64_t broker_epoch;
            int64_t topic_id; /* ids, not names: a recreated topic differs */
            int32_t partition;
            int32_t leader_epoch;    /* the proposer's view */
            int32_t partition_epoch; /* the proposer's view */
            struct meta_ids isr;     /* proposed ISR, any order */
        } alter_isr;
        struct {
            int32_t broker_id;
            int64_t broker_epoch;
            int64_t count; /* 1..CTL_MAX_PRODUCER_IDS */
        } pids;
        struct {
            const char *name; /* the rules of struct meta_user_scram */
            const struct scram_cred *cred;
        } user;
        struct {
            const char *name;
            enum scram_mech mech;
        } user_del;
        struct {
            const struct acl_rule *rule;
        } acl; /* ADD/REMOVE_ACL */
    } u;
};

/* What a step decided. The caller embeds it (init once, fini at the end);
 * every step resets it. Records and their strings stay valid until the
 * next step with it, or its fini. */
struct ctl_actions {
    int result;                  /* the answer: 0 or an enum weir_err */
    struct err_detail detail;    /* why, when result != 0 */
    struct meta_record *records; /* the batch, in log order */
    uint32_t n_records;
    int64_t first_offset;      /* offset of records[0] */
    int64_t end_offset;        /* image end offset after the step */
    int64_t broker_epoch;      /* REGISTER: the new epoch */
    bool broker_fenced;        /* broker events: its state after the step */
    bool shutdown_ok;          /* may exit once it applied end_offset - 1 */
    int64_t topic_id;          /* CREATE_TOPIC, DELETE_TOPIC */
    int32_t leader_epoch;      /* ALTER_ISR: the partition after the step, */
    int32_t partition_epoch;   /*   also on refusal, so the leader can see */
    struct meta_ids isr;       /*   how far behind it is */
    int64_t producer_id;       /* ALLOCATE_PRODUCER_IDS: first id, */
    int64_t producer_id_count; /*   and how many from there */
    uint32_t n_fenced;         /* brokers fenced in this step */
    uint32_t n_unclean;        /* unclean elections: trace them loudly */
    bool offline_changed;      /* heartbeat, registration: the broker's */
    uint32_t n_offline;        /*   offline replicas changed; how many */
    bool data_lost;        /* REGISTER: a new directory id (data dir lost) */
    bool unclean_stop;     /* REGISTER: back from an unclean stop */
    uint64_t next_tick_ms; /* deliver a TICK by then; UINT64_MAX: none */
    /* private to the core */
    uint32_t cap_records;
    char **strs; /* copies the records' strings point into */
    uint32_t n_strs;
    uint32_t cap_strs;
};

void ctl_actions_init(struct ctl_actions *out);
void ctl_actions_fini(struct ctl_actions *out);

/* A core over img, which it consumes (also on failure); NULL = empty.
 * Brokers in img get a full session from the first event, but are fenced
 * first_contact_timeout_ms after it unless heard from by then.
 * Errors: WEIR_ENOMEM, WEIR_EINVALID_ARGUMENT (cfg out of range: a zero
 * session timeout, intervals past CTL_MAX_INTERVAL_MS, defaults outside
 * the record limits, a producer id block outside 1..CTL_MAX_PRODUCER_IDS). */
WEIR_MUST_CHECK int ctl_core_new(const struct ctl_config *cfg,
                                 struct meta_image *img,
                                 struct ctl_core **out);
/* NULL is a no-op. */
void ctl_core_free(struct ctl_core *core);

/* Handle one event; fills out (see the contract at the top). A refused
 * request is not an error: the step returns 0 with out->result set.
 * Errors: WEIR_ENOMEM, WEIR_EUNKNOWN (the core failed in an earlier step,
 * or its image refused a record it made: a bug). out->detail says which;
 * see ctl_core_failed. */
WEIR_MUST_CHECK int ctl_core_step(struct ctl_core *core,
                                  const struct ctl_event *ev,
                                  struct ctl_actions *out);

/* The image, valid until the next step. */
const struct meta_image *ctl_core_image(const struct ctl_core *core);
/* True once a step failed after applying part of a batch. */
bool ctl_core_failed(const struct ctl_core *core);
/* Soft state of a registered broker (lost on restart): when it was last
 * heard from, and whether it asked to shut down. False if unknown. */
bool ctl_core_broker_liveness(const struct ctl_core *core,
                              int32_t id,
                              uint64_t *last_seen_ms,
                              bool *shutting_down);
/* True if broker id listed its replica of topic_id/partition offline in
 * its last registration or heartbeat (soft state, like liveness). */
bool ctl_core_replica_offline(const struct ctl_core *core,
                              int32_t id,
                              int64_t topic_id,
                              int32_t partition);

#endif /* CONTROLLER_ELECT_CTL_CORE_H */
