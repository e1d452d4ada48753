/* SPDX-License-Identifier: Apache-2.0 */
/* Produce: append each partition's batches as received (validated, offsets
 * patched in place, one write), then answer - at once, or, under
 * flush-policy=ack, once group commit has made them durable. acks=0 gets
 * no answer at all. Batches with a producer id go through the partition's
 * idempotence check first (broker/idem); InitProducerId gives the ids. */
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "broker/group/group_io.h"
#include "broker/quota.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/rpc.h"
#include "common/trace.h"

/* One produce request waiting for fsync. */
struct produce_wait {
    struct srv_req *req;
    Weir__Request *r;
    Weir__ProducePartitionResult *res;
    Weir__ProducePartitionResult **ptrs;
    struct plog **logs; /* log each partition was appended to, or NULL */
    int64_t *need;      /* durable offset that acknowledges it */
    bool *repl;         /* acks=all led with a core: need is a HW */
    char **msgs;        /* error text per partition, NULL = none (owned) */
    size_t n;
    size_t pending;
    uint64_t deadline_ms;
    struct broker *b;
    struct event *timer;  /* acks=all waits: the request's timeout_ms */
    uint32_t throttle_ms; /* the client's produce quota */
    struct produce_wait *next;
};

/* Keep partition i's error text (a copy: a request naming many
 * partitions costs memory only for those that fail). */
static void WEIR_PRINTF(3, 4)
    produce_msgf(struct produce_wait *w, size_t i, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    mem_free(w->msgs[i]);
    w->msgs[i] = mem_strdup(buf);
}

static void produce_wait_free(struct produce_wait *w)
{
    size_t i;

    if (w == NULL) {
        return;
    }
    if (w->timer != NULL) {
        event_free(w->timer);
    }
    rpc_request_free(w->r);
    mem_free(w->res);
    mem_free(w->ptrs);
    mem_free(w->logs);
    mem_free(w->need);
    mem_free(w->repl);
    for (i = 0; w->msgs != NULL && i < w->n; i++) {
        mem_free(w->msgs[i]);
    }
    mem_free(w->msgs);
    mem_free(w);
}

static struct produce_wait *produce_wait_new(size_t n)
{
    struct produce_wait *w = mem_calloc(1, sizeof(*w));

    if (w == NULL) {
        return NULL;
    }
    w->n = n;
    w->res = mem_calloc(n + 1, sizeof(*w->res));
    w->ptrs = mem_calloc(n + 1, sizeof(*w->ptrs));
    w->logs = mem_calloc(n + 1, sizeof(*w->logs));
    w->need = mem_calloc(n + 1, sizeof(*w->need));
    w->repl = mem_calloc(n + 1, sizeof(*w->repl));
    w->msgs = mem_calloc(n + 1, sizeof(*w->msgs));
    if (w->res == NULL || w->ptrs == NULL || w->logs == NULL ||
        w->need == NULL || w->repl == NULL || w->msgs == NULL) {
        produce_wait_free(w);
        return NULL;
    }
    return w;
}

static void produce_answer(struct produce_wait *w)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__ProduceResponse body = WEIR__PRODUCE_RESPONSE__INIT;
    size_t i;

    if (w->r->produce->acks == 0) {
        srv_req_finish(w->req);
    } else {
        for (i = 0; i < w->n; i++) {
            w->res[i].error_message = w->msgs[i] != NULL ? w->msgs[i] : "";
        }
        body.partitions = w->ptrs;
        body.n_partitions = w->n;
        body.throttle_time_ms = w->throttle_ms;
        resp.correlation_id = w->r->correlation_id;
        resp.body_case = WEIR__RESPONSE__BODY_PRODUCE;
        resp.produce = &body;
        broker_respond_after(w->b, w->req, &resp, NULL, w->throttle_ms);
    }
    produce_wait_free(w);
}

/* Acknowledge partition i once `log` holds [.., last] durably (at once
 * unless flush-policy=ack makes it wait for group commit). */
