/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by repl_io.c (roles, leader side), repl_io_epochs.c
 * (the epoch checkpoint), repl_io_follow.c (the follower core) and
 * fetcher.c (the connection to a leader).
 * Locality: broker loop thread only. */
#ifndef BROKER_REPLICA_REPL_IO_INT_H
#define BROKER_REPLICA_REPL_IO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/cluster/cluster.h"
#include "broker/replica/repl_epochs.h"
#include "broker/replica/repl_follower.h"
#include "broker/replica/repl_io.h"

#define REPL_IO_FETCH_BACKOFF_MS 200 /* after a refused or failed fetch */
#define REPL_IO_RETRY_MS                                                       \
    1000 /* a new follower core after a failure                                \
            that is not the disk's */

struct event;
struct fetcher;
struct plog;
struct repl_leader;
struct repl_io_lead;

struct repl_io_part {
    char *topic; /* owned */
    int64_t topic_id;
    int32_t partition;
    enum cluster_role role;
    int32_t leader; /* -1: none */
    int32_t leader_epoch;
    bool loaded; /* epochs read from the checkpoint (or none there) and
                    reconciled with the log, successfully */
    struct repl_epochs epochs;
    struct repl_io_lead *lead; /* owned; leader with a repl_leader only */
    /* As a follower: the high watermark the leader last reported (-1 none).
     * A follower promoted to leader starts from it (capped at its log
     * end), so what consumers could read before the failover stays
     * readable; it is committed, so every ISR member holds it. */
    int64_t follower_hw;
    struct repl_follower *follow; /* owned; the follower core while this
                                     broker follows in (leader, epoch) */
    uint32_t follow_gen;          /* bumped with every new follower core */
    uint32_t sent_gen;            /* follow_gen of the last fetch sent: an
                                     answer to an older core is dropped */
    /* This replica can neither lead nor follow in its current leadership
     * (repl_io_part_failed): as leader it answers LEADER_NOT_AVAILABLE and
     * exposes no high watermark. Cleared by the next leadership change or
     * when its log comes back online (repl_io_log_reopened). */
    bool failed;
    const struct plog *failed_log; /* borrowed: the log it failed on */
    /* No follower core before this (monotonic ms; 0: none): set by
     * repl_io_follow_failed, cleared by the next leadership change. */
    uint64_t retry_at_ms;
};

struct repl_io {
    struct broker *b;
    struct repl_io_part **parts; /* owned; stable addresses (a
                                    repl_leader borrows p->epochs) */
    uint32_t n;
    uint32_t cap;
    struct fetcher **fetchers; /* owned; one per leader broker */
    uint32_t n_fetchers;
    struct event *wake_ev; /* deferred: complete waits after HW moved */
};

/* What a leader answered for one partition of a follower's fetch. */
struct repl_io_answer {
    int err;                      /* error_code, 0 for none */
    const char *err_msg;          /* never NULL */
    int32_t leader_epoch;         /* the leader's, as it answered */
    int64_t log_start_offset;     /* the leader's, -1 unknown */
    int64_t high_watermark;       /* the leader's, -1 unknown */
    int32_t diverging_epoch;      /* with diverging_end_offset >= 0 */
    int64_t diverging_end_offset; /* -1: not diverging */
    const uint8_t *data;          /* record batches (borrowed) */
    size_t len;
};

/* repl_io_epochs.c: read the part's epoch cache from the log's directory
 * and reconcile it with the log's batch headers, once: p->loaded is set
 * only when that succeeded, so a failed reconcile (a read error, no
 * memory) is done again by the next call (the next leadership, follower
 * core or reopened log), from the correct prefix it rebuilt. Returns 0 or
 * the reconcile's error (WEIR_EIO, WEIR_ELOG_OFFLINE, WEIR_ENOMEM, ...). */
WEIR_MUST_CHECK int repl_io_part_load(struct repl_io_part *p, struct plog *log);
/* repl_io_epochs.c: write the part's epoch cache to
 * <log dir>/leader-epoch-checkpoint atomically. Errors: WEIR_ENOMEM,
 * WEIR_EIO (ed names the file and call). */
WEIR_MUST_CHECK int repl_io_part_store(const struct repl_io_part *p,
                                       const struct plog *log,
                                       struct err_detail *ed);

/* The one way to say "this replica cannot serve or lead now": stops the
 * leadership (acks=all writes waiting on it fail LEADER_NOT_AVAILABLE),
 * drops the follower core, makes the partition answer
 * LEADER_NOT_AVAILABLE while this broker is its leader (no high
 * watermark), traces an error naming why and, unless the storage layer
 * took it offline already, takes the log offline with err
 * (plog_mark_offline: cause io for a disk error, replica for anything
 * else, e.g. a leader epoch that is not new), so heartbeats list the
 * replica and the controller moves the leadership away: the only way a
 * broker has to ask for it. Lasts until the next leadership change of p
 * or until log_health brings the log back. log may be NULL.
 * Followers go through repl_io_follow_failed instead. */
void repl_io_part_failed(struct repl_io *io,
                         struct repl_io_part *p,
                         struct plog *log,
                         int err,
                         const char *fmt,
                         ...) WEIR_PRINTF(5, 6);

/* The log's durable end as replication counts it: fsynced under
 * flush-policy=ack, else appended. */
int64_t repl_io_durable_end(const struct plog *log);

/* repl_io_follow.c: a step of p's follower failed with err. When the log
 * is offline now (the storage layer took it offline: an error of the
 * disk, as plog_failed classifies them), the partition fails
 * (repl_io_part_failed). Anything else (a batch the log refuses, a bad
 * argument, no memory, an epoch history that contradicts the leader) is
 * not the disk's: the follower core is dropped (it may count records the
 * log lacks) and a new one starts from the log REPL_IO_RETRY_MS later,
 * traced event=follower_retry (warn). The log stays online. */
void repl_io_follow_failed(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           int err,
                           const char *fmt,
                           ...) WEIR_PRINTF(5, 6);

/* repl_io_follow.c: the follower core of p (created on first use from
 * the log's state), or NULL when p does not follow now or cannot (a
 * failure is routed through repl_io_follow_failed). */
struct repl_follower *repl_io_follow_core(struct repl_io *io,
                                          struct repl_io_part *p,
                                          struct plog *log);
/* Drop p's follower core (a new leadership, or p goes). */
void repl_io_follow_drop(struct repl_io_part *p);
/* The parameters of p's next fetch when it may be sent now (marks it
 * sent); else false, lowering *next_ms to when it may (the end of a
 * backoff or of retry_at_ms; unchanged when never: stopped). */
bool repl_io_follow_params(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           uint64_t now_ms,
                           struct repl_fetch_params *out,
                           uint64_t *next_ms);
/* Apply the leader's answer for p: events to the core, then its actions
 * (append, flush, truncate or restart the log, checkpoint the epochs). An
 * answer to a fetch of an older core is ignored. */
void repl_io_follow_answer(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           const struct repl_io_answer *a);

#endif /* BROKER_REPLICA_REPL_IO_INT_H */
