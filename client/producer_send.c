/* SPDX-License-Identifier: Apache-2.0 */
/* Producer network side: turning ready batches into produce requests and
 * replies into delivery reports or retries. */
#include <stdio.h>
#include <string.h>

#include "client/call.h"
#include "client/producer_int.h"
#include "common/mem.h"

#define PRODUCER_MAX_LEADERS    64   /* distinct leaders served per pump */
#define PRODUCER_REPLY_GRACE_MS 5000 /* beyond the broker-side timeout */

struct prod_build {
    struct conn *conn;
    struct prod_request *pr; /* being filled; NULL once sent */
};

static void prod_request_free(struct prod_request *pr)
{
    size_t i;

    for (i = 0; i < pr->n; i++) {
        accum_batch_free(pr->batches[i]);
    }
    mem_free(pr->batches);
    mem_free(pr);
}

static int prod_request_add(struct prod_request *pr, struct accum_batch *b)
{
    struct accum_batch **v;

    if (pr->n == pr->cap) {
        size_t cap = pr->cap == 0 ? 8 : pr->cap * 2;
        v = mem_realloc(pr->batches, cap * sizeof(*v));
        if (v == NULL) {
            return WEIR_ENOMEM;
        }
        pr->batches = v;
        pr->cap = cap;
    }
    pr->batches[pr->n++] = b;
    pr->bytes += b->bytes.len;
    return 0;
}

static bool producer_is_leader_err(int err)
{
    switch (err) {
    case WEIR_ENOT_LEADER:
    case WEIR_ENOT_LEADER_AFTER_APPEND:
    case WEIR_ELEADER_NOT_AVAILABLE:
    case WEIR_EUNKNOWN_TOPIC_OR_PARTITION:
    case WEIR_ENETWORK:
    case WEIR_EREQUEST_TIMED_OUT:
    case WEIR_EFENCED_LEADER_EPOCH:
    case WEIR_EUNKNOWN_LEADER_EPOCH:
    case WEIR_ESHUTTING_DOWN:
    case WEIR_ELOG_OFFLINE:
        return true;
    default:
        return false;
    }
}

/* The code for b, out of time (or retries) while its partition could not
 * take it: the real reason when it is known and b was certainly not
 * written - the partition's last refusal, if that is a passing state
 * (retriable) that means "not written" (definite), as NOT_ENOUGH_REPLICAS
 * or NOT_LEADER - else REQUEST_TIMED_OUT. */
static int producer_expiry_code(const struct accum_batch *b)
{
    int last = b->q->last_err;

    if (b->indef_err == 0 && last != 0 && weir_err_retriable(last) &&
        weir_err_definite(last)) {
        return last;
    }
    return WEIR_EREQUEST_TIMED_OUT;
}

/* b's delivery timeout ran out while it waited behind an older batch or
 * for a new stamp: report the reason the partition is stuck, not the
 * sequence refusal, which is no fault of b's. */
static void producer_batch_expired(struct weir_producer *p,
                                   struct accum_batch *b)
{
    const struct accum_queue *q = b->q;
    char msg[400];

    (void)snprintf(msg, sizeof(msg),
                   "not delivered within %u ms (or %u retries): it waited "
                   "for an earlier batch of %s/%d%s%s",
                   p->cfg.delivery_timeout_ms, p->cfg.retries, q->topic,
                   q->partition, q->last_err != 0 ? ", which failed: " : "",
                   q->last_err != 0 ? q->last_msg : "");
    producer_deliver(p, b, producer_expiry_code(b), msg, -1);
}

/* A send of b failed: retry after a backoff if the error allows and time
 * remains, else report the failure. */
