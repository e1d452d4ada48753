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
};

/* Defaults: 500 ms, 1 byte, 16 MiB, 4 MiB, EARLIEST, 100 ms, 30 s. */
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

#endif /* CLIENT_WEIR_CONSUMER_H */
