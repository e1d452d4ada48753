/* SPDX-License-Identifier: Apache-2.0 */
/* Follower side of one partition, as a pure state machine (STYLE 2.7):
 * says what to fetch next, validates what the leader sends, and decides
 * truncation when the leader reports diverging histories (KIP-279). It
 * truncates only where the leader's epoch history says the logs differ,
 * never to its own high watermark (KIP-101; docs/replication.md).
 * Locality: broker loop thread. One instance per (leader, leader epoch):
 * learning of a new leadership means a new repl_follower. */
#ifndef BROKER_REPLICA_REPL_FOLLOWER_H
#define BROKER_REPLICA_REPL_FOLLOWER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/replica/repl_core.h"
#include "broker/replica/repl_epochs.h"
#include "common/err.h"

struct repl_follower; /* opaque */

struct repl_follower_config {
    int32_t self_id;
    int32_t leader_id;
    int32_t leader_epoch;      /* from the controller */
    int64_t log_end_offset;    /* local LEO */
    int64_t durable_offset;    /* local durable end, <= LEO */
    int64_t high_watermark;    /* local HW (checkpoint); clamped to LEO */
    uint64_t fetch_backoff_ms; /* wait after a failed fetch */
};

enum repl_follower_event_type {
    REPL_FOLLOWER_EV_RECORDS,      /* one batch of a fetch response */
    REPL_FOLLOWER_EV_DURABLE,      /* local durable offset moved */
    REPL_FOLLOWER_EV_LEADER_HW,    /* high watermark of a fetch response */
    REPL_FOLLOWER_EV_DIVERGING,    /* the leader answered "diverging" */
    REPL_FOLLOWER_EV_FETCH_ERROR,  /* the leader answered an error */
    REPL_FOLLOWER_EV_OUT_OF_RANGE, /* the leader answered
                                      OFFSET_OUT_OF_RANGE */
};

struct repl_follower_event {
    enum repl_follower_event_type type;
    uint64_t now_ms; /* monotonic, supplied by the caller */
    union {
        struct {
            int32_t epoch;       /* partition leader epoch of the batch */
            int64_t base_offset; /* first offset */
            int64_t end_offset;  /* last offset + 1 */
        } records;
        struct {
            int64_t durable_offset;
        } durable;
        struct {
            int64_t high_watermark;
        } leader_hw;
        struct {
            int32_t epoch;      /* repl_fetch_answer.diverging_epoch */
            int64_t end_offset; /* repl_fetch_answer.diverging_end_offset */
        } diverging;
        struct {
            int err; /* enum weir_err */
        } fetch_error;
        struct {
            int64_t log_start_offset; /* the leader's, from its answer */
        } out_of_range;
    } u;
};

/* Filled by repl_follower_step; the caller performs them in this order. */
struct repl_follower_actions {
    bool truncate;           /* cut the log: drop every offset >= */
    int64_t truncate_offset; /* this one (below the log's start: restart
                                the log empty there instead) */
    bool restart;            /* drop the whole log and start an empty one */
    int64_t restart_offset;  /* whose next offset is this (the leader's log
                                start); durable before the next fetch */
    bool epochs_changed;     /* rewrite the leader-epoch checkpoint, after
                                the truncation and before the next append */
    bool append;             /* RECORDS: the batch is valid; append it */
    bool hw_changed;         /* HW moved (down only on truncation below it,
                                which only an unclean election causes) */
    int64_t high_watermark;
    bool stopped;           /* stop fetching until new leadership info */
    bool stalled;           /* a DIVERGING answer changed nothing: the
                               leader's history is not what it answered
                               before; fetching backs off (worth a trace) */
    uint64_t next_fetch_ms; /* earliest next fetch; REPL_TICK_NEVER while
                               stopped or waiting for DURABLE */
};

/* Become a follower of cfg->leader_id at cfg->leader_epoch. `epochs` is the
 * partition's cache (borrowed: must outlive the follower; only the
 * follower changes it meanwhile). Entries starting at or after the LEO
 * are dropped (no record of theirs is in the log: typically an epoch this
 * replica led without writing, which a leader of a later epoch never
 * has), so the caller should rewrite the checkpoint afterwards.
 * Errors: WEIR_EINVALID_ARGUMENT (inconsistent config, or an epoch of
 * records in the log newer than the leader's), WEIR_ENOMEM. On error *out
 * is NULL and the cache is unchanged. */
WEIR_MUST_CHECK int repl_follower_new(const struct repl_follower_config *cfg,
                                      struct repl_epochs *epochs,
                                      struct repl_follower **out);
/* NULL is a no-op. */
void repl_follower_free(struct repl_follower *f);

/* Parameters of the next fetch. False when none may be sent now: stopped,
 * in backoff, or the log is not durable up to its end yet (the fetch
 * contract in repl_core.h). One fetch in flight at a time. */
bool repl_follower_next_fetch(const struct repl_follower *f,
                              uint64_t now_ms,
                              struct repl_fetch_params *out);

/* When the next fetch may be sent (now_ms if at once), or REPL_TICK_NEVER
 * while stopped or waiting for DURABLE. */
uint64_t repl_follower_next_fetch_ms(const struct repl_follower *f,
                                     uint64_t now_ms);

/* Apply one event; *out is overwritten. Rules beyond KIP-279:
 * - OUT_OF_RANGE with our LEO below the leader's log start: the records we
 *   lack are gone from the leader, so restart the log empty at its start
 *   and clear the epoch cache (Kafka does the same). Otherwise (a fetch
 *   that raced the leader's retention, or a confused leader) back off.
 * - A DIVERGING answer that cuts nothing and drops no epoch entry would
 *   come back identical on the next fetch, for ever: back off instead.
 * - FENCED_LEADER_EPOCH stops fetching until new leadership info (our
 *   view is stale); any other error, NOT_LEADER included (the leader may
 *   not have applied its own leadership yet), backs off and retries.
 * - RECORDS may start past our LEO (offsets the leader's cleaner removed);
 *   the LEO moves to the batch's end.
 * Errors (state unchanged): WEIR_ECORRUPT_MESSAGE (a batch that starts
 * below our LEO, is empty, or carries an epoch older than our latest or
 * newer than the leader's), WEIR_EINVALID_ARGUMENT (durable past LEO,
 * an undefined divergence point or log start), WEIR_ENOMEM. */
WEIR_MUST_CHECK int repl_follower_step(struct repl_follower *f,
                                       const struct repl_follower_event *ev,
                                       struct repl_follower_actions *out);

int64_t repl_follower_log_end_offset(const struct repl_follower *f);
int64_t repl_follower_durable_offset(const struct repl_follower *f);
int64_t repl_follower_high_watermark(const struct repl_follower *f);
int32_t repl_follower_leader_epoch(const struct repl_follower *f);
bool repl_follower_is_stopped(const struct repl_follower *f);

/* 0, or WEIR_ECORRUPT when an internal invariant is broken (tests). */
int repl_follower_check_invariants(const struct repl_follower *f);

#endif /* BROKER_REPLICA_REPL_FOLLOWER_H */
