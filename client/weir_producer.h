/* SPDX-License-Identifier: Apache-2.0 */
/* libweir producer: batching per partition, pipelined requests, retries,
 * a delivery report per record (part of the public API; include
 * client/weir.h).
 * Locality: the client's thread. */
#ifndef CLIENT_WEIR_PRODUCER_H
#define CLIENT_WEIR_PRODUCER_H

#include <poll.h>

#include "client/weir_client.h"

struct weir_delivery {
    const char *topic; /* borrowed for the callback */
    int32_t partition;
    int64_t offset;        /* -1 with acks=0 or on error */
    int error_code;        /* 0 = written; else weir_err_definite() of it
                              is true only if the record is certainly not
                              in the log (no attempt of it can have been
                              written; see weir_producer_config_init) */
    const char *error_msg; /* "" when error_code == 0 */
    void *opaque;          /* as given to weir_produce */
};

/* Called once per record, in record order within a partition, from inside
 * weir_produce / weir_producer_poll* / weir_producer_flush. It must not
 * call producer functions. */
typedef void weir_delivery_fn(void *cb_arg, const struct weir_delivery *d);

struct weir_producer_config {
    int32_t acks;                  /* 0, 1 or -1 (all) */
    uint32_t linger_ms;            /* wait this long to fill a batch */
    uint32_t batch_size_bytes;     /* close a batch at this size */
    uint32_t max_in_flight;        /* requests per connection, 1..5 */
    uint32_t max_request_bytes;    /* payload bytes per produce request */
    uint32_t retries;              /* per batch, for acks >= 1 */
    uint32_t retry_backoff_ms;     /* doubles per attempt ... */
    uint32_t retry_backoff_max_ms; /* ... up to this */
    uint32_t delivery_timeout_ms;  /* from weir_produce to the final report */
    uint32_t request_timeout_ms;   /* broker-side wait for acks */
    uint64_t buffer_max_bytes;     /* weir_produce blocks past this */
    uint32_t max_block_ms;         /* ... at most this long */
    bool idempotence;              /* retries never write a record twice */
    weir_delivery_fn *on_delivery; /* may be NULL */
    void *cb_arg;
};

/* Defaults: acks all, linger 5 ms, batch 64 KiB, 5 in flight, 4 MiB per
 * request, 2^31 retries bounded by a 120 s delivery timeout, backoff
 * 100..1000 ms, request timeout 30 s, 64 MiB buffer, max block 60 s,
 * idempotence on.
 * Idempotence: the producer gets a producer id (InitProducerId) before
 * its first send and stamps each batch with a sequence number per
 * partition; a retry of a batch the broker already wrote is answered with
 * the original offsets, so each record is written and reported once, in
 * order, even across lost replies and broker restarts. It needs acks 1 or
 * all and is off with acks 0. A batch refused for a gap in the sequence
 * while an older batch of its partition is unresolved waits for that one
 * (retries go one at a time, in order) and never fails for it: if its
 * delivery timeout runs out, it is reported WEIR_EREQUEST_TIMED_OUT with
 * the older batch's error in the message. When the oldest batch fails for
 * good, the partition starts over under the next producer epoch, so later
 * batches are written (KIP-360).
 * Honest outcomes: a failure is reported with a definite code only when
 * no attempt of the record can have been written; when an earlier attempt
 * ended without a definite answer (a timeout, a lost connection, an
 * answer after the append) and a later one is refused, the record is
 * reported with that earlier, indefinite code, and the message names
 * both. */
void weir_producer_config_init(struct weir_producer_config *cfg);

/* Errors: WEIR_EINVALID_ARGUMENT (bad config), WEIR_ENOMEM. */
WEIR_MUST_CHECK int weir_producer_new(struct weir_client *c,
                                      const struct weir_producer_config *cfg,
                                      struct weir_producer **out,
                                      struct err_detail *ed);
/* Records not yet reported are reported: queued ones with
 * WEIR_ESHUTTING_DOWN, ones in a request still unanswered with
 * WEIR_EREQUEST_TIMED_OUT (they may have been written). Call
 * weir_producer_flush first to deliver them. NULL is a no-op. */
void weir_producer_free(struct weir_producer *p);

/* Queue one record; key and value are copied. key NULL = null key (keyless
 * records go to a sticky partition, keyed ones to murmur2(key) mod
 * partitions, as Kafka's default partitioner), value NULL = null value.
 * partition WEIR_PARTITION_ANY lets the partitioner choose. timestamp_ms
 * -1 = now. The first record for a topic fetches its metadata, and a full
 * buffer makes the call poll until there is room: both block up to
 * max_block_ms. Errors: WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
 * WEIR_EINVALID_ARGUMENT, WEIR_EMESSAGE_TOO_LARGE, WEIR_EREQUEST_TIMED_OUT,
 * WEIR_ENETWORK, WEIR_ENOMEM. On error no callback will come. */
WEIR_MUST_CHECK int weir_produce(struct weir_producer *p,
                                 const char *topic,
                                 int32_t partition,
                                 const void *key,
                                 size_t key_len,
                                 const void *value,
                                 size_t value_len,
                                 int64_t timestamp_ms,
                                 void *opaque,
                                 struct err_detail *ed);

/* Send what is ready and wait up to timeout_ms (-1 = until something
 * happens) for replies, running delivery callbacks. extra: the caller's
 * own fds to wait on as well (revents filled in). Returns 0, or
 * WEIR_EINVALID_ARGUMENT when called from inside a callback. */
int weir_producer_poll_fds(struct weir_producer *p,
                           struct pollfd *extra,
                           size_t n_extra,
                           int timeout_ms);
int weir_producer_poll(struct weir_producer *p, int timeout_ms);

/* Send everything now and poll until every record is reported.
 * Errors: WEIR_EREQUEST_TIMED_OUT when records remain after timeout_ms. */
WEIR_MUST_CHECK int weir_producer_flush(struct weir_producer *p,
                                        int timeout_ms,
                                        struct err_detail *ed);
/* Records queued or in flight, not yet reported. */
size_t weir_producer_outstanding(const struct weir_producer *p);

#endif /* CLIENT_WEIR_PRODUCER_H */
