/* SPDX-License-Identifier: Apache-2.0 */
/* Leader side of one partition, as a pure state machine (STYLE 2.7): the
 * adapter feeds events stamped with now_ms (follower fetches, local
 * appends and fsyncs, timer ticks, controller answers) and carries out the
 * actions (answer the fetch, publish the high watermark, send an ISR
 * proposal, re-arm the timer). Rules: docs/replication.md.
 * Key invariants: the high watermark never moves backwards; it never
 * passes the durable end of any member of the (maximal) ISR; it does not
 * move while the ISR is smaller than min.insync.replicas.
 * Locality: broker loop thread. One instance per leadership epoch: a new
 * epoch means a new repl_leader. */
#ifndef BROKER_REPLICA_REPL_LEADER_H
#define BROKER_REPLICA_REPL_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/replica/repl_core.h"
#include "broker/replica/repl_epochs.h"
#include "common/err.h"

struct repl_leader; /* opaque */

struct repl_leader_config {
    int32_t self_id;                  /* this broker; in replicas and isr */
    int32_t leader_epoch;             /* from the controller */
    int32_t partition_epoch;          /* version of (isr, replicas) */
    struct repl_ids replicas;         /* assigned replicas, replica order */
    struct repl_ids isr;              /* ISR as the controller has it */
    uint32_t min_insync_replicas;     /* >= 1 */
    uint64_t replica_lag_time_max_ms; /* > 0 */
    uint64_t isr_retry_backoff_ms;    /* wait after a rejected proposal */
    int64_t log_end_offset;           /* local LEO at promotion */
    int64_t durable_offset;           /* local durable end, <= LEO */
    int64_t high_watermark;           /* inherited (as follower), <= LEO */
};

enum repl_leader_event_type {
    REPL_LEADER_EV_TICK,             /* the timer asked for fired */
    REPL_LEADER_EV_FOLLOWER_FETCH,   /* a follower's fetch request */
    REPL_LEADER_EV_APPEND,           /* local log end offset moved */
    REPL_LEADER_EV_DURABLE,          /* local durable offset moved */
    REPL_LEADER_EV_ISR_RESULT,       /* controller's answer to a proposal;
                                        a lost or timed-out request is
                                        delivered as a rejection */
    REPL_LEADER_EV_PARTITION_UPDATE, /* controller changed the ISR itself */
};

struct repl_leader_event {
    enum repl_leader_event_type type;
    uint64_t now_ms; /* monotonic, supplied by the caller */
    union {
        struct repl_fetch_params fetch;
        struct {
            int64_t log_end_offset; /* never decreases while leader */
        } append;
        struct {
            int64_t durable_offset; /* <= log end offset */
        } durable;
        struct {
            bool accepted;
            int32_t leader_epoch;        /* as in the proposal answered */
            int32_t partition_epoch;     /* as in the proposal answered */
            int32_t new_partition_epoch; /* accepted: the controller's */
            struct repl_ids isr;         /* accepted: the ISR now in force */
        } isr_result;
        struct {
            int32_t partition_epoch; /* ignored unless newer than ours */
            struct repl_ids isr;
        } partition_update;
    } u;
};

enum repl_fetch_verdict {
    REPL_FETCH_SERVE,     /* send records from fetch_offset up to the LEO */
    REPL_FETCH_DIVERGING, /* send no records, only the divergence point */
    REPL_FETCH_ERROR,     /* send the error code */
};

struct repl_fetch_answer {
    enum repl_fetch_verdict verdict;
    int err;                      /* ERROR: WEIR_EFENCED_LEADER_EPOCH (sender's
                                     epoch is older), WEIR_EUNKNOWN_LEADER_EPOCH
                                     (newer), WEIR_ENOT_LEADER (not a replica),
                                     WEIR_EINVALID_REQUEST */
    int64_t fetch_offset;         /* SERVE: first offset to send */
    int32_t diverging_epoch;      /* DIVERGING: largest epoch of ours <= the
                                     follower's last fetched epoch (our
                                     latest for a follower without epochs
                                     past our end) */
    int64_t diverging_end_offset; /* DIVERGING: where that epoch ends here
                                     (our LEO in that last case) */
    int64_t high_watermark;       /* to put in the response, all verdicts */
};

