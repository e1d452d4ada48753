/* SPDX-License-Identifier: Apache-2.0 */
/* libweir consumer: assigned partitions with start positions, long-poll
 * fetches, records in offset order per partition (part of the public API;
 * include client/weir.h). Locality: the client's thread. */
#ifndef CLIENT_WEIR_CONSUMER_H
#define CLIENT_WEIR_CONSUMER_H

#include "client/weir_client.h"

enum weir_start {
    WEIR_START_OFFSET,    /* value = offset */
    WEIR_START_EARLIEST,  /* log start */
    WEIR_START_LATEST,    /* next offset to be written */
    WEIR_START_TIMESTAMP, /* value = ms since the epoch; latest if none */
};

struct weir_assignment {
    const char *topic; /* copied */
    int32_t partition;
    enum weir_start start;
    int64_t value;
};

struct weir_record {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp; /* ms since the epoch */
    bool key_null;
    const void *key;
    size_t key_len;
    bool value_null;
    const void *value;
    size_t value_len;
};

/* A partition of a group member's assignment. */
struct weir_topic_partition {
    const char *topic;
    int32_t partition;
};

/* Rebalance callbacks, run inside weir_consumer_poll (or close): the
 * partitions given to the member, or taken from it. on_revoke runs after
 * the auto commit (if on) and before the partitions are dropped; it may
 * read positions but not poll, commit or close. */
typedef void weir_rebalance_fn(void *cb_arg,
                               const struct weir_topic_partition *tps,
                               size_t n);

/* An offset a group member committed for a partition: the next record to
 * consume. */
struct weir_committed {
    const char *topic;
    int32_t partition;
    int64_t offset;
};

/* Called when a commit is answered: the offsets it carried, and 0 or the
 * error (a commit that failed in part gives its first partition error; a
 * commit lost with its connection may or may not have been applied). */
typedef void weir_commit_fn(void *cb_arg,
                            const struct weir_committed *offsets,
                            size_t n,
                            int err);

/* Called after every fetch response with its round-trip time. */
typedef void
weir_fetch_fn(void *cb_arg, uint64_t latency_us, size_t payload_bytes);

struct weir_consumer_config {
    uint32_t fetch_max_wait_ms;   /* broker long-poll */
    uint32_t fetch_min_bytes;     /* broker answers once it has this */
    uint32_t fetch_max_bytes;     /* per response */
    uint32_t partition_max_bytes; /* per partition (grows for big batches) */
    enum weir_start reset;        /* on OFFSET_OUT_OF_RANGE: EARLIEST,
                                     LATEST, or OFFSET = report an error */
    uint32_t retry_backoff_ms;    /* after a retriable error */
    uint32_t error_timeout_ms;    /* retriable errors this long are
                                     reported by weir_consumer_poll */
    weir_fetch_fn *on_fetch;      /* may be NULL */
    void *cb_arg;

    /* Consumer group (weir_consumer_subscribe). `reset` above is also the
     * group's auto offset reset: where a partition with no committed
     * offset starts (EARLIEST, LATEST, or OFFSET = none: the partition
     * fails with WEIR_EOFFSET_OUT_OF_RANGE). */
    const char *group_id;           /* copied; NULL = no group */
    uint32_t session_timeout_ms;    /* coordinator evicts a silent member */
    uint32_t heartbeat_interval_ms; /* at most session_timeout_ms / 3 */
    uint32_t rebalance_timeout_ms;  /* longest a rebalance may wait */
    const char *strategies;         /* "range,roundrobin,sticky": assignors, in
                                       order of preference; copied */
    bool auto_commit;               /* commit positions periodically, on revoke
                                       and on close */
    uint32_t auto_commit_interval_ms;
    weir_rebalance_fn *on_assign; /* may be NULL; get cb_arg */
    weir_rebalance_fn *on_revoke; /* may be NULL; get cb_arg */
    /* Called (with cb_arg) just before positions are committed: a commit
     * covers every record poll has handed out, so an application that
     * buffers its output (stdio) must flush it here, or a crash after the
     * commit loses what was still buffered. May be NULL. */
    void (*before_commit)(void *cb_arg);
    weir_commit_fn *on_commit; /* may be NULL; gets cb_arg */
};

/* Defaults: 500 ms, 1 byte, 16 MiB, 4 MiB, EARLIEST, 100 ms, 30 s; group:
 * none, session 10 s, heartbeat 3 s, rebalance 30 s,
 * "range,roundrobin,sticky" (range unless a member lacks it), auto
 * commit on every 5 s. */