static void producer_batch_failed(struct weir_producer *p,
                                  struct accum_batch *b,
                                  int err,
                                  const char *msg,
                                  uint64_t now)
{
    struct accum_queue *q = b->q;
    uint32_t shift = b->attempts > 1 ? b->attempts - 1 : 0;
    uint64_t backoff = (uint64_t)p->cfg.retry_backoff_ms
                       << (shift > 16 ? 16 : shift);
    enum producer_idem_retry seq = PRODUCER_IDEM_RETRY_NONE;
    bool again;

    if (backoff > p->cfg.retry_backoff_max_ms) {
        backoff = p->cfg.retry_backoff_max_ms;
    }
    if (b->indef_err == 0 && !weir_err_definite(err)) {
        b->indef_err = err; /* this attempt may have written it */
    }
    /* the sequence bookkeeping comes first: UNKNOWN_PRODUCER_ID is
     * retriable, but only after the stamp is replaced */
    if (p->idem_on) {
        seq = producer_idem_resequence(&p->idem, b, err);
    }
    if (seq == PRODUCER_IDEM_RETRY_BEHIND) {
        /* no attempt of b's own: it goes again, without a backoff, once
         * it is the oldest batch of the partition; q->last_err keeps the
         * older batch's error, the reason the partition waits */
        b->attempts = b->attempts > 0 ? b->attempts - 1 : 0;
        if (now >= b->deadline_ms) {
            producer_batch_expired(p, b);
        } else {
            accum_requeue(q, b, now);
        }
        return;
    }
    if (seq == PRODUCER_IDEM_RETRY_NONE) {
        q->last_err = err;
        (void)snprintf(q->last_msg, sizeof(q->last_msg), "%.255s", msg);
    }
    again = seq != PRODUCER_IDEM_RETRY_NONE || weir_err_retriable(err);
    if (p->cfg.acks != 0 && again && b->attempts <= p->cfg.retries &&
        now + backoff < b->deadline_ms) {
        /* a stamped batch goes again on its own: its retry is then all
         * duplicate or all new, never a mix the broker would refuse */
        b->solo = b->solo || b->stamp.set;
        accum_requeue(q, b, now + backoff);
        if (producer_is_leader_err(err)) {
            if (b->sent_leader >= 0) {
                q->stale_leader = b->sent_leader;
            }
            metadata_refresh_async(p->c->md);
        }
        return;
    }
    if (seq != PRODUCER_IDEM_RETRY_NONE) {
        producer_batch_expired(p, b); /* b itself was never at fault */
        return;
    }
    producer_deliver(p, b, err, msg, -1);
}

static const Weir__ProducePartitionResult *
producer_find_result(const Weir__ProduceResponse *r,
                     const struct accum_queue *q)
{
    size_t i;

    for (i = 0; i < r->n_partitions; i++) {
        if (r->partitions[i]->partition == q->partition &&
            strcmp(r->partitions[i]->topic, q->topic) == 0) {
            return r->partitions[i];
        }
    }
    return NULL;
}

/* A definite error for a partition whose payload held several batches
 * may come from just one of them (say MESSAGE_TOO_LARGE): send each again
 * on its own, so only the batch at fault fails. */
static bool
producer_split(struct prod_request *pr, size_t i, int err, uint64_t now)
{
    struct accum_queue *q = pr->batches[i]->q;
    size_t j;

    if (weir_err_retriable(err) || i + 1 >= pr->n ||
        pr->batches[i + 1]->q != q) {
        return false;
    }
    for (j = i; j < pr->n && pr->batches[j]->q == q; j++) {
        pr->batches[j]->solo = true;
        accum_requeue(q, pr->batches[j], now);
        pr->batches[j] = NULL;
    }
    return true;
}

/* Written: now, or before (a retry the broker recognised; base_offset is
 * where the first attempt went). */
static bool producer_is_written(int code)
{
    return code == 0 || code == WEIR_EDUPLICATE_SEQUENCE;
}

/* Refusals that concern the sequence stamps, not any one batch's bytes:
 * not a reason to split the payload. */
static bool producer_is_sequence_err(const struct weir_producer *p, int code)
{
    return p->idem_on && (code == WEIR_EOUT_OF_ORDER_SEQUENCE ||
                          code == WEIR_EUNKNOWN_PRODUCER_ID ||
                          code == WEIR_EINVALID_PRODUCER_EPOCH);
}

/* Batches of one partition sit next to each other in a request, and the
 * broker writes them in order: the first gets base_offset, each next one
 * starts where the previous ended. */
static void producer_apply_results(struct weir_producer *p,
                                   struct prod_request *pr,
                                   const Weir__ProduceResponse *resp,
                                   uint64_t now)
{
    const Weir__ProducePartitionResult *res = NULL;
    const struct accum_queue *q = NULL;
    int64_t offset = -1;
    char msg[300];
    size_t i;

    for (i = 0; i < pr->n; i++) {
        struct accum_batch *b = pr->batches[i];
        if (b == NULL) { /* requeued by producer_split */
            continue;
        }
        if (b->q != q) {
            q = b->q;
            res = producer_find_result(resp, q);
            offset = res != NULL ? res->base_offset : -1;
            if (res != NULL && !producer_is_written(res->error_code) &&
                !producer_is_sequence_err(p, res->error_code) &&
                producer_split(pr, i, res->error_code, now)) {
                continue;
            }
        }
        if (res == NULL) {
            (void)snprintf(msg, sizeof(msg),
                           "broker reply has no result for %s/%d", q->topic,
                           q->partition);
            producer_batch_failed(p, b, WEIR_EUNKNOWN, msg, now);
        } else if (!producer_is_written(res->error_code)) {
            producer_batch_failed(p, b, res->error_code,
                                  res->error_message[0] != '\0'
                                      ? res->error_message
                                      : weir_err_str(res->error_code),
                                  now);
        } else {
            int64_t base = offset;
            offset = offset >= 0 ? offset + b->count : -1;
            b->q->stale_leader = -1;
            producer_deliver(p, b, 0, "", base);
        }
    }
}