/* An ISR change for the controller's compare-and-set: it applies `isr`
 * only if the partition still has these two epochs. */
struct repl_isr_proposal {
    int32_t leader_epoch;
    int32_t partition_epoch;
    struct repl_ids isr; /* complete new ISR, leader included */
};

/* Filled by repl_leader_step; the caller performs them in this order. */
struct repl_leader_actions {
    bool has_fetch_answer; /* FOLLOWER_FETCH only */
    struct repl_fetch_answer fetch;
    bool hw_advanced;       /* complete acks=all writes below it, */
    int64_t high_watermark; /* and expose it to consumers */
    bool isr_changed;       /* committed ISR or partition epoch */
    bool propose;           /* send `proposal` to the controller */
    struct repl_isr_proposal proposal;
    uint64_t next_tick_ms; /* deliver TICK then; REPL_TICK_NEVER */
};

/* Become leader: records (leader_epoch, log_end_offset) in `epochs` (the
 * partition's cache, borrowed: it must outlive the leader, and nothing
 * else may change it meanwhile) and starts with every follower's position
 * unknown, so the high watermark stays at the inherited one until all ISR
 * members have fetched in this epoch. ISR members count as caught up at
 * now_ms. Deliver a TICK right after creation: its actions arm the timer
 * and publish any high watermark the ISR allows at once.
 * Errors: WEIR_EINVALID_ARGUMENT (inconsistent config),
 * WEIR_EFENCED_LEADER_EPOCH (the cache already holds this epoch or a newer
 * one: every leadership, including one resumed after a restart, needs a
 * new epoch from the controller), WEIR_ENOMEM. On error *out is NULL and
 * the cache is unchanged. */
WEIR_MUST_CHECK int repl_leader_new(const struct repl_leader_config *cfg,
                                    struct repl_epochs *epochs,
                                    uint64_t now_ms,
                                    struct repl_leader **out);
/* NULL is a no-op. Leaves the epoch cache as it is. */
void repl_leader_free(struct repl_leader *l);

/* Apply one event; *out is overwritten. Errors: WEIR_EINVALID_ARGUMENT (an
 * event that breaks the contract above: LEO going backwards, durable past
 * LEO, an ISR without the leader or outside the replicas); the state is
 * unchanged then. A bad fetch is not an error of the step: it gets an
 * error verdict in out->fetch. */
WEIR_MUST_CHECK int repl_leader_step(struct repl_leader *l,
                                     const struct repl_leader_event *ev,
                                     struct repl_leader_actions *out);

int64_t repl_leader_high_watermark(const struct repl_leader *l);
int64_t repl_leader_log_end_offset(const struct repl_leader *l);
int32_t repl_leader_leader_epoch(const struct repl_leader *l);
int32_t repl_leader_partition_epoch(const struct repl_leader *l);
/* Offset where this leader's epoch starts in its log. */
int64_t repl_leader_epoch_start_offset(const struct repl_leader *l);
/* Committed ISR (as the controller has it). Valid until the next step. */
const struct repl_ids *repl_leader_isr(const struct repl_leader *l);
bool repl_leader_is_in_sync(const struct repl_leader *l, int32_t replica);
bool repl_leader_proposal_in_flight(const struct repl_leader *l);
/* Last fetch offset of a follower in this epoch, REPL_OFFSET_NONE if it
 * has not fetched yet (or is not a replica). */
int64_t repl_leader_follower_offset(const struct repl_leader *l,
                                    int32_t replica);

/* acks=all may be accepted: committed ISR size >= min.insync.replicas.
 * Otherwise answer NOT_ENOUGH_REPLICAS without appending. An accepted
 * write at last offset O is acknowledged once high watermark > O. */
bool repl_leader_can_accept_acks_all(const struct repl_leader *l);
/* The high watermark has reached the start of this leader's epoch, so it
 * is at least every high watermark an earlier leader published (KIP-207).
 * Until then, "latest offset" answers may go backwards: refuse them. */
bool repl_leader_hw_established(const struct repl_leader *l);

/* 0, or WEIR_ECORRUPT when an internal invariant is broken (tests). */
int repl_leader_check_invariants(const struct repl_leader *l);

#endif /* BROKER_REPLICA_REPL_LEADER_H */