static void produce_ack_when_durable(struct broker *b,
                                     struct produce_wait *w,
                                     size_t i,
                                     struct plog *log,
                                     int64_t last)
{
    if (plog_config(log)->flush_policy != PLOG_FLUSH_ACK ||
        plog_durable_offset(log) > last) {
        return;
    }
    w->logs[i] = log;
    w->need[i] = last + 1;
    w->pending++;
    broker_mark_dirty(b, log);
}

/* acks=all on a partition led with a leader core: acknowledge partition i
 * once the high watermark passes `last`. */
static void produce_ack_when_replicated(struct broker *b,
                                        struct produce_wait *w,
                                        size_t i,
                                        struct plog *log,
                                        int64_t last)
{
    if (plog_config(log)->flush_policy == PLOG_FLUSH_ACK &&
        plog_durable_offset(log) <= last) {
        broker_mark_dirty(b, log); /* the leader's own copy counts too */
    }
    if (broker_high_watermark(b, log) > last) {
        return;
    }
    w->logs[i] = log;
    w->need[i] = last + 1;
    w->pending++;
}

/* Idempotence before anything is written: true to go on and append,
 * false with *answer for partition i - a retry of batches written before
 * gets DUPLICATE_SEQUENCE with their offsets (once they are as durable as
 * the first answer would have made them), a sequence or epoch out of line
 * its error. */
static bool produce_idem_gate(struct broker *b,
                              struct produce_wait *w,
                              size_t i,
                              struct plog *log,
                              const uint8_t *data,
                              uint32_t len,
                              struct idem_io_payload *ip,
                              int *answer)
{
    const Weir__ProducePartition *pp = w->r->produce->partitions[i];
    Weir__ProducePartitionResult *res = &w->res[i];
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = idem_io_check(b->idem, pp->topic, pp->partition, log,
                       clock_wall_ms(b->clock), data, len, ip, &ed);
    if (rv == 0 && ip->res.verdict == IDEM_VERDICT_APPEND) {
        return true;
    }
    if (rv == 0 && ip->res.verdict == IDEM_VERDICT_DUPLICATE) {
        res->base_offset = ip->res.base_offset;
        res->log_start_offset = plog_start_offset(log);
        produce_msgf(w, i, "already written at offsets %lld..%lld",
                     (long long)ip->res.base_offset,
                     (long long)ip->res.last_offset);
        if (w->repl[i]) {
            produce_ack_when_replicated(b, w, i, log, ip->res.last_offset);
        } else {
            produce_ack_when_durable(b, w, i, log, ip->res.last_offset);
        }
        trace_info("api",
                   "event=produce_duplicate topic=%s partition=%d "
                   "base_offset=%lld last_offset=%lld peer=%s",
                   pp->topic, pp->partition, (long long)ip->res.base_offset,
                   (long long)ip->res.last_offset, w->req->peer);
        *answer = WEIR_EDUPLICATE_SEQUENCE;
        return false;
    }
    produce_msgf(w, i, "%s", ed.msg);
    trace_info("api",
               "event=produce_refused topic=%s partition=%d error=%s "
               "msg=\"%s\" peer=%s",
               pp->topic, pp->partition,
               weir_err_name(rv != 0 ? rv : ip->res.code), ed.msg,
               w->req->peer);
    *answer = rv != 0 ? rv : ip->res.code;
    return false;
}

/* The code a producer gets for an append that failed: definite ("not
 * written") only when nothing of it can be in the log. plog_append says
 * LOG_OFFLINE when it refused before writing and EIO when bytes may have
 * reached the file; a log that grew anyway (an earlier chunk of a long
 * append) is indefinite too. The one place where a storage failure
 * becomes a produce answer. */
static int
produce_append_code(const struct plog *log, int rv, int64_t end_before)
{
    if (plog_end_offset(log) != end_before && weir_err_definite(rv)) {
        return WEIR_EIO;
    }
    return rv;
}

/* Append one partition's batches; returns 0 or an error code with the
 * message in w->msgs[i]. */
