/* SPDX-License-Identifier: Apache-2.0 */
/* Producer record accumulator for one partition: a FIFO of batches, the
 * last one open for appends. Pure and clock-driven (times come in as
 * arguments), so batching by size and linger is tested without a network.
 * A batch is ready when it is full (closed), has lingered linger_ms, is
 * being flushed, or is a retry whose backoff has passed; a retry waits at
 * the head, so newer batches of its partition cannot overtake it.
 * Ownership: a queued batch belongs to its queue; a popped one to the
 * caller (the in-flight request) until requeued or freed.
 * Locality: the producer's thread. */
#ifndef CLIENT_ACCUM_H
#define CLIENT_ACCUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/producer_idem.h"
#include "common/batch.h"
#include "common/err.h"

struct accum_config {
    uint32_t linger_ms;
    uint32_t batch_size_bytes;    /* close a batch before it passes this */
    uint32_t delivery_timeout_ms; /* from a batch's creation */
};

struct accum_queue;

struct accum_batch {
    struct accum_batch *next;
    struct accum_queue *q; /* the partition it belongs to */
    struct batch_builder bb;
    struct weir_slice bytes; /* the encoded batch, once closed */
    bool closed;
    int32_t count;
    void **opaques; /* one per record, for delivery reports */
    size_t cap_opaques;
    uint64_t seq; /* creation order within the partition */
    uint64_t created_ms;
    uint64_t deadline_ms; /* created_ms + delivery timeout */
    uint64_t retry_at_ms; /* not before this; 0 = first attempt */
    uint32_t attempts;    /* sends so far */
    /* The first attempt that ended without a definite answer (timeout,
     * lost connection, an error after the append): the records may be in
     * the log. 0 = every attempt so far was certainly refused. */
    int indef_err;
    bool solo;        /* send with no other batch of its partition */
    size_t est_bytes; /* sum of accum_record_bytes, for buffering */
    struct producer_idem_stamp stamp; /* idempotence: kept for retries */
    bool inflight;                    /* inside a request now */
    int32_t sent_leader;              /* broker id of the last send */
};

struct accum_queue {
    struct accum_batch *head; /* oldest */
    struct accum_batch *tail; /* the open one, if any */
    const char *topic;        /* borrowed from the producer's topic */
    int32_t partition;
    size_t n_batches;
    uint64_t next_seq;
    int last_err; /* why the last send failed (for timeouts) */
    /* Broker id a send failed against with a leader or transport error,
     * -1 = none: while metadata still names it, metadata is refreshed;
     * once it names another leader, the retries go at once. */
    int32_t stale_leader;
    char last_msg[256];
    struct producer_idem_part idem; /* sequence numbers (idempotence) */
};

void accum_queue_init(struct accum_queue *q,
                      const char *topic,
                      int32_t partition);
/* Free every queued batch (their records must be reported first). */
void accum_queue_fini(struct accum_queue *q);

/* Bytes a record adds to a batch, at most (for limits and buffering). */
size_t accum_record_bytes(size_t key_len, size_t value_len);

/* Append a record (key NULL = null key, value NULL = null value), closing
 * the open batch first if the record would take it past batch_size.
 * Errors: WEIR_ENOMEM (nothing appended). */
WEIR_MUST_CHECK int accum_append(struct accum_queue *q,
                                 const struct accum_config *cfg,
                                 uint64_t now_ms,
                                 int64_t timestamp_ms,
                                 const void *key,
                                 size_t key_len,
                                 const void *value,
                                 size_t value_len,
                                 void *opaque);

/* Whether the head batch may be sent now. When not, *wake_ms is lowered
 * to when it will be (left alone if the queue is empty). */
bool accum_ready(const struct accum_queue *q,
                 const struct accum_config *cfg,
                 uint64_t now_ms,
                 bool flushing,
                 uint64_t *wake_ms);

/* Unlink the head batch, closing (encoding) it if open. NULL when empty.
 * Errors go to *err: WEIR_ENOMEM (the batch stays queued). */
struct accum_batch *accum_pop(struct accum_queue *q, int *err);

/* The head batch if its delivery deadline has passed, unlinked. */
struct accum_batch *accum_pop_expired(struct accum_queue *q, uint64_t now_ms);

/* Put a batch back for another attempt, in creation order, not before
 * retry_at_ms. */
void accum_requeue(struct accum_queue *q,
                   struct accum_batch *b,
                   uint64_t retry_at_ms);

/* Make every queued retry ready now (its partition has a new leader:
 * the backoff was for the old one). */
void accum_retry_now(struct accum_queue *q);

/* Bytes of a batch (encoded size once closed). */
size_t accum_batch_bytes(const struct accum_batch *b);
void accum_batch_free(struct accum_batch *b);

#endif /* CLIENT_ACCUM_H */
