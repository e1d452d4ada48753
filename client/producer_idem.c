/* SPDX-License-Identifier: Apache-2.0 */
/* Partition sequence numbers for the idempotent producer. Invariants that
 * make a restart safe: every batch in flight or queued with a stamp
 * carries its partition's current stamp (a restart waits until nothing is
 * in flight and then clears every queued stamp); stamped batches sit in
 * the queue before unstamped ones (stamps are given at the head, retries
 * go back in creation order); the window holds, oldest first, every
 * stamped batch from the oldest unresolved one on. */
#include "client/producer_idem.h"

#include <string.h>

#include "client/accum.h"

int32_t producer_idem_seq_add(int32_t seq, int32_t n)
{
    if (seq > INT32_MAX - n) {
        return n - (INT32_MAX - seq) - 1;
    }
    return seq + n;
}

void producer_idem_init(struct producer_idem *pi)
{
    pi->producer_id = -1;
    pi->epoch = 0;
    pi->need_new_id = false;
}

static bool producer_idem_id_usable(const struct producer_idem *pi)
{
    return pi->producer_id >= 0 && !pi->need_new_id;
}

/* New batches of pp take the producer's id: nothing under the old stamp
 * waits for an answer any more. */
static bool producer_idem_may_adopt(const struct producer_idem *pi,
                                    const struct producer_idem_part *pp)
{
    return !pp->active ||
           (pp->n_window == 0 && pp->producer_id != pi->producer_id);
}

static void producer_idem_adopt(const struct producer_idem *pi,
                                struct producer_idem_part *pp)
{
    pp->active = true;
    pp->producer_id = pi->producer_id;
    pp->epoch = pi->epoch;
    pp->next_seq = 0;
    pp->n_window = 0;
}

/* Replace a dead stamp: the next epoch of the same id from sequence 0, or
 * the producer's (new) id. Every queued batch is stamped again when sent. */
static bool producer_idem_restart(struct producer_idem *pi,
                                  struct accum_queue *q)
{
    struct producer_idem_part *pp = &q->idem;
    struct accum_batch *b;

    if (pp->n_inflight > 0 || !producer_idem_id_usable(pi)) {
        return false;
    }
    if (pp->producer_id == pi->producer_id) {
        if (pp->epoch == INT16_MAX) {
            pi->need_new_id = true; /* out of epochs */
            return false;
        }
        pp->epoch++;
        pp->next_seq = 0;
        pp->n_window = 0;
    } else {
        producer_idem_adopt(pi, pp);
    }
    pp->dead = false;
    pp->restamps++;
    for (b = q->head; b != NULL; b = b->next) {
        b->stamp.set = false;
    }
    return true;
}

bool producer_idem_can_send(struct producer_idem *pi, struct accum_queue *q)
{
    struct producer_idem_part *pp = &q->idem;

    if (q->head == NULL) {
        return false;
    }
    if (pp->dead && !producer_idem_restart(pi, q)) {
        return false;
    }
    if (q->head->stamp.set) {
        /* a retry: already in the window. Sent alone and only as the
         * oldest unresolved batch, so a batch behind one that failed
         * is not refused again and again for the gap before it. */
        return pp->n_inflight == 0 && pp->n_window > 0 &&
               pp->window[0].base_sequence == q->head->stamp.base_sequence;
    }
    if (pp->n_window == PRODUCER_IDEM_WINDOW) {
        return false;
    }
    return !producer_idem_may_adopt(pi, pp) || producer_idem_id_usable(pi);
}

int producer_idem_stamp(struct producer_idem *pi,
                        struct accum_queue *q,
                        struct accum_batch *b)
{
    struct producer_idem_part *pp = &q->idem;
    int rv;

    if (b->stamp.set) {
        return 0;
    }
    if (producer_idem_may_adopt(pi, pp)) {
        producer_idem_adopt(pi, pp);
    }
    b->bb.producer_id = pp->producer_id;
    b->bb.producer_epoch = pp->epoch;
    b->bb.base_sequence = pp->next_seq;
    rv = batch_builder_finish(&b->bb, &b->bytes);
    if (rv != 0) {
        return rv;
    }
    b->stamp.set = true;
    b->stamp.producer_id = pp->producer_id;
    b->stamp.epoch = pp->epoch;
    b->stamp.base_sequence = pp->next_seq;
    pp->next_seq = producer_idem_seq_add(pp->next_seq, b->count);
    pp->window[pp->n_window].base_sequence = b->stamp.base_sequence;
    pp->window[pp->n_window].done = false;
    pp->n_window++;
    return 0;
}

void producer_idem_sent(struct accum_batch *b)
{
    if (!b->inflight) {
        b->inflight = true;
        b->q->idem.n_inflight++;
    }
}

void producer_idem_returned(struct accum_batch *b)
{
    if (b->inflight) {
        b->inflight = false;
        b->q->idem.n_inflight--;
    }
}

/* b carries its partition's current stamp. */
static bool producer_idem_current(const struct accum_batch *b)
{
    const struct producer_idem_part *pp = &b->q->idem;

    return b->stamp.set && pp->active &&
           b->stamp.producer_id == pp->producer_id &&
           b->stamp.epoch == pp->epoch;
}

/* b is the oldest unresolved batch with its partition's stamp. */
static bool producer_idem_is_oldest(const struct accum_batch *b)
{
    const struct producer_idem_part *pp = &b->q->idem;

    return producer_idem_current(b) && pp->n_window > 0 &&
           pp->window[0].base_sequence == b->stamp.base_sequence;
}

enum producer_idem_retry producer_idem_resequence(struct producer_idem *pi,
                                                  struct accum_batch *b,
                                                  int err)
{
    struct producer_idem_part *pp = &b->q->idem;
    bool current = producer_idem_current(b);

    if (!b->stamp.set) {
        return PRODUCER_IDEM_RETRY_NONE;
    }
    switch (err) {
    case WEIR_EOUT_OF_ORDER_SEQUENCE:
    case WEIR_EUNKNOWN_PRODUCER_ID:
        /* for a batch behind an unresolved one this may only mean that
         * one has not arrived yet: send it again after it */
        if (producer_idem_is_oldest(b)) {
            pp->dead = true;
        }
        return current && !pp->dead ? PRODUCER_IDEM_RETRY_BEHIND
                                    : PRODUCER_IDEM_RETRY_RESTAMP;
    case WEIR_EINVALID_PRODUCER_EPOCH:
        pp->dead = pp->dead || current;
        if (b->stamp.producer_id == pi->producer_id) {
            pi->need_new_id = true;
        }
        return PRODUCER_IDEM_RETRY_RESTAMP;
    default:
        return PRODUCER_IDEM_RETRY_NONE;
    }
}

void producer_idem_failed(struct accum_batch *b, bool unwritten)
{
    /* sequences are accepted in order only: with the oldest unresolved
     * batch not written, nothing stamped after it is */
    if (unwritten && producer_idem_is_oldest(b)) {
        b->q->idem.dead = true;
    }
}

void producer_idem_resolved(struct accum_batch *b)
{
    struct producer_idem_part *pp = &b->q->idem;
    uint32_t i;
    uint32_t k = 0;

    if (!producer_idem_current(b)) {
        return;
    }
    for (i = 0; i < pp->n_window; i++) {
        if (pp->window[i].base_sequence == b->stamp.base_sequence) {
            pp->window[i].done = true;
        }
    }
    while (k < pp->n_window && pp->window[k].done) {
        k++;
    }
    memmove(&pp->window[0], &pp->window[k],
            (pp->n_window - k) * sizeof(pp->window[0]));
    pp->n_window -= k;
}