static void producer_on_reply(void *arg, struct conn_reply *r)
{
    struct prod_request *pr = arg;
    struct weir_producer *p = pr->p;
    uint64_t now;
    size_t i;

    if (p == NULL) { /* the producer is gone; its records were reported */
        prod_request_free(pr);
        return;
    }
    if (pr->prev != NULL) {
        pr->prev->next = pr->next;
    } else {
        p->inflight = pr->next;
    }
    if (pr->next != NULL) {
        pr->next->prev = pr->prev;
    }
    now = client_now_ms(p->c);
    for (i = 0; i < pr->n; i++) {
        producer_idem_returned(pr->batches[i]);
    }
    if (r->err != 0) {
        for (i = 0; i < pr->n; i++) {
            producer_batch_failed(p, pr->batches[i], r->err, r->err_msg, now);
        }
    } else if (r->resp == NULL) { /* acks=0: written is all we learn */
        for (i = 0; i < pr->n; i++) {
            producer_deliver(p, pr->batches[i], 0, "", -1);
        }
    } else if (r->resp->body_case != WEIR__RESPONSE__BODY_PRODUCE) {
        for (i = 0; i < pr->n; i++) {
            /* the request reached the broker: it may have been written */
            producer_deliver(p, pr->batches[i], WEIR_EUNKNOWN,
                             "broker answered a produce request with another "
                             "call's response: the records may have been "
                             "written",
                             -1);
        }
    } else {
        producer_apply_results(p, pr, r->resp->produce, now);
    }
    pr->n = 0;
    prod_request_free(pr);
}

/* Number of runs of consecutive batches of the same partition. */
static size_t producer_count_groups(const struct prod_request *pr)
{
    size_t n = 0;
    size_t i;

    for (i = 0; i < pr->n; i++) {
        n += i == 0 || pr->batches[i]->q != pr->batches[i - 1]->q;
    }
    return n;
}

static int producer_encode_send(struct weir_producer *p,
                                struct conn *c,
                                struct prod_request *pr,
                                struct err_detail *ed)
{
    Weir__Request req;
    Weir__ProduceRequest prq;
    Weir__ProducePartition *parts;
    Weir__ProducePartition **pparts;
    struct weir_slice *slices;
    size_t ng = producer_count_groups(pr);
    size_t g = 0;
    size_t i;
    int rv;

    parts = mem_calloc(ng, sizeof(*parts));
    pparts = mem_calloc(ng, sizeof(*pparts));
    slices = mem_calloc(pr->n, sizeof(*slices));
    if (parts == NULL || pparts == NULL || slices == NULL) {
        rv = err_set(ed, WEIR_ENOMEM, "out of memory");
        goto out;
    }
    for (i = 0; i < pr->n; i++) {
        const struct accum_batch *b = pr->batches[i];
        if (i > 0 && b->q != pr->batches[i - 1]->q) {
            g++;
        }
        if (i == 0 || b->q != pr->batches[i - 1]->q) {
            weir__produce_partition__init(&parts[g]);
            parts[g].topic = (char *)b->q->topic;
            parts[g].partition = b->q->partition;
            pparts[g] = &parts[g];
        }
        parts[g].payload_bytes += (uint32_t)b->bytes.len;
        slices[i] = b->bytes;
    }
    weir__request__init(&req);
    weir__produce_request__init(&prq);
    prq.acks = p->cfg.acks;
    prq.timeout_ms = p->cfg.request_timeout_ms;
    prq.n_partitions = ng;
    prq.partitions = pparts;
    req.body_case = WEIR__REQUEST__BODY_PRODUCE;
    req.produce = &prq;
    rv = conn_send(c, &req, slices, pr->n, p->cfg.acks != 0,
                   p->cfg.request_timeout_ms + PRODUCER_REPLY_GRACE_MS,
                   client_now_ms(p->c), producer_on_reply, pr, ed);
out:
    mem_free(parts);
    mem_free(pparts);
    mem_free(slices);
    return rv;
}

