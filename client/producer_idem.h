/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotent producer, client side: the sequence numbers of each
 * partition. A batch gets its stamp (producer id, epoch, base sequence)
 * when it is first sent and keeps it for every retry, so the broker can
 * answer a retry of a batch it already wrote with DUPLICATE_SEQUENCE and
 * the original offset. At most PRODUCER_IDEM_WINDOW batches of a
 * partition are stamped and unresolved at once (the broker remembers the
 * last five), so every retry lies inside what the broker remembers.
 *
 * When the broker cannot accept a stamped batch (OUT_OF_ORDER_SEQUENCE or
 * UNKNOWN_PRODUCER_ID for the oldest unresolved batch: its state lost or a
 * batch before it given up; INVALID_PRODUCER_EPOCH: fenced), no batch with
 * that stamp from there on can ever be written. The partition's stamp is
 * then "dead": nothing more is sent until its batches in flight are back,
 * and then every queued batch is stamped again, in order, under the next
 * epoch (a new producer id when fenced or out of epochs) from sequence 0,
 * which the broker accepts as a fresh start. As Kafka's idempotent
 * producer (KIP-360) does with its local epoch bump, this retries instead
 * of failing the records; a batch is only restamped once it is known not
 * to be written, so no record is written twice. The same happens at once
 * when the oldest unresolved batch fails for good without any attempt of
 * it having possibly been written (producer_idem_failed).
 *
 * The bump is local, as Kafka's non-transactional producer does it: the
 * broker keeps producer state per partition and accepts a newer epoch
 * from sequence 0 and fences older ones (INVALID_PRODUCER_EPOCH); an id
 * belongs to one producer, so no other client can hold that epoch, and an
 * InitProducerId round trip (which Kafka needs for transactional ids,
 * shared between instances) would add nothing but a wait.
 * Pure: no clock, no network. Locality: the producer's thread. */
#ifndef CLIENT_PRODUCER_IDEM_H
#define CLIENT_PRODUCER_IDEM_H

#include <stdbool.h>
#include <stdint.h>

#define PRODUCER_IDEM_WINDOW 5

struct accum_queue;
struct accum_batch;

/* The producer id (from InitProducerId) new stamps use. */
struct producer_idem {
    int64_t producer_id; /* -1 until known */
    int16_t epoch;
    bool need_new_id; /* the id is fenced or out of epochs: get another */
};

/* A batch's stamp. Zeroed = none yet. */
struct producer_idem_stamp {
    bool set;
    int64_t producer_id;
    int16_t epoch;
    int32_t base_sequence;
};

/* One stamped batch the partition still waits for, or that was answered
 * while an older one is still unresolved. */
struct producer_idem_slot {
    int32_t base_sequence;
    bool done;
};

/* Sequence state of one partition, embedded in its accum_queue.
 * Zeroed = nothing stamped yet. */
struct producer_idem_part {
    bool active;         /* producer_id/epoch/next_seq hold a stamp */
    int64_t producer_id; /* the stamp new batches get */
    int16_t epoch;
    int32_t next_seq; /* base sequence of the next batch stamped */
    struct producer_idem_slot window[PRODUCER_IDEM_WINDOW]; /* oldest first */
    uint32_t n_window;
    uint32_t n_inflight; /* stamped batches inside requests now */
    bool dead;           /* see the file comment */
    uint32_t restamps;   /* times the partition started over (stats) */
};

void producer_idem_init(struct producer_idem *pi);

/* Whether the head batch of q may be sent now: the partition's stamp is
 * alive (a dead one is replaced here once nothing is in flight), and the
 * head is a retry that is the oldest unresolved batch with nothing of the
 * partition in flight (retries go one at a time, in order, as Kafka's
 * producer sends them), or it is new and the window has room for it. */
bool producer_idem_can_send(struct producer_idem *pi, struct accum_queue *q);

/* Stamp a batch just popped from q (if it has no stamp) and re-encode its
 * header. Errors: WEIR_ENOMEM. */
int producer_idem_stamp(struct producer_idem *pi,
                        struct accum_queue *q,
                        struct accum_batch *b);

/* b went into a request / came back from one (answered or failed). */
void producer_idem_sent(struct accum_batch *b);
void producer_idem_returned(struct accum_batch *b);

/* What a refusal of b for its stamp means (producer_idem_resequence). */
enum producer_idem_retry {
    PRODUCER_IDEM_RETRY_NONE = 0, /* not a sequence refusal: err decides */
    /* refused while an older batch of the partition is unresolved: not
     * b's own failure (the broker has not seen the older one yet, or it
     * failed). b goes again once it is the oldest; the attempt does not
     * count against the retries. */
    PRODUCER_IDEM_RETRY_BEHIND,
    /* the stamp is dead (b proves it, or it was already): b, not written,
     * goes again under the next stamp */
    PRODUCER_IDEM_RETRY_RESTAMP,
};

/* The broker refused b (err): OUT_OF_ORDER_SEQUENCE or
 * UNKNOWN_PRODUCER_ID for the oldest unresolved batch, or
 * INVALID_PRODUCER_EPOCH, mark the stamp dead. */
enum producer_idem_retry producer_idem_resequence(struct producer_idem *pi,
                                                  struct accum_batch *b,
                                                  int err);

/* b fails for good. When b is the oldest unresolved batch with the
 * partition's stamp and certainly not written (`unwritten`: no attempt
 * of it ended without a definite answer), no later batch with that stamp
 * can be written either: the stamp is marked dead at once, and the
 * batches behind b start over under the next epoch (Kafka's epoch bump
 * after a failed batch, KIP-360) without a round trip to learn it. Call
 * before producer_idem_resolved. */
void producer_idem_failed(struct accum_batch *b, bool unwritten);

/* b is reported to the application (written or failed for good). */
void producer_idem_resolved(struct accum_batch *b);

/* Kafka's sequence arithmetic: after INT32_MAX comes 0. */
int32_t producer_idem_seq_add(int32_t seq, int32_t n);

#endif /* CLIENT_PRODUCER_IDEM_H */
