/* SPDX-License-Identifier: Apache-2.0 */
/* Producer internals shared by producer.c (API, accumulation) and
 * producer_send.c (requests, replies, retries).
 * Locality: the client's thread. */
#ifndef CLIENT_PRODUCER_INT_H
#define CLIENT_PRODUCER_INT_H

#include "client/accum.h"
#include "client/client.h"
#include "client/partitioner.h"

struct prod_topic {
    char *name;
    int32_t n_partitions;       /* fixed when the topic is first used */
    struct accum_queue *queues; /* n_partitions */
    struct partitioner_sticky sticky;
};

/* One produce request in flight. Owns its batches. Stays alive after the
 * producer is freed (p == NULL) until the connection calls back. */
struct prod_request {
    struct prod_request *next;
    struct prod_request *prev;
    struct weir_producer *p;
    size_t n; /* batches, grouped by partition */
    size_t cap;
    struct accum_batch **batches;
    size_t bytes;
    uint64_t sent_ms;
};

/* A request unanswered this long makes the producer refresh metadata (and
 * keep refreshing while it stays unanswered): if its broker was fenced
 * meanwhile (paused, cut off), the refresh closes the connection to it and
 * the batches go to the new leaders instead of waiting for the request
 * timeout. */
#define PRODUCER_SLOW_REQUEST_MS 500

struct weir_producer {
    struct weir_client *c; /* borrowed */
    struct weir_producer_config cfg;
    struct accum_config acfg;
    struct prod_topic **topics;
    size_t n_topics;
    size_t cap_topics;
    struct prod_topic *last_topic; /* lookup cache */
    size_t outstanding;            /* records not yet reported */
    uint64_t buffered_bytes;       /* estimate, queued + in flight */
    bool flushing;                 /* every open batch is ready */
    uint64_t wake_ms;              /* next timer (linger, backoff) */
    uint32_t seed;                 /* sticky partitioner start */
    struct prod_request *inflight; /* list */

    /* idempotence (producer_idem.h); the id comes from InitProducerId */
    bool idem_on;                   /* configured, and acks != 0 */
    struct producer_idem idem;      /* the id new stamps use */
    struct prod_pid_call *pid_call; /* InitProducerId in flight, or NULL */
    uint64_t pid_retry_ms;          /* next InitProducerId not before */
    int pid_err;                    /* why the last one failed, or 0 */
    char pid_msg[256];
    bool pid_fatal; /* the broker gives no ids: records fail with pid_err */
};

/* An InitProducerId call in flight; outlives the producer (p == NULL)
 * until the connection calls back. */
struct prod_pid_call {
    struct weir_producer *p;
};

/* Report every record of a batch (err 0: offsets base_offset + i, or -1
 * when base_offset < 0) and free the batch. */
void producer_deliver(struct weir_producer *p,
                      struct accum_batch *b,
                      int err,
                      const char *msg,
                      int64_t base_offset);

/* Report every queued batch of q as failed with err. */
void producer_fail_queue(struct weir_producer *p,
                         struct accum_queue *q,
                         int err,
                         const char *msg);

/* Expire overdue batches, send ready ones, and set p->wake_ms. */
void producer_pump(struct weir_producer *p);

#endif /* CLIENT_PRODUCER_INT_H */
