/* SPDX-License-Identifier: Apache-2.0 */
/* Fetch: whole record batches below the high watermark, sent from the
 * segment files with sendfile (evbuffer file segments): record bytes never
 * pass through user space. A fetch that finds fewer than min_bytes parks
 * until records arrive or max_wait_ms passes (long poll). */
#include <event2/buffer.h>
#include <event2/event.h>
#include <string.h>
#include <unistd.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "broker/quota.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

#define FETCH_DEFAULT_PARTITION_MAX_BYTES (1024u * 1024)

struct fetch_wait {
    struct broker *b;
    struct srv_req *req;
    Weir__Request *r;
    struct event *timer;
    struct fetch_wait *next;
};

/* Per-call scratch for one attempt. */
struct fetch_plan {
    Weir__FetchPartitionResult *res;
    Weir__FetchPartitionResult **ptrs;
    struct plog_read_result *reads;
    struct plog **logs;
    char **msgs; /* error text per partition, NULL = none (owned) */
    size_t n;
    uint64_t total;
    bool has_error;
    bool first; /* first attempt of this request (not a retry) */
};

static void fetch_plan_free(struct fetch_plan *p)
{
    mem_free(p->res);
    mem_free(p->ptrs);
    mem_free(p->reads);
    mem_free(p->logs);
    size_t i;

    for (i = 0; p->msgs != NULL && i < p->n; i++) {
        mem_free(p->msgs[i]);
    }
    mem_free(p->msgs);
}

/* Keep partition i's error text (a copy, so a request naming many
 * partitions costs memory only for those that fail). */
static void fetch_set_msg(struct fetch_plan *p, size_t i, const char *msg)
{
    mem_free(p->msgs[i]);
    p->msgs[i] = mem_strdup(msg);
    p->res[i].error_message = p->msgs[i] != NULL ? p->msgs[i] : "";
}

static int fetch_plan_alloc(struct fetch_plan *p, size_t n)
{
    memset(p, 0, sizeof(*p));
    p->n = n;
    p->res = mem_calloc(n + 1, sizeof(*p->res));
    p->ptrs = mem_calloc(n + 1, sizeof(*p->ptrs));
    p->reads = mem_calloc(n + 1, sizeof(*p->reads));
    p->logs = mem_calloc(n + 1, sizeof(*p->logs));
    p->msgs = mem_calloc(n + 1, sizeof(*p->msgs));
    return p->res != NULL && p->ptrs != NULL && p->reads != NULL &&
                   p->logs != NULL && p->msgs != NULL
               ? 0
               : WEIR_ENOMEM;
}

/* A follower's fetch (replica_id >= 0): its view of the leader epoch must
 * be this leader's, and its log must not diverge from this one. True when
 * answered here (an error, or where to truncate to) without data. */
static bool fetch_replica_check(struct broker *b,
                                const Weir__FetchRequest *fr,
                                const Weir__FetchPartition *fp,
                                const struct plog *log,
                                bool first,
                                Weir__FetchPartitionResult *res,
                                char *msg,
                                size_t msg_cap)
{
    int32_t epoch = repl_io_leader_epoch(b->repl, fp->topic, fp->partition);
    struct repl_fetch_params params;
    struct repl_fetch_answer ans;

    res->leader_epoch = epoch;
    res->topic_id = fp->topic_id;
    if (fp->topic_id != 0 && b->cluster != NULL) {
        const struct meta_topic *t = meta_image_topic_by_name(
            cluster_image(b->cluster), fp->topic, strlen(fp->topic));
        if (t == NULL || t->id != fp->topic_id) {
            res->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
            (void)snprintf(msg, msg_cap,
                           "topic %s here is not the one with id %lld",
                           fp->topic, (long long)fp->topic_id);
            return true;
        }
    }
    if (fp->current_leader_epoch >= 0 && fp->current_leader_epoch != epoch) {
        res->error_code = fp->current_leader_epoch < epoch
                              ? WEIR_EFENCED_LEADER_EPOCH
                              : WEIR_EUNKNOWN_LEADER_EPOCH;
        (void)snprintf(msg, msg_cap, "leader epoch %d here, fetch says %d",
                       (int)epoch, (int)fp->current_leader_epoch);
        return true;
    }
    params.replica = fr->replica_id;
    params.fetch_offset = fp->fetch_offset;
    params.last_fetched_epoch = fp->last_fetched_epoch;
    params.current_leader_epoch = fp->current_leader_epoch;
    /* the leader core records the follower's position once per request
     * (a parked fetch is retried with the same position) */
    if (first && repl_io_follower_fetch(b->repl, fp->topic, fp->partition,
                                        &params, &ans)) {
        res->high_watermark = ans.high_watermark;
        switch (ans.verdict) {
        case REPL_FETCH_SERVE:
            return false;
        case REPL_FETCH_DIVERGING:
            res->diverging_epoch = ans.diverging_epoch;
            res->diverging_end_offset = ans.diverging_end_offset;
            return true;
        case REPL_FETCH_ERROR:
            res->error_code = ans.err;
            (void)snprintf(msg, msg_cap, "replica fetch refused: %s",
                           weir_err_name(ans.err));
            return true;
        }
    }
    if (repl_io_diverging(b->repl, fp->topic, fp->partition, log,
                          fp->last_fetched_epoch, fp->fetch_offset,
                          &res->diverging_epoch, &res->diverging_end_offset)) {
        return true;
    }
    return false;
}

