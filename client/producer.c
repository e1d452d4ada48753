/* SPDX-License-Identifier: Apache-2.0 */
/* Producer: records go into per-partition accumulators (accum.c); each
 * pump sends the ready batches, grouped by leader into produce requests of
 * up to max_request_bytes, at most max_in_flight per connection, and
 * handles replies: offsets to the delivery callback, retriable errors back
 * into the accumulator after a backoff, other errors to the callback.
 * Without idempotence a retry may duplicate a record whose first attempt
 * failed indefinitely (timeout, lost connection), and with more than one
 * request in flight a retried batch may land after a newer one; with it
 * (the default, producer_idem.h) neither happens. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/accum.h"
#include "client/client.h"
#include "client/partitioner.h"
#include "client/producer_int.h"
#include "common/mem.h"

void weir_producer_config_init(struct weir_producer_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->acks = -1;
    cfg->linger_ms = 5;
    cfg->batch_size_bytes = 64u * 1024;
    cfg->max_in_flight = 5;
    cfg->max_request_bytes = 4u * 1024 * 1024;
    cfg->retries = INT32_MAX;
    cfg->retry_backoff_ms = 100;
    cfg->retry_backoff_max_ms = 1000;
    cfg->delivery_timeout_ms = 120000;
    cfg->request_timeout_ms = 30000;
    cfg->buffer_max_bytes = 64u * 1024 * 1024;
    cfg->max_block_ms = 60000;
    cfg->idempotence = true;
}

static int producer_check_config(const struct weir_producer_config *cfg,
                                 struct err_detail *ed)
{
    if (cfg->acks != 0 && cfg->acks != 1 && cfg->acks != -1) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "acks must be 0, 1 or all (-1), not %d", cfg->acks);
    }
    if (cfg->max_in_flight < 1 || cfg->max_in_flight > 5) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "max in-flight requests must be 1 to 5, not %u",
                       cfg->max_in_flight);
    }
    if (cfg->batch_size_bytes < 1 ||
        cfg->max_request_bytes < BATCH_HEADER_BYTES + 64 ||
        cfg->batch_size_bytes > cfg->max_request_bytes) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "batch size must be between 1 and the maximum request "
                       "size (%u bytes)",
                       cfg->max_request_bytes);
    }
    if (cfg->request_timeout_ms == 0 || cfg->delivery_timeout_ms == 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "timeouts must be positive");
    }
    return 0;
}

int weir_producer_new(struct weir_client *c,
                      const struct weir_producer_config *cfg,
                      struct weir_producer **out,
                      struct err_detail *ed)
{
    struct weir_producer *p;
    int rv;

    *out = NULL;
    rv = producer_check_config(cfg, ed);
    if (rv != 0) {
        return rv;
    }
    p = mem_calloc(1, sizeof(*p));
    if (p == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    p->c = c;
    p->cfg = *cfg;
    p->acfg.linger_ms = cfg->linger_ms;
    p->acfg.batch_size_bytes = cfg->batch_size_bytes;
    p->acfg.delivery_timeout_ms = cfg->delivery_timeout_ms;
    p->seed = (uint32_t)client_now_ms(c) ^ (uint32_t)getpid();
    /* acks=0 learns nothing back, so there is nothing to deduplicate */
    p->idem_on = cfg->idempotence && cfg->acks != 0;
    producer_idem_init(&p->idem);
    *out = p;
    return 0;
}

/* Report every record of a batch and free it. */
void producer_deliver(struct weir_producer *p,
                      struct accum_batch *b,
                      int err,
                      const char *msg,
                      int64_t base_offset)
{
    struct weir_delivery d;
    char buf[600];
    int32_t i;

    if (err != 0 && p->idem_on) {
        producer_idem_failed(b, b->indef_err == 0);
    }
    if (err != 0 && b->indef_err != 0 && weir_err_definite(err)) {
        /* this attempt was refused, but an earlier one may have written
         * the records: a definite code would be a false "not written" */
        (void)snprintf(buf, sizeof(buf),
                       "%.300s (%s); an earlier attempt ended with %s, so "
                       "the records may have been written",
                       msg, weir_err_name(err), weir_err_name(b->indef_err));
        err = b->indef_err;
        msg = buf;
    }
    d.topic = b->q->topic;
    d.partition = b->q->partition;
    d.error_code = err;
    d.error_msg = err != 0 ? msg : "";
    for (i = 0; i < b->count; i++) {
        d.offset = err == 0 && base_offset >= 0 ? base_offset + i : -1;
        d.opaque = b->opaques[i];
        if (p->cfg.on_delivery != NULL) {
            p->cfg.on_delivery(p->cfg.cb_arg, &d);
        }
    }
    p->outstanding -= (size_t)b->count;
    p->buffered_bytes -= b->est_bytes;
    producer_idem_resolved(b);
    accum_batch_free(b);
}

