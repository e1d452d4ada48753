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

/* acks=all waits: how often the in-sync replicas are checked */
#define PRODUCE_CHECK_MS 100

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
    uint64_t deadline_ms; /* acks=all: timeout_ms from the append, 0 none */
    struct broker *b;
    struct event *timer;  /* acks=all waits: checks and the deadline */
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

/* How far a failed write got: the code of its answer depends on it. */
enum produce_stage {
    PRODUCE_STAGE_APPENDING, /* plog_append failed, nothing in the log */
    PRODUCE_STAGE_WAITING,   /* (partly) appended; waiting for the HW or an
                                fsync */
};

/* The one place where produce's error codes are chosen (docs/protocol.md,
 * "Honest verdicts"). A refusal before the append keeps its own code, a
 * definite one: nothing was written. Once the append began, the records
 * may be on disk and on followers, and may survive a failover, so the
 * answer must be indefinite: a definite cause is turned into the matching
 * *_AFTER_APPEND code. plog_append refuses before writing with definite
 * codes (validation, out of memory) and reports a failure after it began
 * writing as STORAGE or IO, which are indefinite already. */
static int produce_error_code(enum produce_stage stage, int cause)
{
    if (stage == PRODUCE_STAGE_APPENDING || !weir_err_definite(cause)) {
        return cause;
    }
    switch (cause) {
    case WEIR_ENOT_LEADER:
    case WEIR_EFENCED_LEADER_EPOCH:
    case WEIR_EUNKNOWN_TOPIC_OR_PARTITION:
        return WEIR_ENOT_LEADER_AFTER_APPEND;
    case WEIR_ENOT_ENOUGH_REPLICAS:
        return WEIR_ENOT_ENOUGH_REPLICAS_AFTER_APPEND;
    default:
        return WEIR_EIO; /* in the log, maybe beyond: nothing else known */
    }
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
 * append) is answered as an appended write. */
static int
produce_append_code(const struct plog *log, int rv, int64_t end_before)
{
    return produce_error_code(plog_end_offset(log) != end_before
                                  ? PRODUCE_STAGE_WAITING
                                  : PRODUCE_STAGE_APPENDING,
                              rv);
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

/* Partition i, appended and waiting, will not be acknowledged: answer it
 * with the (indefinite) code of a failure after the append. */
static void produce_wait_fail(struct produce_wait *w, size_t i, int code)
{
    const Weir__ProducePartition *pp = w->r->produce->partitions[i];
    long long first = (long long)w->res[i].base_offset;
    long long last = (long long)w->need[i] - 1;

    w->logs[i] = NULL;
    w->pending--;
    w->res[i].error_code = produce_error_code(PRODUCE_STAGE_WAITING, code);
    w->res[i].base_offset = -1;
    if (w->res[i].error_code == WEIR_ENOT_ENOUGH_REPLICAS_AFTER_APPEND) {
        produce_msgf(w, i,
                     "written to %s/%d at offsets %lld..%lld, but its "
                     "in-sync replicas fell below min.insync.replicas "
                     "before they had it: not acknowledged, it may or may "
                     "not survive",
                     pp->topic, pp->partition, first, last);
    } else {
        produce_msgf(w, i,
                     "written to %s/%d at offsets %lld..%lld, but not "
                     "replicated to the in-sync replicas in %u ms: it may "
                     "or may not survive",
                     pp->topic, pp->partition, first, last,
                     (unsigned)w->r->produce->timeout_ms);
    }
}

/* Answer the partitions of w whose in-sync replicas are below
 * min.insync.replicas now (the high watermark cannot reach them while
 * that lasts), and, once w's timeout_ms has passed, every partition still
 * waiting. True when nothing is left to wait for. */
static bool produce_wait_check(struct produce_wait *w, uint64_t now_ms)
{
    const Weir__ProducePartition *pp;
    bool replicated;
    size_t i;

    for (i = 0; i < w->n; i++) {
        if (w->logs[i] == NULL || !w->repl[i]) {
            continue;
        }
        pp = w->r->produce->partitions[i];
        if (repl_io_acks_all(w->b->repl, pp->topic, pp->partition,
                             &replicated) != 0) {
            produce_wait_fail(w, i, WEIR_ENOT_ENOUGH_REPLICAS);
        } else if (w->deadline_ms != 0 && now_ms >= w->deadline_ms) {
            produce_wait_fail(w, i, WEIR_EREQUEST_TIMED_OUT);
        }
    }
    return w->pending == 0;
}

static void produce_arm(struct produce_wait *w, uint64_t now_ms)
{
    uint64_t ms = PRODUCE_CHECK_MS;
    struct timeval tv;

    if (w->deadline_ms > now_ms && w->deadline_ms - now_ms < ms) {
        ms = w->deadline_ms - now_ms;
    }
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    (void)evtimer_add(w->timer, &tv);
}

static void produce_check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct produce_wait *w = arg;
    struct produce_wait **pw;
    uint64_t now = clock_now_ms(w->b->clock);

    (void)fd;
    (void)what;
    if (!produce_wait_check(w, now)) {
        produce_arm(w, now);
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

/* acks=all waits are checked every PRODUCE_CHECK_MS (the in-sync replicas
 * may fall below min.insync.replicas) and bounded by the request's
 * timeout_ms (0: unbounded). */
static void produce_arm_checks(struct broker *b, struct produce_wait *w)
{
    uint32_t ms = w->r->produce->timeout_ms;
    uint64_t now;
    size_t i;
    bool repl = false;

    for (i = 0; i < w->n; i++) {
        repl = repl || (w->logs[i] != NULL && w->repl[i]);
    }
    if (!repl || b->base == NULL) {
        return;
    }
    w->b = b;
    w->timer = evtimer_new(b->base, produce_check_cb, w);
    if (w->timer == NULL) {
        return; /* unbounded, answered by the high watermark alone */
    }
    now = clock_now_ms(b->clock);
    w->deadline_ms = ms != 0 ? now + ms : 0;
    produce_arm(w, now);
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
    produce_arm_checks(b, w);
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

    code = produce_error_code(PRODUCE_STAGE_WAITING, code);
    for (w = b->produce_waits; w != NULL; w = w->next) {
        for (i = 0; i < w->n; i++) {
            if (w->logs[i] == log) {
                produce_msgf(w, i,
                             "%s (written at offsets %lld..%lld: it may or "
                             "may not survive)",
                             msg, (long long)w->res[i].base_offset,
                             (long long)w->need[i] - 1);
                w->logs[i] = NULL;
                w->need[i] = 0;
                w->res[i].error_code = code;
                w->res[i].base_offset = -1;
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
