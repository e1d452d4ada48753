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
    REPL_FOLLOWER_EV_RECORDS,     /* one batch of a fetch response */
    REPL_FOLLOWER_EV_DURABLE,     /* local durable offset moved */
    REPL_FOLLOWER_EV_LEADER_HW,   /* high watermark of a fetch response */
    REPL_FOLLOWER_EV_DIVERGING,   /* the leader answered "diverging" */
    REPL_FOLLOWER_EV_FETCH_ERROR, /* the leader answered an error */
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
    } u;
};

/* Filled by repl_follower_step; the caller performs them in this order. */
struct repl_follower_actions {
    bool truncate;           /* cut the log: drop every offset >= */
    int64_t truncate_offset; /* this one */
    bool epochs_changed;     /* rewrite the leader-epoch checkpoint, after
                                the truncation and before the next append */
    bool append;             /* RECORDS: the batch is valid; append it */
    bool hw_changed;         /* HW moved (down only on truncation below it,
                                which only an unclean election causes) */
    int64_t high_watermark;
    bool stopped;           /* stop fetching until new leadership info */
    uint64_t next_fetch_ms; /* earliest next fetch; REPL_TICK_NEVER while
                               stopped or waiting for DURABLE */
};

/* Become a follower of cfg->leader_id at cfg->leader_epoch. `epochs` is the
 * partition's cache (borrowed: must outlive the follower; only the
 * follower changes it meanwhile). Entries starting at or after the LEO
 * are dropped (no record of theirs is in the log: typically an epoch this
 * replica led without writing), so the caller should rewrite the
 * checkpoint afterwards. Errors: WEIR_EINVALID_ARGUMENT, WEIR_ENOMEM. On
 * error *out is NULL and the cache is unchanged. */
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

/* Apply one event; *out is overwritten. Errors (state unchanged):
 * WEIR_ECORRUPT_MESSAGE (a batch that does not start at our LEO, is
 * empty, or carries an epoch older than our latest or newer than the
 * leader's), WEIR_EINVALID_ARGUMENT (durable past LEO, an undefined
 * divergence point), WEIR_ENOMEM. */
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
