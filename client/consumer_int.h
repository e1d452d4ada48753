/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer internals shared by consumer.c (API, assignment, records) and
 * consumer_fetch.c (ListOffsets and Fetch requests and replies).
 * Locality: the client's thread. */
#ifndef CLIENT_CONSUMER_INT_H
#define CLIENT_CONSUMER_INT_H

#include "client/assignor.h"
#include "client/cgrp.h"
#include "client/client.h"
#include "client/recset.h"

enum cons_state {
    CONS_NEED_OFFSET, /* start position to resolve with ListOffsets */
    CONS_OFFSET_WAIT, /* ListOffsets in flight */
    CONS_FETCHABLE,
    CONS_FAILED, /* a non-retriable error; fetching stopped */
};

/* One assigned partition. Entries are kept until the consumer is freed
 * (an in-flight request may point at them); unassigning only clears
 * `assigned`. */
struct cons_part {
    char *topic;
    int32_t partition;
    bool assigned;
    enum cons_state state;
    enum weir_start start; /* how to resolve CONS_NEED_OFFSET */
    int64_t start_value;
    int64_t position;     /* next offset for the application */
    int64_t fetch_offset; /* next offset to fetch */
    bool fetch_inflight;
    bool buffered;      /* a chunk of it is queued */
    uint32_t max_bytes; /* partition_max_bytes, grown for big batches */
    uint64_t backoff_until_ms;
    uint32_t epoch; /* bumped by seek/reset: older replies dropped */
    int err;        /* last error, 0 when healthy */
    char err_msg[300];
    uint64_t failing_since_ms; /* first of a run of retriable errors */
    bool err_reported;
};

/* Fetched records of one partition, waiting for the application. */
struct cons_chunk {
    struct cons_chunk *next;
    struct cons_part *part;
    uint32_t epoch; /* part's epoch when fetched */
    uint8_t *data;  /* owned copy of the whole batches */
    struct recset rs;
    int64_t next_offset; /* the position once the chunk is used up */
};

/* A ListOffsets or Fetch request in flight; orphaned (k = NULL) when the
 * consumer is freed first. */
struct cons_req {
    struct cons_req *next;
    struct cons_req *prev;
    struct weir_consumer *k;
    bool is_fetch;
    uint64_t sent_us;
    size_t n;
    struct cons_req_part {
        struct cons_part *part;
        uint32_t epoch;
        int64_t fetch_offset;
    } * parts;
};

/* A group request in flight, then (done) a reply waiting to be stepped
 * into the core outside pool_poll; orphaned (k = NULL) when the consumer
 * is freed first. */
struct cgrp_io_req {
    struct cgrp_io_req *next;
    struct cgrp_io_req *prev;
    struct weir_consumer *k;
    enum cgrp_req kind;
    int err;
    char err_msg[300];
    Weir__Response *resp; /* taken from the reply; owned */
};

/* The consumer's group side (consumer_group.c); unused without a group. */
struct cons_group {
    char *group_id;   /* owned; NULL = no group */
    char *strategies; /* owned comma list */
    struct cgrp core;
    char **topics; /* subscription, owned */
    size_t n_topics;
    struct cgrp_io_req *inflight;  /* doubly linked */
    struct cgrp_io_req *done_head; /* FIFO of replies to step */
    struct cgrp_io_req *done_tail;
    Weir__Response *join;      /* leader: members of the last JoinGroup */
    Weir__Response *offsets;   /* last OffsetFetch, for the assignment */
    struct asg_tp *prev_owned; /* sticky: last revoked, topics owned */
    size_t n_prev_owned;
    int32_t prev_generation;
    int32_t generation; /* of the live assignment, -1 none */
    uint64_t wake_ms;
    struct weir_committed *commit_sent; /* offsets of the last commit sent;
                                           topics borrowed from `topics` */
    size_t n_commit_sent;
    uint64_t commits_sent;
    uint64_t commits_done;
    int commit_err; /* of the last answered commit */
    char commit_msg[300];
    int err; /* to report from poll, 0 none */
    char err_msg[600];
    bool closed;
};

struct weir_consumer {
    struct weir_client *c; /* borrowed */
    struct weir_consumer_config cfg;
    struct cons_part **parts;
    size_t n_parts;
    size_t cap_parts;
    struct cons_chunk *head; /* queued chunks, oldest first */
    struct cons_chunk *tail;
    struct cons_req *reqs;  /* in flight */
    struct weir_record rec; /* the record last returned */
    uint64_t wake_ms;       /* earliest backoff end */
    bool manual;            /* weir_consumer_assign was used */
    struct cons_group grp;
};

/* Find or add the entry of a partition; NULL when out of memory. */
struct cons_part *consumer_part_get(struct weir_consumer *k,
                                    const char *topic,
                                    int32_t partition);
/* Start (or restart) a partition at a position. */
void consumer_part_start(struct weir_consumer *k,
                         struct cons_part *cp,
                         const struct weir_assignment *a);

/* Group side (consumer_group.c). init copies the config's group fields;
 * fini frees (after close). pump steps queued replies and timers into the
 * core and carries out its actions; it returns an error to report. */
WEIR_MUST_CHECK int consumer_group_init(struct weir_consumer *k,
                                        const struct weir_consumer_config *cfg,
                                        struct err_detail *ed);
void consumer_group_fini(struct weir_consumer *k);
WEIR_MUST_CHECK int consumer_group_pump(struct weir_consumer *k,
                                        struct err_detail *ed);
/* Send the request the core asked for (consumer_group_req.c). */
void consumer_group_send(struct weir_consumer *k, enum cgrp_req kind);
/* A request that could not be sent: its failure is queued as its reply. */
void consumer_group_fail(struct weir_consumer *k,
                         struct cgrp_io_req *q,
                         int err,
                         const char *msg);
/* Send SyncGroup with these assignments (borrowed; leader only). */
void consumer_group_sync(struct weir_consumer *k,
                         Weir__MemberAssignment **as,
                         size_t n,
                         struct cgrp_io_req *q);
/* SyncGroup: as the leader, run the assignor over the last JoinGroup's
 * members first (consumer_group_assign.c). */
void consumer_group_leader_sync(struct weir_consumer *k, struct cgrp_io_req *q);
/* Carry out the core's assign / revoke actions. */
void consumer_group_assign(struct weir_consumer *k);
void consumer_group_revoke(struct weir_consumer *k);

/* Send ListOffsets for parts needing a start and fetches for fetchable
 * parts with nothing buffered or in flight; sets k->wake_ms. */
void consumer_pump(struct weir_consumer *k);

/* Record an error for a partition: retriable ones back off (and refresh
 * metadata), others stop the partition. */
void consumer_part_error(struct weir_consumer *k,
                         struct cons_part *cp,
                         int err,
                         const char *msg,
                         uint64_t now);

/* Queue a chunk (takes data). */
void consumer_add_chunk(struct weir_consumer *k,
                        struct cons_part *cp,
                        uint8_t *data,
                        size_t len,
                        int64_t skip_below,
                        int64_t next_offset);

#endif /* CLIENT_CONSUMER_INT_H */