void producer_fail_queue(struct weir_producer *p,
                         struct accum_queue *q,
                         int err,
                         const char *msg)
{
    struct accum_batch *b;

    while ((b = q->head) != NULL) {
        q->head = b->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        q->n_batches--;
        producer_deliver(p, b, err, msg, -1);
    }
}

void weir_producer_free(struct weir_producer *p)
{
    struct prod_request *pr;
    size_t i;
    int32_t k;

    if (p == NULL) {
        return;
    }
    if (p->pid_call != NULL) {
        p->pid_call->p = NULL; /* freed by its callback */
    }
    /* Report in-flight records now; their requests stay alive (orphaned)
     * until the connection answers or closes, then free themselves. */
    while ((pr = p->inflight) != NULL) {
        p->inflight = pr->next;
        for (i = 0; i < pr->n; i++) {
            /* sent and unanswered: they may have been written */
            producer_deliver(p, pr->batches[i], WEIR_EREQUEST_TIMED_OUT,
                             "producer closed while the request was in "
                             "flight: the records may have been written",
                             -1);
        }
        pr->n = 0;
        pr->p = NULL;
    }
    for (i = 0; i < p->n_topics; i++) {
        struct prod_topic *t = p->topics[i];
        for (k = 0; k < t->n_partitions; k++) {
            producer_fail_queue(p, &t->queues[k], WEIR_ESHUTTING_DOWN,
                                "producer closed before delivery");
            accum_queue_fini(&t->queues[k]);
        }
        mem_free(t->queues);
        mem_free(t->name);
        mem_free(t);
    }
    mem_free(p->topics);
    mem_free(p);
}

size_t weir_producer_outstanding(const struct weir_producer *p)
{
    return p->outstanding;
}

static struct prod_topic *
producer_topic_new(struct weir_producer *p, const char *name, int32_t n)
{
    struct prod_topic *t;
    struct prod_topic **v;
    int32_t k;

    if (p->n_topics == p->cap_topics) {
        size_t cap = p->cap_topics == 0 ? 4 : p->cap_topics * 2;
        v = mem_realloc(p->topics, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        p->topics = v;
        p->cap_topics = cap;
    }
    t = mem_calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->name = mem_strdup(name);
    t->queues = mem_calloc((size_t)n, sizeof(*t->queues));
    if (t->name == NULL || t->queues == NULL) {
        mem_free(t->name);
        mem_free(t->queues);
        mem_free(t);
        return NULL;
    }
    t->n_partitions = n;
    for (k = 0; k < n; k++) {
        accum_queue_init(&t->queues[k], t->name, k);
    }
    partitioner_sticky_init(&t->sticky, p->seed, n);
    p->topics[p->n_topics++] = t;
    return t;
}

static int producer_topic(struct weir_producer *p,
                          const char *name,
                          struct prod_topic **out,
                          struct err_detail *ed)
{
    struct md_topic *mt;
    size_t i;
    int rv;

    if (p->last_topic != NULL && strcmp(p->last_topic->name, name) == 0) {
        *out = p->last_topic;
        return 0;
    }
    for (i = 0; i < p->n_topics; i++) {
        if (strcmp(p->topics[i]->name, name) == 0) {
            *out = p->last_topic = p->topics[i];
            return 0;
        }
    }
    rv = client_topic(p->c, name, false, &mt, ed);
    if (rv != 0) {
        return rv;
    }
    if (mt->n_partitions <= 0) {
        return err_set(ed, WEIR_ELEADER_NOT_AVAILABLE,
                       "topic '%s' has no partitions yet", name);
    }
    *out = p->last_topic = producer_topic_new(p, name, mt->n_partitions);
    if (*out == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    return 0;
}

/* Poll until the buffer has room for `need` more bytes. */
static int
producer_wait_room(struct weir_producer *p, size_t need, struct err_detail *ed)
{
    uint64_t start = client_now_ms(p->c);
    uint64_t now;
    int rv;

    while (p->buffered_bytes + need > p->cfg.buffer_max_bytes &&
           p->outstanding > 0) {
        now = client_now_ms(p->c);
        if (now >= start + p->cfg.max_block_ms) {
            return err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                           "producer buffer full (%llu bytes) for %u ms",
                           (unsigned long long)p->buffered_bytes,
                           p->cfg.max_block_ms);
        }
        rv = weir_producer_poll(p, (int)(start + p->cfg.max_block_ms - now));
        if (rv != 0) {
            return err_set(ed, rv, "produce called from inside a callback");
        }
        if (pool_interrupted(p->c->pool)) {
            return err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                           "interrupted by a signal while the producer "
                           "buffer was full");
        }
    }
    return 0;
}