void weir_consumer_config_init(struct weir_consumer_config *cfg);

WEIR_MUST_CHECK int weir_consumer_new(struct weir_client *c,
                                      const struct weir_consumer_config *cfg,
                                      struct weir_consumer **out,
                                      struct err_detail *ed);
void weir_consumer_free(struct weir_consumer *k);

/* Replace the assignment and resolve every start position (ListOffsets
 * for EARLIEST, LATEST and TIMESTAMP), polling until done. Errors:
 * WEIR_EUNKNOWN_TOPIC_OR_PARTITION (no such topic or partition),
 * WEIR_EINVALID_ARGUMENT, transport errors. */
WEIR_MUST_CHECK int weir_consumer_assign(struct weir_consumer *k,
                                         const struct weir_assignment *a,
                                         size_t n,
                                         struct err_detail *ed);

/* Next record, in offset order within each partition, waiting up to
 * timeout_ms (-1 = forever, until a record, an error or an interrupting
 * signal). *rec is NULL when none came; it stays valid until the next
 * call. Retriable errors are retried; one persisting past error_timeout_ms
 * is returned (fetching goes on). Errors: the partition's error, or
 * WEIR_EINVALID_ARGUMENT when called from inside a callback. */
WEIR_MUST_CHECK int weir_consumer_poll(struct weir_consumer *k,
                                       int timeout_ms,
                                       const struct weir_record **rec,
                                       struct err_detail *ed);

/* Next offset the application will see for a partition, -1 if unknown. */
int64_t weir_consumer_position(const struct weir_consumer *k,
                               const char *topic,
                               int32_t partition);
/* Move a partition's position; buffered records for it are dropped.
 * Errors: WEIR_ENOT_FOUND when the partition is not assigned. */
WEIR_MUST_CHECK int weir_consumer_seek(struct weir_consumer *k,
                                       const char *topic,
                                       int32_t partition,
                                       int64_t offset,
                                       struct err_detail *ed);

/* Move a partition to the log start, the end, a timestamp (the first
 * record at or after it, else the end) or an offset (value). Resolved by
 * the next polls; the position is -1 until then. Errors: as
 * weir_consumer_seek. */
WEIR_MUST_CHECK int weir_consumer_seek_to(struct weir_consumer *k,
                                          const char *topic,
                                          int32_t partition,
                                          enum weir_start start,
                                          int64_t value,
                                          struct err_detail *ed);

/* Join the configured group, subscribed to these topics (copied; a new
 * call replaces the subscription and rebalances). Returns at once: the
 * group is joined, partitions assigned (from their committed offsets, else
 * `reset`) and heartbeats sent from inside weir_consumer_poll, which must
 * run at least every heartbeat interval. Errors: WEIR_EINVALID_ARGUMENT
 * (no group_id, no topics, or weir_consumer_assign was used),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int weir_consumer_subscribe(struct weir_consumer *k,
                                            const char *const *topics,
                                            size_t n,
                                            struct err_detail *ed);

/* Commit the positions of the owned partitions with the member's
 * generation. sync: wait for the answer (up to the request timeout) and
 * return its error; else return at once (errors come from poll).
 * Errors: WEIR_EREBALANCE_IN_PROGRESS (not in a stable group now),
 * WEIR_EILLEGAL_GENERATION, WEIR_EUNKNOWN_MEMBER_ID (fenced: the member
 * rejoins), coordinator and transport errors, WEIR_EINVALID_ARGUMENT. */
WEIR_MUST_CHECK int
weir_consumer_commit(struct weir_consumer *k, bool sync, struct err_detail *ed);

/* Leave the group: commit (auto commit on), revoke, LeaveGroup, waiting
 * up to the request timeout. Without a group, a no-op. Afterwards only
 * weir_consumer_free is allowed. weir_consumer_free closes too, ignoring
 * errors. Errors: the final commit's. */
WEIR_MUST_CHECK int weir_consumer_close(struct weir_consumer *k,
                                        struct err_detail *ed);

/* The partitions assigned now (by the group or weir_consumer_assign):
 * fills up to cap entries (topics valid until the next poll) and returns
 * the count. */
size_t weir_consumer_assignment(const struct weir_consumer *k,
                                struct weir_topic_partition *out,
                                size_t cap);

/* The group generation of the current assignment, -1 when none. */
int32_t weir_consumer_generation(const struct weir_consumer *k);

#endif /* CLIENT_WEIR_CONSUMER_H */