/* Send a filled request; on failure its batches go the retry path. */
static void producer_send(struct weir_producer *p, struct prod_build *bd)
{
    struct prod_request *pr = bd->pr;
    struct err_detail ed;
    uint64_t now = client_now_ms(p->c);
    size_t i;

    bd->pr = NULL;
    if (pr == NULL) {
        return;
    }
    if (pr->n > 0 && producer_encode_send(p, bd->conn, pr, &ed) == 0) {
        pr->p = p;
        pr->sent_ms = now;
        pr->prev = NULL;
        pr->next = p->inflight;
        if (p->inflight != NULL) {
            p->inflight->prev = pr;
        }
        p->inflight = pr;
        return;
    }
    for (i = 0; i < pr->n; i++) {
        producer_idem_returned(pr->batches[i]);
        producer_batch_failed(p, pr->batches[i], ed.code, ed.msg, now);
    }
    pr->n = 0;
    prod_request_free(pr);
}

static struct prod_build *producer_build_for(struct weir_producer *p,
                                             struct prod_build *builds,
                                             size_t *nb,
                                             struct conn *c)
{
    size_t i;

    for (i = 0; i < *nb; i++) {
        if (builds[i].conn == c) {
            break;
        }
    }
    if (i == *nb) {
        if (*nb == PRODUCER_MAX_LEADERS) {
            return NULL;
        }
        builds[i].conn = c;
        builds[i].pr = NULL;
        (*nb)++;
    }
    if (builds[i].pr == NULL) {
        if (conn_in_flight(c) >= p->cfg.max_in_flight) {
            return NULL; /* a reply will free a slot and pump again */
        }
        builds[i].pr = mem_calloc(1, sizeof(struct prod_request));
        if (builds[i].pr == NULL) {
            return NULL;
        }
    }
    return &builds[i];
}

static void producer_note_wait(struct accum_queue *q,
                               int err,
                               const char *msg,
                               uint64_t *wake,
                               uint64_t at)
{
    q->last_err = err;
    (void)snprintf(q->last_msg, sizeof(q->last_msg), "%.255s", msg);
    if (at < *wake) {
        *wake = at;
    }
}

/* Idempotence lets the head batch of q go now (see producer_idem.h);
 * when it waits for a producer id, q says so for timeout messages. */
static bool producer_idem_gate(struct weir_producer *p,
                               struct accum_queue *q,
                               uint64_t now,
                               uint64_t *wake)
{
    if (!p->idem_on || producer_idem_can_send(&p->idem, q)) {
        return true;
    }
    if (p->idem.producer_id < 0 || p->idem.need_new_id) {
        producer_note_wait(
            q, p->pid_err != 0 ? p->pid_err : WEIR_ELEADER_NOT_AVAILABLE,
            p->pid_err != 0 ? p->pid_msg : "waiting for a producer id", wake,
            p->pid_retry_ms > now ? p->pid_retry_ms : UINT64_MAX);
    }
    return false;
}

/* Move the ready batches of one partition into its leader's request. */
static void producer_drain(struct weir_producer *p,
                           struct prod_topic *t,
                           struct accum_queue *q,
                           struct prod_build *builds,
                           size_t *nb,
                           uint64_t now,
                           uint64_t *wake)
{
    struct prod_build *bd;
    struct accum_batch *b;
    struct err_detail ed;
    struct conn *c;
    const char *host;
    uint16_t port;
    uint64_t ignore = UINT64_MAX;
    int32_t leader = metadata_leader_id(p->c->md, t->name, q->partition);
    int err;

    err = metadata_leader(p->c->md, t->name, q->partition, &host, &port);
    if (err != 0) {
        metadata_refresh_async(p->c->md);
        producer_note_wait(q, err, "no leader known for the partition", wake,
                           now + METADATA_REFRESH_BACKOFF_MS);
        return;
    }
    if (pool_get(p->c->pool, host, port, POOL_LANE_DEFAULT, &c, &ed) != 0) {
        q->stale_leader = leader;
        metadata_refresh_async(p->c->md);
        producer_note_wait(q, ed.code, ed.msg, wake,
                           now + POOL_RECONNECT_BACKOFF_MS);
        return;
    }
    while ((bd = producer_build_for(p, builds, nb, c)) != NULL &&
           accum_ready(q, &p->acfg, now, p->flushing, &ignore) &&
           producer_idem_gate(p, q, now, wake)) {
        if (bd->pr->n > 0 &&
            (bd->pr->bytes + accum_batch_bytes(q->head) >
                 p->cfg.max_request_bytes ||
             (q->head->solo && bd->pr->batches[bd->pr->n - 1]->q == q))) {
            producer_send(p, bd);
            continue;
        }
        b = accum_pop(q, &err);
        if (b == NULL) {
            return;
        }
        if (p->idem_on && producer_idem_stamp(&p->idem, q, b) != 0) {
            producer_batch_failed(p, b, WEIR_ENOMEM, "out of memory", now);
            return;
        }
        partitioner_sticky_batch_sent(&t->sticky, q->partition,
                                      t->n_partitions);
        b->attempts++;
        b->sent_leader = leader;
        if (prod_request_add(bd->pr, b) != 0) {
            producer_batch_failed(p, b, WEIR_ENOMEM, "out of memory", now);
            return;
        }
        producer_idem_sent(b);
        if (b->solo) {
            return; /* nothing more of this partition in this request */
        }
    }
}