int weir_produce(struct weir_producer *p,
                 const char *topic,
                 int32_t partition,
                 const void *key,
                 size_t key_len,
                 const void *value,
                 size_t value_len,
                 int64_t timestamp_ms,
                 void *opaque,
                 struct err_detail *ed)
{
    struct prod_topic *t;
    size_t need = accum_record_bytes(key_len, value_len);
    int rv;

    if (pool_in_poll(p->c->pool)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "weir_produce called from inside a callback");
    }
    if (need + BATCH_HEADER_BYTES > p->cfg.max_request_bytes ||
        key_len > INT32_MAX || value_len > INT32_MAX) {
        return err_set(ed, WEIR_EMESSAGE_TOO_LARGE,
                       "record of %zu bytes exceeds the maximum request size "
                       "of %u bytes",
                       key_len + value_len, p->cfg.max_request_bytes);
    }
    rv = producer_topic(p, topic, &t, ed);
    if (rv != 0) {
        return rv;
    }
    if (partition == WEIR_PARTITION_ANY) {
        partition = key != NULL
                        ? partitioner_key(key, key_len, t->n_partitions)
                        : partitioner_sticky_next(&t->sticky, t->n_partitions);
    } else if (partition < 0 || partition >= t->n_partitions) {
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                       "topic '%s' has no partition %d (it has %d)", topic,
                       partition, t->n_partitions);
    }
    rv = producer_wait_room(p, need, ed);
    if (rv != 0) {
        return rv;
    }
    if (timestamp_ms < 0) {
        timestamp_ms = clock_wall_ms(p->c->clock);
    }
    rv = accum_append(&t->queues[partition], &p->acfg, client_now_ms(p->c),
                      timestamp_ms, key, key_len, value, value_len, opaque);
    if (rv != 0) {
        return err_set(ed, rv, "out of memory");
    }
    p->outstanding++;
    p->buffered_bytes += need;
    return 0;
}

int weir_producer_poll_fds(struct weir_producer *p,
                           struct pollfd *extra,
                           size_t n_extra,
                           int timeout_ms)
{
    uint64_t now;
    int rv;

    if (pool_in_poll(p->c->pool)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    producer_pump(p);
    now = client_now_ms(p->c);
    if (p->wake_ms != UINT64_MAX) {
        uint64_t left = p->wake_ms > now ? p->wake_ms - now : 0;
        if (timeout_ms < 0 || left < (uint64_t)timeout_ms) {
            timeout_ms = left > INT32_MAX ? INT32_MAX : (int)left;
        }
    }
    rv = pool_poll(p->c->pool, extra, n_extra, timeout_ms);
    if (rv != 0) {
        return rv;
    }
    producer_pump(p);
    return 0;
}

int weir_producer_poll(struct weir_producer *p, int timeout_ms)
{
    return weir_producer_poll_fds(p, NULL, 0, timeout_ms);
}

int weir_producer_flush(struct weir_producer *p,
                        int timeout_ms,
                        struct err_detail *ed)
{
    uint64_t start = client_now_ms(p->c);
    uint64_t now;
    int rv = 0;

    p->flushing = true;
    while (p->outstanding > 0) {
        now = client_now_ms(p->c);
        if (timeout_ms >= 0 && now >= start + (uint64_t)timeout_ms) {
            rv = err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                         "%zu records still unacknowledged after %d ms",
                         p->outstanding, timeout_ms);
            break;
        }
        rv = weir_producer_poll(
            p, timeout_ms < 0 ? -1 : (int)(start + (uint64_t)timeout_ms - now));
        if (rv != 0) {
            rv = err_set(ed, rv, "flush called from inside a callback");
            break;
        }
        if (pool_interrupted(p->c->pool) && p->outstanding > 0) {
            rv = err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                         "interrupted by a signal with %zu records "
                         "unacknowledged",
                         p->outstanding);
            break;
        }
    }
    p->flushing = false;
    return rv;
}
