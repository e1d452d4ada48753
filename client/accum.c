/* SPDX-License-Identifier: Apache-2.0 */
#include "client/accum.h"

#include <string.h>

#include "common/mem.h"

/* attributes 1, timestamp delta <= 10, offset delta <= 5, key and value
 * lengths <= 5 each, header count 1, record length <= 5 */
#define ACCUM_RECORD_OVERHEAD 32

void accum_queue_init(struct accum_queue *q,
                      const char *topic,
                      int32_t partition)
{
    memset(q, 0, sizeof(*q));
    q->topic = topic;
    q->partition = partition;
    q->stale_leader = -1;
}

void accum_batch_free(struct accum_batch *b)
{
    if (b == NULL) {
        return;
    }
    batch_builder_fini(&b->bb);
    mem_free(b->opaques);
    mem_free(b);
}

void accum_queue_fini(struct accum_queue *q)
{
    struct accum_batch *b;

    while ((b = q->head) != NULL) {
        q->head = b->next;
        accum_batch_free(b);
    }
    q->tail = NULL;
    q->n_batches = 0;
}

size_t accum_record_bytes(size_t key_len, size_t value_len)
{
    return key_len + value_len + ACCUM_RECORD_OVERHEAD;
}

size_t accum_batch_bytes(const struct accum_batch *b)
{
    return b->closed ? b->bytes.len : batch_builder_size(&b->bb);
}

static struct accum_batch *accum_batch_new(struct accum_queue *q,
                                           const struct accum_config *cfg,
                                           uint64_t now_ms)
{
    struct accum_batch *b = mem_calloc(1, sizeof(*b));

    if (b == NULL) {
        return NULL;
    }
    batch_builder_init(&b->bb);
    b->q = q;
    b->seq = q->next_seq++;
    b->sent_leader = -1;
    b->created_ms = now_ms;
    b->deadline_ms = now_ms + cfg->delivery_timeout_ms;
    return b;
}

static int accum_close(struct accum_batch *b)
{
    int rv;

    if (b->closed) {
        return 0;
    }
    rv = batch_builder_finish(&b->bb, &b->bytes);
    if (rv != 0) {
        return rv;
    }
    b->closed = true;
    return 0;
}

static int accum_grow_opaques(struct accum_batch *b)
{
    size_t cap;
    void **v;

    if ((size_t)b->count < b->cap_opaques) {
        return 0;
    }
    cap = b->cap_opaques == 0 ? 16 : b->cap_opaques * 2;
    v = mem_realloc(b->opaques, cap * sizeof(*v));
    if (v == NULL) {
        return WEIR_ENOMEM;
    }
    b->opaques = v;
    b->cap_opaques = cap;
    return 0;
}

/* The open batch a record of `need` bytes goes into: the tail, or a new
 * one when the tail is closed, full, or absent. */
static struct accum_batch *accum_open(struct accum_queue *q,
                                      const struct accum_config *cfg,
                                      uint64_t now_ms,
                                      size_t need)
{
    struct accum_batch *t = q->tail;
    struct accum_batch *b;

    if (t != NULL && !t->closed &&
        (t->count == 0 ||
         batch_builder_size(&t->bb) + need <= cfg->batch_size_bytes)) {
        return t;
    }
    if (t != NULL && !t->closed && accum_close(t) != 0) {
        return NULL;
    }
    b = accum_batch_new(q, cfg, now_ms);
    if (b == NULL) {
        return NULL;
    }
    if (q->tail != NULL) {
        q->tail->next = b;
    } else {
        q->head = b;
    }
    q->tail = b;
    q->n_batches++;
    return b;
}

int accum_append(struct accum_queue *q,
                 const struct accum_config *cfg,
                 uint64_t now_ms,
                 int64_t timestamp_ms,
                 const void *key,
                 size_t key_len,
                 const void *value,
                 size_t value_len,
                 void *opaque)
{
    struct accum_batch *b;
    int rv;

    b = accum_open(q, cfg, now_ms, accum_record_bytes(key_len, value_len));
    if (b == NULL || accum_grow_opaques(b) != 0) {
        return WEIR_ENOMEM;
    }
    rv = batch_builder_add(&b->bb, timestamp_ms, key, (int32_t)key_len, value,
                           (int32_t)value_len, NULL, 0);
    if (rv != 0) {
        return rv;
    }
    b->opaques[b->count++] = opaque;
    b->est_bytes += accum_record_bytes(key_len, value_len);
    /* A full batch is closed now, so it is ready without waiting for
     * linger and the next record opens a fresh one. */
    if (batch_builder_size(&b->bb) >= cfg->batch_size_bytes) {
        (void)accum_close(b);
    }
    return 0;
}

bool accum_ready(const struct accum_queue *q,
                 const struct accum_config *cfg,
                 uint64_t now_ms,
                 bool flushing,
                 uint64_t *wake_ms)
{
    const struct accum_batch *b = q->head;
    uint64_t at;

    if (b == NULL || b->count == 0) {
        return false;
    }
    if (b->retry_at_ms != 0) {
        at = b->retry_at_ms;
    } else if (b->closed || b->next != NULL || flushing) {
        return true;
    } else {
        at = b->created_ms + cfg->linger_ms;
    }
    if (now_ms >= at) {
        return true;
    }
    if (at < *wake_ms) {
        *wake_ms = at;
    }
    return false;
}

static void accum_unlink_head(struct accum_queue *q)
{
    struct accum_batch *b = q->head;

    q->head = b->next;
    if (q->tail == b) {
        q->tail = NULL;
    }
    b->next = NULL;
    q->n_batches--;
}

struct accum_batch *accum_pop(struct accum_queue *q, int *err)
{
    struct accum_batch *b = q->head;

    *err = 0;
    if (b == NULL) {
        return NULL;
    }
    *err = accum_close(b);
    if (*err != 0) {
        return NULL;
    }
    accum_unlink_head(q);
    return b;
}

struct accum_batch *accum_pop_expired(struct accum_queue *q, uint64_t now_ms)
{
    struct accum_batch *b = q->head;

    if (b == NULL || b->count == 0 || now_ms < b->deadline_ms) {
        return NULL;
    }
    accum_unlink_head(q);
    return b;
}

void accum_retry_now(struct accum_queue *q)
{
    struct accum_batch *b;

    for (b = q->head; b != NULL; b = b->next) {
        if (b->retry_at_ms > 1) {
            b->retry_at_ms = 1; /* still a retry, due now */
        }
    }
}

void accum_requeue(struct accum_queue *q,
                   struct accum_batch *b,
                   uint64_t retry_at_ms)
{
    struct accum_batch **pp = &q->head;

    b->retry_at_ms = retry_at_ms == 0 ? 1 : retry_at_ms;
    while (*pp != NULL && (*pp)->seq < b->seq) {
        pp = &(*pp)->next;
    }
    b->next = *pp;
    *pp = b;
    if (b->next == NULL) {
        q->tail = b;
    }
    q->n_batches++;
}