/* Plan one partition: where its bytes are, or why there are none. */
static void fetch_plan_one(struct broker *b,
                           struct srv_req *req,
                           const Weir__FetchRequest *fr,
                           struct fetch_plan *p,
                           size_t i)
{
    const Weir__FetchPartition *fp = fr->partitions[i];
    Weir__FetchPartitionResult *res = &p->res[i];
    uint64_t max_total = fr->max_bytes == 0 ? UINT32_MAX : fr->max_bytes;
    uint32_t limit = fp->partition_max_bytes == 0
                         ? FETCH_DEFAULT_PARTITION_MAX_BYTES
                         : fp->partition_max_bytes;
    bool replica = fr->replica_id >= 0 && b->repl != NULL;
    struct err_detail ed;
    char msg[512] = "";
    struct plog *log;
    int64_t max_offset;
    int64_t hw;
    int rv;

    weir__fetch_partition_result__init(res);
    res->topic = fp->topic;
    res->partition = fp->partition;
    res->high_watermark = -1;
    res->log_start_offset = -1;
    res->error_message = "";
    p->ptrs[i] = res;
    /* protobuf's default 0 would read as "truncate to offset 0" */
    res->diverging_epoch = -1;
    res->diverging_end_offset = -1;
    if (fr->replica_id < 0 &&
        !api_may(b, req, ACL_TOPIC, fp->topic, ACL_READ)) {
        /* before any lookup: the answer says nothing of existence
         * (replica fetches were checked for cluster-action already) */
        res->error_code = WEIR_ETOPIC_AUTHORIZATION_FAILED;
        (void)snprintf(msg, sizeof(msg), "not authorized to read %s",
                       fp->topic);
        fetch_set_msg(p, i, msg);
        p->has_error = true;
        return;
    }
    if (fr->replica_id >= 0 && !replica) {
        /* a follower's fetch reaching a broker that keeps no replication
         * state (alone, or shutting down): never an answer it could
         * mistake for its leader's */
        res->error_code = WEIR_ENOT_LEADER;
        fetch_set_msg(p, i, "not a leader for replicas (alone or stopping)");
        p->has_error = true;
        return;
    }
    rv = broker_route(b, fp->topic, fp->partition, msg, sizeof(msg));
    if (rv != 0) {
        res->error_code = rv; /* cluster mode: another broker leads it */
        fetch_set_msg(p, i, msg);
        p->has_error = true;
        return;
    }
    log = logmgr_partition(b->logs, fp->topic, fp->partition);
    if (log == NULL) {
        res->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
        (void)snprintf(msg, sizeof(msg), "unknown topic or partition %s/%d",
                       fp->topic, fp->partition);
        fetch_set_msg(p, i, msg);
        p->has_error = true;
        return;
    }
    if (plog_is_offline(log)) {
        /* neither consumers nor followers: a follower's position must not
         * be recorded against a log that cannot serve it */
        res->error_code = WEIR_ELOG_OFFLINE;
        (void)snprintf(msg, sizeof(msg), "%s/%d: %s", fp->topic, fp->partition,
                       plog_offline_reason(log));
        fetch_set_msg(p, i, msg);
        p->has_error = true;
        return;
    }
    hw = broker_high_watermark(b, log);
    res->high_watermark = hw;
    res->log_start_offset = plog_start_offset(log);
    /* a follower reads up to the log end (it must copy what is not yet
     * committed), a consumer only below the high watermark */
    max_offset = hw;
    if (replica) {
        if (fetch_replica_check(b, fr, fp, log, p->first, res, msg,
                                sizeof(msg))) {
            if (msg[0] != '\0') {
                fetch_set_msg(p, i, msg);
            }
            p->has_error = true; /* answer now, do not long-poll */
            return;
        }
        max_offset = plog_end_offset(log);
    }
    if (fp->fetch_offset < plog_start_offset(log) ||
        fp->fetch_offset > plog_end_offset(log)) {
        res->error_code = WEIR_EOFFSET_OUT_OF_RANGE;
        (void)snprintf(msg, sizeof(msg), "offset %lld is outside [%lld, %lld]",
                       (long long)fp->fetch_offset,
                       (long long)plog_start_offset(log),
                       (long long)plog_end_offset(log));
        fetch_set_msg(p, i, msg);
        p->has_error = true;
        return;
    }
    if (fp->fetch_offset >= max_offset || p->total >= max_total) {
        return;
    }
    if ((uint64_t)limit > max_total - p->total) {
        limit = (uint32_t)(max_total - p->total);
    }
    err_detail_clear(&ed);
    rv = plog_read(log, fp->fetch_offset, max_offset, limit, &p->reads[i], &ed);
    if (rv != 0) {
        res->error_code = rv;
        fetch_set_msg(p, i, ed.msg);
        p->has_error = true;
        if (rv == WEIR_ELOG_OFFLINE) {
            return; /* this read took it offline: traced by storage */
        }
        trace_error("api",
                    "event=fetch_read_failed topic=%s partition=%d "
                    "offset=%lld msg=\"%s\"",
                    fp->topic, fp->partition, (long long)fp->fetch_offset,
                    ed.msg);
        return;
    }
    p->logs[i] = log;
    res->payload_bytes = p->reads[i].bytes;
    p->total += p->reads[i].bytes;
}