static int produce_one(struct broker *b,
                       struct produce_wait *w,
                       size_t i,
                       uint8_t *data,
                       uint32_t len)
{
    const Weir__ProducePartition *pp = w->r->produce->partitions[i];
    Weir__ProducePartitionResult *res = &w->res[i];
    struct idem_io_payload ip;
    struct err_detail ed;
    char route_msg[512];
    struct plog *log;
    int64_t end_before;
    int64_t base;
    int64_t last;
    int rv;

    err_detail_clear(&ed);
    if (!api_may(b, w->req, ACL_TOPIC, pp->topic, ACL_WRITE)) {
        /* before any lookup: the answer says nothing of existence */
        produce_msgf(w, i, "not authorized to write to %s", pp->topic);
        return WEIR_ETOPIC_AUTHORIZATION_FAILED;
    }
    rv =
        broker_route(b, pp->topic, pp->partition, route_msg, sizeof(route_msg));
    if (rv != 0) {
        produce_msgf(w, i, "%s", route_msg);
        return rv; /* cluster mode: another broker leads it */
    }
    log = logmgr_partition(b->logs, pp->topic, pp->partition);
    if (log == NULL) {
        produce_msgf(w, i, "unknown topic or partition %s/%d", pp->topic,
                     pp->partition);
        return WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    }
    if (len == 0) {
        produce_msgf(w, i, "no record batches");
        return WEIR_ECORRUPT_MESSAGE;
    }
    if (plog_is_offline(log)) {
        produce_msgf(w, i, "%s/%d: %s", pp->topic, pp->partition,
                     plog_offline_reason(log));
        return WEIR_ELOG_OFFLINE; /* refused before anything was written */
    }
    if (names_topic_internal(pp->topic)) {
        produce_msgf(w, i,
                     "%s is internal: only the group coordinator writes it",
                     pp->topic);
        return WEIR_EINVALID_TOPIC;
    }
    if (w->r->produce->acks == -1) {
        rv = repl_io_acks_all(b->repl, pp->topic, pp->partition, &w->repl[i]);
        if (rv != 0) {
            produce_msgf(w, i,
                         "in-sync replicas of %s/%d below "
                         "min.insync.replicas",
                         pp->topic, pp->partition);
            return rv;
        }
    }
    if (!produce_idem_gate(b, w, i, log, data, len, &ip, &rv)) {
        idem_io_payload_fini(&ip);
        return rv;
    }
    end_before = plog_end_offset(log);
    rv = plog_append(log, data, len,
                     repl_io_leader_epoch(b->repl, pp->topic, pp->partition),
                     clock_wall_ms(b->clock), &base, &last, &ed);
    if (rv == 0) {
        idem_io_appended(&ip, base);
    } else {
        idem_io_append_failed(b->idem, &ip, pp->topic, pp->partition, log,
                              end_before);
    }
    idem_io_payload_fini(&ip);
    if (rv != 0) {
        rv = produce_append_code(log, rv, end_before);
        produce_msgf(w, i, "%s", ed.msg);
        trace_warn("api",
                   "event=produce_refused topic=%s partition=%d "
                   "error=%s msg=\"%s\" peer=%s",
                   pp->topic, pp->partition, weir_err_name(rv), ed.msg,
                   w->req->peer);
        return rv;
    }
    res->base_offset = base;
    res->log_start_offset = plog_start_offset(log);
    repl_io_log_moved(b->repl, log);
    if (w->repl[i]) {
        produce_ack_when_replicated(b, w, i, log, last);
    }
    switch (plog_config(log)->flush_policy) {
    case PLOG_FLUSH_ACK:
        if (!w->repl[i]) {
            produce_ack_when_durable(b, w, i, log, last);
        }
        break;
    case PLOG_FLUSH_INTERVAL:
        if (plog_unflushed_messages(log) >= plog_config(log)->flush_messages &&
            plog_flush(log, &ed) != 0) {
            trace_error("storage", "event=flush_failed dir=%s msg=\"%s\"",
                        plog_dir(log), ed.msg);
        }
        break;
    case PLOG_FLUSH_NEVER:
        break;
    }
    return 0;
}

/* The request's timeout passed: partitions still waiting for the high
 * watermark get REQUEST_TIMED_OUT (they may still be committed later). */