static void producer_pid_failed(struct weir_producer *p,
                                int err,
                                const char *msg,
                                uint64_t now)
{
    p->pid_err = err;
    p->pid_retry_ms = now + p->cfg.retry_backoff_ms;
    /* a broker that cannot give ids will not start to on a retry */
    p->pid_fatal = !weir_err_retriable(err) && weir_err_definite(err) &&
                   !call_is_transport_err(err);
    if (err == WEIR_EUNSUPPORTED_API) {
        (void)snprintf(p->pid_msg, sizeof(p->pid_msg),
                       "the broker does not support idempotent producers "
                       "(InitProducerId): turn idempotence off "
                       "(--no-idempotence)");
    } else {
        (void)snprintf(p->pid_msg, sizeof(p->pid_msg),
                       "cannot get a producer id: %.200s", msg);
    }
    if (call_is_transport_err(err) || err == WEIR_ENOT_LEADER) {
        metadata_refresh_async(p->c->md);
    }
}

static void producer_on_pid(void *arg, struct conn_reply *r)
{
    struct prod_pid_call *pc = arg;
    struct weir_producer *p = pc->p;
    const Weir__InitProducerIdResponse *body;
    uint64_t now;

    mem_free(pc);
    if (p == NULL) {
        return;
    }
    p->pid_call = NULL;
    now = client_now_ms(p->c);
    if (r->err != 0) {
        producer_pid_failed(p, r->err, r->err_msg, now);
        return;
    }
    body = r->resp != NULL &&
                   r->resp->body_case == WEIR__RESPONSE__BODY_INIT_PRODUCER_ID
               ? r->resp->init_producer_id
               : NULL;
    if (body == NULL || body->producer_id < 0 || body->producer_epoch < 0 ||
        body->producer_epoch > INT16_MAX) {
        producer_pid_failed(p, WEIR_EMALFORMED,
                            "the broker's InitProducerId answer is not one",
                            now);
        return;
    }
    p->idem.producer_id = body->producer_id;
    p->idem.epoch = (int16_t)body->producer_epoch;
    p->idem.need_new_id = false;
    p->pid_err = 0;
}

/* Ask the leader of (topic, partition) for a producer id. */
static void producer_pid_request(struct weir_producer *p,
                                 const char *topic,
                                 int32_t partition,
                                 uint64_t now)
{
    Weir__Request req;
    Weir__InitProducerIdRequest body;
    struct prod_pid_call *pc;
    struct err_detail ed;
    struct conn *c;
    const char *host;
    uint16_t port;
    int err;

    err = metadata_leader(p->c->md, topic, partition, &host, &port);
    if (err != 0) {
        producer_pid_failed(p, err, "no leader known", now);
        return;
    }
    if (pool_get(p->c->pool, host, port, POOL_LANE_DEFAULT, &c, &ed) != 0) {
        producer_pid_failed(p, ed.code, ed.msg, now);
        return;
    }
    pc = mem_calloc(1, sizeof(*pc));
    if (pc == NULL) {
        producer_pid_failed(p, WEIR_ENOMEM, "out of memory", now);
        return;
    }
    pc->p = p;
    weir__request__init(&req);
    weir__init_producer_id_request__init(&body);
    req.body_case = WEIR__REQUEST__BODY_INIT_PRODUCER_ID;
    req.init_producer_id = &body;
    if (conn_send(c, &req, NULL, 0, true, p->cfg.request_timeout_ms, now,
                  producer_on_pid, pc, &ed) != 0) {
        mem_free(pc);
        producer_pid_failed(p, ed.code, ed.msg, now);
        return;
    }
    p->pid_call = pc;
}