/* Attach one partition's bytes: a file segment over a duplicate of the
 * segment's descriptor (so retention may delete the file meanwhile), or a
 * copy when the storage has no descriptor. */
static int fetch_attach(struct evbuffer *out, struct fetch_plan *p, size_t i)
{
    const struct plog_read_result *rr = &p->reads[i];
    struct evbuffer_file_segment *seg;
    struct weir_buf copy;
    struct err_detail ed;
    int fd;
    int rv;

    if (rr->bytes == 0) {
        return 0;
    }
    if (rr->fd >= 0) {
        fd = dup(rr->fd);
        if (fd < 0) {
            return WEIR_EIO;
        }
        seg = evbuffer_file_segment_new(fd, (ev_off_t)rr->position,
                                        (ev_off_t)rr->bytes,
                                        EVBUF_FS_CLOSE_ON_FREE);
        if (seg == NULL) {
            (void)close(fd);
            return WEIR_EIO;
        }
        rv = evbuffer_add_file_segment(out, seg, 0, (ev_off_t)rr->bytes);
        evbuffer_file_segment_free(seg);
        return rv == 0 ? 0 : WEIR_EIO;
    }
    buf_init(&copy);
    rv = plog_read_copy(p->logs[i], rr, &copy, &ed);
    if (rv == 0 && evbuffer_add(out, copy.data, copy.len) != 0) {
        rv = WEIR_ENOMEM;
    }
    buf_fini(&copy);
    return rv;
}

