/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotent producer state of one partition: per producer id, its epoch
 * and the last IDEM_MAX_BATCHES batches it wrote (sequence range and
 * offsets). A produce payload is checked before it is appended (new, a
 * retry of a remembered batch, or refused) and recorded after; replaying
 * the batch headers of the log through the same step rebuilds the state
 * after a restart, so rebuilt state equals live state.
 * Pure: no clock, no files. Time comes in as the batches' max timestamps
 * (as Kafka's producer state does) and the caller's wall clock for expiry.
 * Locality: the owner's thread (the broker loop). */
#ifndef BROKER_IDEM_IDEM_CORE_H
#define BROKER_IDEM_IDEM_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"
#include "common/err.h"

/* Retries a producer may have unanswered per partition; the client keeps
 * at most this many batches in flight per partition. */
#define IDEM_MAX_BATCHES 5

struct idem; /* opaque: idem_core.c */

/* One batch written, as remembered. */
struct idem_batch {
    int32_t first_seq;
    int32_t last_seq; /* first_seq + last_offset_delta, wrapping */
    int64_t base_offset;
    int64_t last_offset;
};

/* A producer as the partition knows it; read-only for callers. */
struct idem_producer {
    int64_t producer_id; /* >= 0 */
    int16_t epoch;
    uint32_t n_batches;                          /* 1..IDEM_MAX_BATCHES */
    struct idem_batch batches[IDEM_MAX_BATCHES]; /* oldest first */
    int64_t last_timestamp_ms; /* max timestamp of its last batch */
};

enum idem_verdict {
    IDEM_VERDICT_APPEND,    /* new (or not idempotent): append it */
    IDEM_VERDICT_DUPLICATE, /* written before: answer, do not append */
    IDEM_VERDICT_REFUSE,    /* answer with `code`, do not append */
};

struct idem_check_result {
    enum idem_verdict verdict;
    int code;            /* REFUSE: OUT_OF_ORDER_SEQUENCE, UNKNOWN_PRODUCER_ID,
                            INVALID_PRODUCER_EPOCH or INVALID_REQUEST */
    int64_t base_offset; /* DUPLICATE: where the payload was written */
    int64_t last_offset;
    uint32_t n_idempotent; /* batches with a producer id */
};

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int idem_new(struct idem **out);
/* NULL is a no-op. */
void idem_free(struct idem *s);
/* Forget every producer (before a rebuild). */
void idem_clear(struct idem *s);

/* Check the batches of one produce payload, headers in log order.
 * Batches with producer_id < 0 bypass the check. Each idempotent batch is
 * judged against the state as it would be after the batches before it:
 *  - unknown producer: its first sequence must be 0, else
 *    UNKNOWN_PRODUCER_ID;
 *  - older epoch: INVALID_PRODUCER_EPOCH; newer epoch: must start at 0,
 *    else OUT_OF_ORDER_SEQUENCE;
 *  - same epoch: exactly one of the remembered batches (first and last
 *    sequence equal) is a duplicate; the next sequence after the last
 *    batch is new; anything else is OUT_OF_ORDER_SEQUENCE (a gap, or a
 *    retry older than the last IDEM_MAX_BATCHES).
 * The payload is a DUPLICATE only when every batch is one and they were
 * written contiguously; duplicates mixed with new or non-idempotent
 * batches are refused with INVALID_REQUEST (send retries on their own).
 * Grows the table so that idem_record cannot fail. Returns 0 with *out
 * filled (ed explains a refusal), or WEIR_ENOMEM. */
WEIR_MUST_CHECK int idem_check(struct idem *s,
                               const struct batch_header *hs,
                               size_t n,
                               struct idem_check_result *out,
                               struct err_detail *ed);

/* The payload just checked (APPEND) was written, its first batch at
 * base_offset and the others right after it. */
void idem_record(struct idem *s,
                 const struct batch_header *hs,
                 size_t n,
                 int64_t base_offset);

/* Rebuild: one batch header read from the log (h->base_offset is its
 * offset), in log order. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int idem_replay(struct idem *s, const struct batch_header *h);

/* Forget producers whose last batch's max timestamp is more than
 * expiry_ms before now_wall_ms. Returns how many were forgotten. */
uint32_t idem_expire(struct idem *s, int64_t now_wall_ms, int64_t expiry_ms);

/* NULL when the producer is unknown. Valid until the next call that
 * changes s. */
const struct idem_producer *idem_find(const struct idem *s,
                                      int64_t producer_id);
uint32_t idem_count(const struct idem *s);
/* Call fn for every producer, in no particular order. */
typedef void (*idem_each_fn)(void *arg, const struct idem_producer *p);
void idem_each(const struct idem *s, idem_each_fn fn, void *arg);
/* Same producers, epochs, batches and timestamps (tests: rebuild). */
bool idem_equal(const struct idem *a, const struct idem *b);
/* Tests: every producer reachable from its home slot, count right,
 * batches ordered. Returns 0 or WEIR_ECORRUPT. */
int idem_check_invariants(const struct idem *s, struct err_detail *ed);

/* Sequence arithmetic as Kafka's: after INT32_MAX comes 0. */
int32_t idem_seq_add(int32_t seq, int32_t n);

#endif /* BROKER_IDEM_IDEM_CORE_H */