/* Get a producer id once records wait for one (lazily: the first send),
 * or fail them when the broker cannot give one. */
static void
producer_pid_pump(struct weir_producer *p, uint64_t now, uint64_t *wake)
{
    size_t i;
    int32_t k;

    if ((p->idem.producer_id >= 0 && !p->idem.need_new_id) ||
        p->pid_call != NULL) {
        return;
    }
    for (i = 0; i < p->n_topics; i++) {
        struct prod_topic *t = p->topics[i];
        for (k = 0; k < t->n_partitions; k++) {
            if (t->queues[k].head == NULL) {
                continue;
            }
            if (p->pid_fatal) {
                producer_fail_queue(p, &t->queues[k], p->pid_err, p->pid_msg);
            } else if (now < p->pid_retry_ms) {
                *wake = p->pid_retry_ms < *wake ? p->pid_retry_ms : *wake;
                return;
            } else {
                producer_pid_request(p, t->name, k, now);
                return;
            }
        }
    }
}

static void
producer_expire(struct weir_producer *p, struct accum_queue *q, uint64_t now)
{
    struct accum_batch *b;
    char msg[400];

    while ((b = accum_pop_expired(q, now)) != NULL) {
        (void)snprintf(msg, sizeof(msg), "not delivered within %u ms%s%s",
                       p->cfg.delivery_timeout_ms, q->last_err != 0 ? ": " : "",
                       q->last_err != 0 ? q->last_msg : "");
        producer_deliver(p, b, producer_expiry_code(b), msg, -1);
    }
}

/* A partition whose last send failed against its leader: refresh metadata
 * until it names another leader, then send the retries at once rather
 * than after their backoff (which grew while the old leader was gone). */
static void producer_check_leader(struct weir_producer *p,
                                  const struct prod_topic *t,
                                  struct accum_queue *q,
                                  uint64_t now,
                                  uint64_t *wake)
{
    int32_t leader;

    if (q->stale_leader < 0) {
        return;
    }
    leader = metadata_leader_id(p->c->md, t->name, q->partition);
    if (leader >= 0 && leader != q->stale_leader) {
        q->stale_leader = -1;
        accum_retry_now(q);
        return;
    }
    metadata_refresh_async(p->c->md);
    if (now + METADATA_REFRESH_BACKOFF_MS < *wake) {
        *wake = now + METADATA_REFRESH_BACKOFF_MS;
    }
}

static void
producer_watch_slow(struct weir_producer *p, uint64_t now, uint64_t *wake)
{
    const struct prod_request *pr;
    uint64_t at;

    for (pr = p->inflight; pr != NULL; pr = pr->next) {
        at = pr->sent_ms + PRODUCER_SLOW_REQUEST_MS;
        if (now >= at) {
            metadata_refresh_async(p->c->md);
            at = now + METADATA_REFRESH_BACKOFF_MS;
        }
        if (at < *wake) {
            *wake = at;
        }
    }
}

void producer_pump(struct weir_producer *p)
{
    struct prod_build builds[PRODUCER_MAX_LEADERS];
    uint64_t now = client_now_ms(p->c);
    uint64_t wake = UINT64_MAX;
    size_t nb = 0;
    size_t i;
    int32_t k;

    if (p->idem_on) {
        producer_pid_pump(p, now, &wake);
    }
    producer_watch_slow(p, now, &wake);

    for (i = 0; i < p->n_topics; i++) {
        struct prod_topic *t = p->topics[i];
        for (k = 0; k < t->n_partitions; k++) {
            struct accum_queue *q = &t->queues[k];
            if (q->head == NULL) {
                continue;
            }
            producer_expire(p, q, now);
            if (q->head != NULL && q->head->deadline_ms < wake) {
                wake = q->head->deadline_ms;
            }
            producer_check_leader(p, t, q, now, &wake);
            if (accum_ready(q, &p->acfg, now, p->flushing, &wake)) {
                producer_drain(p, t, q, builds, &nb, now, &wake);
            }
        }
    }
    for (i = 0; i < nb; i++) {
        producer_send(p, &builds[i]);
    }
    p->wake_ms = wake;
}