static void fetch_answer(struct broker *b,
                         struct srv_req *req,
                         Weir__Request *r,
                         struct fetch_plan *p)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__FetchResponse body = WEIR__FETCH_RESPONSE__INIT;
    struct evbuffer *payload = evbuffer_new();
    size_t i;

    if (payload == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        return;
    }
    /* file segments stay file segments (sendfile) only in a buffer that
     * drains to a socket; through TLS they are mapped and encrypted */
    if (!req->tls) {
        (void)evbuffer_set_flags(payload, EVBUFFER_FLAG_DRAINS_TO_FD);
    }
    for (i = 0; i < p->n; i++) {
        if (fetch_attach(payload, p, i) != 0) {
            p->res[i].error_code = WEIR_EIO;
            p->res[i].payload_bytes = 0;
            (void)evbuffer_drain(payload, evbuffer_get_length(payload));
            evbuffer_free(payload);
            broker_respond_error(req, r->correlation_id, WEIR_EIO,
                                 "cannot attach segment data", false);
            return;
        }
    }
    body.partitions = p->ptrs;
    body.n_partitions = p->n;
    /* followers are never throttled: replication must keep up */
    if (b->fetch_quota != NULL && r->fetch->replica_id < 0) {
        body.throttle_time_ms =
            quota_charge(b->fetch_quota, broker_quota_key(req, r),
                         evbuffer_get_length(payload), clock_now_ms(b->clock));
    }
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_FETCH;
    resp.fetch = &body;
    broker_respond_after(b, req, &resp, payload, body.throttle_time_ms);
    evbuffer_free(payload);
}

/* Try to answer; true when answered (the caller then frees `r`). */
static bool fetch_try(struct broker *b,
                      struct srv_req *req,
                      Weir__Request *r,
                      bool final,
                      bool first)
{
    const Weir__FetchRequest *fr = r->fetch;
    struct fetch_plan p;
    size_t i;

    if (srv_req_orphaned(req)) {
        srv_req_finish(req);
        return true;
    }
    if (fetch_plan_alloc(&p, fr->n_partitions) != 0) {
        fetch_plan_free(&p);
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        return true;
    }
    p.first = first;
    for (i = 0; i < fr->n_partitions; i++) {
        fetch_plan_one(b, req, fr, &p, i);
    }
    if (!final && !p.has_error && p.total < fr->min_bytes &&
        fr->max_wait_ms > 0) {
        fetch_plan_free(&p);
        return false;
    }
    fetch_answer(b, req, r, &p);
    fetch_plan_free(&p);
    return true;
}

static void fetch_wait_unlink(struct broker *b, struct fetch_wait *w)
{
    struct fetch_wait **pw;

    for (pw = &b->fetch_waits; *pw != NULL; pw = &(*pw)->next) {
        if (*pw == w) {
            *pw = w->next;
            break;
        }
    }
    event_free(w->timer);
    rpc_request_free(w->r);
    mem_free(w);
}

static void fetch_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fetch_wait *w = arg;

    (void)fd;
    (void)what;
    (void)fetch_try(w->b, w->req, w->r, true, false);
    fetch_wait_unlink(w->b, w);
}

void api_fetch(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    struct fetch_wait *w;
    struct timeval tv;
    uint32_t wait_ms;

    if (fetch_try(b, req, r, false, true)) {
        rpc_request_free(r);
        return;
    }
    w = mem_calloc(1, sizeof(*w));
    if (w == NULL ||
        (w->timer = evtimer_new(b->base, fetch_timeout_cb, w)) == NULL) {
        mem_free(w);
        (void)fetch_try(b, req, r, true, false);
        rpc_request_free(r);
        return;
    }
    w->b = b;
    w->req = req;
    w->r = r;
    wait_ms = r->fetch->max_wait_ms;
    if (wait_ms > (uint64_t)b->cfg.fetch_max_wait_ms) {
        wait_ms = (uint32_t)b->cfg.fetch_max_wait_ms;
    }
    tv.tv_sec = wait_ms / 1000;
    tv.tv_usec = (wait_ms % 1000) * 1000;
    (void)evtimer_add(w->timer, &tv);
    w->next = b->fetch_waits;
    b->fetch_waits = w;
}

void api_fetch_retry(struct broker *b, bool final)
{
    struct fetch_wait *w = b->fetch_waits;
    struct fetch_wait *next;

    while (w != NULL) {
        next = w->next;
        if (fetch_try(b, w->req, w->r, final, false)) {
            fetch_wait_unlink(b, w);
        }
        w = next;
    }
}