static void produce_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct produce_wait *w = arg;
    struct produce_wait **pw;
    size_t i;

    (void)fd;
    (void)what;
    for (i = 0; i < w->n; i++) {
        if (w->logs[i] != NULL && w->repl[i]) {
            w->logs[i] = NULL;
            w->pending--;
            w->res[i].error_code = WEIR_EREQUEST_TIMED_OUT;
            produce_msgf(w, i,
                         "not replicated to the in-sync replicas in %u ms",
                         (unsigned)w->r->produce->timeout_ms);
        }
    }
    if (w->pending != 0) {
        return;
    }
    for (pw = &w->b->produce_waits; *pw != NULL; pw = &(*pw)->next) {
        if (*pw == w) {
            *pw = w->next;
            produce_answer(w);
            return;
        }
    }
}

/* Bound an acks=all wait by the request's timeout_ms (0: unbounded). */
static void produce_arm_timeout(struct broker *b, struct produce_wait *w)
{
    struct timeval tv;
    uint32_t ms = w->r->produce->timeout_ms;
    size_t i;
    bool repl = false;

    for (i = 0; i < w->n; i++) {
        repl = repl || (w->logs[i] != NULL && w->repl[i]);
    }
    if (!repl || ms == 0 || b->base == NULL) {
        return;
    }
    w->b = b;
    w->timer = evtimer_new(b->base, produce_timeout_cb, w);
    if (w->timer == NULL) {
        return; /* unbounded, as before */
    }
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    (void)evtimer_add(w->timer, &tv);
}

void api_produce(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    const Weir__ProduceRequest *pr = r->produce;
    struct produce_wait *w = produce_wait_new(pr->n_partitions);
    uint32_t off = 0;
    bool appended = false;
    size_t i;

    if (w == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
        return;
    }
    w->req = req;
    w->r = r;
    w->b = b;
    if (b->produce_quota != NULL) {
        w->throttle_ms =
            quota_charge(b->produce_quota, broker_quota_key(req, r),
                         req->payload_len, clock_now_ms(b->clock));
    }
    for (i = 0; i < pr->n_partitions; i++) {
        const Weir__ProducePartition *pp = pr->partitions[i];
        Weir__ProducePartitionResult *res = &w->res[i];
        weir__produce_partition_result__init(res);
        res->topic = pp->topic;
        res->partition = pp->partition;
        res->base_offset = -1;
        res->log_start_offset = -1;
        res->error_code =
            produce_one(b, w, i, req->payload + off, pp->payload_bytes);
        appended = appended || res->error_code == 0;
        w->ptrs[i] = res;
        off += pp->payload_bytes;
    }
    if (appended) {
        broker_readable(b);
    }
    if (w->pending == 0) {
        produce_answer(w);
        return;
    }
    produce_arm_timeout(b, w);
    w->next = b->produce_waits;
    b->produce_waits = w;
}

void api_produce_complete_waits(struct broker *b)
{
    struct produce_wait **pw = &b->produce_waits;
    struct produce_wait *w;
    size_t i;

    while ((w = *pw) != NULL) {
        for (i = 0; i < w->n; i++) {
            if (w->logs[i] != NULL &&
                (w->repl[i] ? broker_high_watermark(b, w->logs[i])
                            : plog_durable_offset(w->logs[i])) >= w->need[i]) {
                w->logs[i] = NULL;
                w->pending--;
            }
        }
        if (w->pending == 0) {
            *pw = w->next;
            produce_answer(w);
        } else {
            pw = &w->next;
        }
    }
    group_io_complete_waits(b->group);
}

void api_produce_fail_log(struct broker *b,
                          const struct plog *log,
                          int code,
                          const char *msg)
{
    struct produce_wait *w;
    size_t i;

    (void)b;
    for (w = b->produce_waits; w != NULL; w = w->next) {
        for (i = 0; i < w->n; i++) {
            if (w->logs[i] == log) {
                w->logs[i] = NULL;
                w->need[i] = 0;
                w->res[i].error_code = code;
                w->res[i].base_offset = -1;
                produce_msgf(w, i, "%s", msg);
            }
        }
    }
    /* entries with no log left are complete; answer them */
    for (w = b->produce_waits; w != NULL; w = w->next) {
        w->pending = 0;
        for (i = 0; i < w->n; i++) {
            w->pending += w->logs[i] != NULL;
        }
    }
    group_io_fail_log(b->group, log, code, msg);
    api_produce_complete_waits(b);
}
