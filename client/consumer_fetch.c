/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer network side. Each pump groups partitions by leader: those that
 * need a start position into one ListOffsets request per leader, fetchable
 * ones with nothing buffered into one Fetch per leader. Fetches go on the
 * fetch lane with at most one in flight per broker: the broker holds a
 * long-poll fetch up to max_wait_ms, and replies come back in order. */
#include <stdio.h>
#include <string.h>

#include "client/consumer_int.h"
#include "common/mem.h"

#define CONSUMER_MAX_LEADERS 64

struct cons_build {
    struct conn *conn;
    struct cons_req *req;
};

static void cons_req_free(struct cons_req *r)
{
    if (r != NULL) {
        mem_free(r->parts);
        mem_free(r);
    }
}

static void cons_req_unlink(struct weir_consumer *k, struct cons_req *r)
{
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        k->reqs = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    }
    r->next = r->prev = NULL;
}

static int cons_req_add(struct cons_req *r, struct cons_part *cp)
{
    struct cons_req_part *v;

    v = mem_realloc(r->parts, (r->n + 1) * sizeof(*v));
    if (v == NULL) {
        return WEIR_ENOMEM;
    }
    r->parts = v;
    v[r->n].part = cp;
    v[r->n].epoch = cp->epoch;
    v[r->n].fetch_offset = cp->fetch_offset;
    r->n++;
    return 0;
}

void consumer_part_error(struct weir_consumer *k,
                         struct cons_part *cp,
                         int err,
                         const char *msg,
                         uint64_t now)
{
    if (cp->state == CONS_OFFSET_WAIT) {
        cp->state = CONS_NEED_OFFSET;
    }
    if (err == WEIR_EOFFSET_OUT_OF_RANGE && k->cfg.reset != WEIR_START_OFFSET) {
        cp->state = CONS_NEED_OFFSET;
        cp->start = k->cfg.reset;
        cp->epoch++;
        return;
    }
    cp->err = err;
    (void)snprintf(cp->err_msg, sizeof(cp->err_msg), "%s", msg);
    if (weir_err_retriable(err)) {
        if (cp->failing_since_ms == 0) {
            cp->failing_since_ms = now == 0 ? 1 : now;
        }
        cp->backoff_until_ms = now + k->cfg.retry_backoff_ms;
        metadata_refresh_async(k->c->md);
        return;
    }
    cp->state = CONS_FAILED;
    cp->err_reported = false;
}

static void consumer_part_ok(struct cons_part *cp)
{
    cp->err = 0;
    cp->failing_since_ms = 0;
}

static const Weir__ListOffsetsPartitionResult *
consumer_find_offset(const Weir__ListOffsetsResponse *r,
                     const struct cons_part *cp)
{
    size_t i;

    for (i = 0; i < r->n_partitions; i++) {
        if (r->partitions[i]->partition == cp->partition &&
            strcmp(r->partitions[i]->topic, cp->topic) == 0) {
            return r->partitions[i];
        }
    }
    return NULL;
}

static void consumer_offset_result(struct weir_consumer *k,
                                   struct cons_part *cp,
                                   const struct conn_reply *r,
                                   uint64_t now)
{
    const Weir__ListOffsetsPartitionResult *res;

    if (r->err != 0) {
        consumer_part_error(k, cp, r->err, r->err_msg, now);
        return;
    }
    if (r->resp->body_case != WEIR__RESPONSE__BODY_LIST_OFFSETS ||
        (res = consumer_find_offset(r->resp->list_offsets, cp)) == NULL) {
        consumer_part_error(k, cp, WEIR_EUNKNOWN,
                            "broker's ListOffsets reply lacks the partition",
                            now);
        return;
    }
    if (res->error_code != 0) {
        consumer_part_error(k, cp, res->error_code,
                            weir_err_str(res->error_code), now);
        return;
    }
    consumer_part_ok(cp);
    if (res->offset < 0) { /* no record at or after the time: the end */
        cp->state = CONS_NEED_OFFSET;
        cp->start = WEIR_START_LATEST;
        return;
    }
    cp->position = res->offset;
    cp->fetch_offset = res->offset;
    cp->state = CONS_FETCHABLE;
}

static void consumer_on_offsets(void *arg, struct conn_reply *r)
{
    struct cons_req *req = arg;
    struct weir_consumer *k = req->k;
    uint64_t now;
    size_t i;

    if (k == NULL) {
        cons_req_free(req);
        return;
    }
    cons_req_unlink(k, req);
    now = client_now_ms(k->c);
    for (i = 0; i < req->n; i++) {
        struct cons_part *cp = req->parts[i].part;
        if (cp->epoch != req->parts[i].epoch || cp->state != CONS_OFFSET_WAIT) {
            continue;
        }
        consumer_offset_result(k, cp, r, now);
    }
    cons_req_free(req);
}

/* Grow the per-partition limit when only part of one batch came back:
 * the broker could not fit a whole batch. */
static void
consumer_grow_limit(struct weir_consumer *k, struct cons_part *cp, uint64_t now)
{
    char msg[200];

    if (cp->max_bytes >= k->cfg.fetch_max_bytes) {
        (void)snprintf(msg, sizeof(msg),
                       "record batch at offset %lld is larger than the fetch "
                       "limit of %u bytes",
                       (long long)cp->fetch_offset, k->cfg.fetch_max_bytes);
        consumer_part_error(k, cp, WEIR_EMESSAGE_TOO_LARGE, msg, now);
        return;
    }
    cp->max_bytes = cp->max_bytes > k->cfg.fetch_max_bytes / 2
                        ? k->cfg.fetch_max_bytes
                        : cp->max_bytes * 2;
}

static void consumer_fetch_result(struct weir_consumer *k,
                                  const struct cons_req_part *e,
                                  const Weir__FetchPartitionResult *res,
                                  struct weir_slice data,
                                  uint64_t now)
{
    struct cons_part *cp = e->part;
    struct recset_scan scan;
    struct err_detail ed;
    uint8_t *copy;
    int rv;

    if (res->error_code != 0) {
        consumer_part_error(k, cp, res->error_code,
                            res->error_message[0] != '\0'
                                ? res->error_message
                                : weir_err_str(res->error_code),
                            now);
        return;
    }
    rv = recset_scan(data, e->fetch_offset, &scan, &ed);
    if (rv != 0) {
        consumer_part_error(k, cp, rv, ed.msg, now);
        return;
    }
    consumer_part_ok(cp);
    if (scan.n_whole == 0) {
        if (data.len > 0) {
            consumer_grow_limit(k, cp, now);
        }
        return;
    }
    copy = mem_malloc(scan.whole_bytes);
    if (copy == NULL) {
        consumer_part_error(k, cp, WEIR_ENOMEM, "out of memory", now);
        return;
    }
    memcpy(copy, data.p, scan.whole_bytes);
    cp->fetch_offset = scan.next_offset;
    consumer_add_chunk(k, cp, copy, scan.whole_bytes, e->fetch_offset,
                       scan.next_offset);
}

static const struct cons_req_part *
consumer_find_entry(const struct cons_req *req,
                    const Weir__FetchPartitionResult *res)
{
    size_t i;

    for (i = 0; i < req->n; i++) {
        const struct cons_part *cp = req->parts[i].part;
        if (cp->partition == res->partition &&
            strcmp(cp->topic, res->topic) == 0) {
            return &req->parts[i];
        }
    }
    return NULL;
}

static void consumer_fetch_reply(struct weir_consumer *k,
                                 const struct cons_req *req,
                                 const struct conn_reply *r,
                                 uint64_t now)
{
    const Weir__FetchResponse *f = r->resp->fetch;
    struct weir_slice data;
    size_t pos = 0;
    size_t i;

    for (i = 0; i < f->n_partitions; i++) {
        const Weir__FetchPartitionResult *res = f->partitions[i];
        const struct cons_req_part *e = consumer_find_entry(req, res);
        data.p = r->payload.p + pos;
        data.len = res->payload_bytes;
        pos += res->payload_bytes; /* rpc_response_decode checked the sum */
        if (e == NULL || e->part->epoch != e->epoch ||
            e->part->state != CONS_FETCHABLE || !e->part->assigned) {
            continue;
        }
        consumer_fetch_result(k, e, res, data, now);
    }
}

static void consumer_on_fetch(void *arg, struct conn_reply *r)
{
    struct cons_req *req = arg;
    struct weir_consumer *k = req->k;
    uint64_t now;
    size_t i;

    if (k == NULL) {
        cons_req_free(req);
        return;
    }
    cons_req_unlink(k, req);
    now = client_now_ms(k->c);
    for (i = 0; i < req->n; i++) {
        req->parts[i].part->fetch_inflight = false;
    }
    if (k->cfg.on_fetch != NULL) {
        k->cfg.on_fetch(k->cfg.cb_arg, clock_mono_us() - req->sent_us,
                        r->payload.len);
    }
    if (r->err == 0 && r->resp->body_case == WEIR__RESPONSE__BODY_FETCH) {
        consumer_fetch_reply(k, req, r, now);
    } else {
        for (i = 0; i < req->n; i++) {
            struct cons_part *cp = req->parts[i].part;
            if (cp->epoch == req->parts[i].epoch) {
                consumer_part_error(k, cp,
                                    r->err != 0 ? r->err : WEIR_EMALFORMED,
                                    r->err != 0 ? r->err_msg
                                                : "broker answered a fetch "
                                                  "with another response",
                                    now);
            }
        }
    }
    cons_req_free(req);
}

static int consumer_send_offsets(struct weir_consumer *k,
                                 struct conn *c,
                                 struct cons_req *req,
                                 struct err_detail *ed)
{
    Weir__Request r;
    Weir__ListOffsetsRequest lr;
    Weir__ListOffsetsPartition *ps;
    Weir__ListOffsetsPartition **pp;
    size_t i;
    int rv;

    ps = mem_calloc(req->n, sizeof(*ps));
    pp = mem_calloc(req->n, sizeof(*pp));
    if (ps == NULL || pp == NULL) {
        mem_free(ps);
        mem_free(pp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < req->n; i++) {
        const struct cons_part *cp = req->parts[i].part;
        weir__list_offsets_partition__init(&ps[i]);
        ps[i].topic = cp->topic;
        ps[i].partition = cp->partition;
        ps[i].timestamp = cp->start == WEIR_START_EARLIEST
                              ? WEIR_OFFSET_EARLIEST
                          : cp->start == WEIR_START_LATEST ? WEIR_OFFSET_LATEST
                                                           : cp->start_value;
        pp[i] = &ps[i];
    }
    weir__request__init(&r);
    weir__list_offsets_request__init(&lr);
    lr.n_partitions = req->n;
    lr.partitions = pp;
    r.body_case = WEIR__REQUEST__BODY_LIST_OFFSETS;
    r.list_offsets = &lr;
    rv = conn_send(c, &r, NULL, 0, true, k->c->cfg.request_timeout_ms,
                   client_now_ms(k->c), consumer_on_offsets, req, ed);
    mem_free(ps);
    mem_free(pp);
    return rv;
}

static int consumer_send_fetch(struct weir_consumer *k,
                               struct conn *c,
                               struct cons_req *req,
                               struct err_detail *ed)
{
    Weir__Request r;
    Weir__FetchRequest fr;
    Weir__FetchPartition *ps;
    Weir__FetchPartition **pp;
    size_t i;
    int rv;

    ps = mem_calloc(req->n, sizeof(*ps));
    pp = mem_calloc(req->n, sizeof(*pp));
    if (ps == NULL || pp == NULL) {
        mem_free(ps);
        mem_free(pp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < req->n; i++) {
        const struct cons_part *cp = req->parts[i].part;
        weir__fetch_partition__init(&ps[i]);
        ps[i].topic = cp->topic;
        ps[i].partition = cp->partition;
        ps[i].fetch_offset = cp->fetch_offset;
        ps[i].partition_max_bytes = cp->max_bytes;
        ps[i].current_leader_epoch = -1;
        pp[i] = &ps[i];
    }
    weir__request__init(&r);
    weir__fetch_request__init(&fr);
    fr.max_wait_ms = k->cfg.fetch_max_wait_ms;
    fr.min_bytes = k->cfg.fetch_min_bytes;
    fr.max_bytes = k->cfg.fetch_max_bytes;
    fr.replica_id = -1;
    fr.n_partitions = req->n;
    fr.partitions = pp;
    r.body_case = WEIR__REQUEST__BODY_FETCH;
    r.fetch = &fr;
    req->sent_us = clock_mono_us();
    rv = conn_send(c, &r, NULL, 0, true,
                   k->c->cfg.request_timeout_ms + k->cfg.fetch_max_wait_ms,
                   client_now_ms(k->c), consumer_on_fetch, req, ed);
    mem_free(ps);
    mem_free(pp);
    return rv;
}

static void
consumer_send(struct weir_consumer *k, struct cons_build *b, uint64_t now)
{
    struct cons_req *req = b->req;
    struct err_detail ed;
    size_t i;
    int rv;

    rv = req->is_fetch ? consumer_send_fetch(k, b->conn, req, &ed)
                       : consumer_send_offsets(k, b->conn, req, &ed);
    if (rv != 0) {
        for (i = 0; i < req->n; i++) {
            consumer_part_error(k, req->parts[i].part, rv, ed.msg, now);
        }
        cons_req_free(req);
        return;
    }
    for (i = 0; i < req->n; i++) {
        if (req->is_fetch) {
            req->parts[i].part->fetch_inflight = true;
        } else {
            req->parts[i].part->state = CONS_OFFSET_WAIT;
        }
    }
    req->k = k;
    req->next = k->reqs;
    if (k->reqs != NULL) {
        k->reqs->prev = req;
    }
    k->reqs = req;
}

/* Add a partition to the request being built for its leader. */
static void consumer_plan(struct weir_consumer *k,
                          struct cons_part *cp,
                          bool fetch,
                          struct cons_build *builds,
                          size_t *nb,
                          uint64_t now)
{
    struct err_detail ed;
    struct conn *c;
    const char *host;
    uint16_t port;
    size_t i;
    int rv;

    rv = metadata_leader(k->c->md, cp->topic, cp->partition, &host, &port);
    if (rv != 0) {
        consumer_part_error(k, cp, rv,
                            rv == WEIR_ELEADER_NOT_AVAILABLE
                                ? "no leader for the partition"
                                : "the partition is not in the metadata",
                            now);
        return;
    }
    rv = pool_get(k->c->pool, host, port,
                  fetch ? POOL_LANE_FETCH : POOL_LANE_DEFAULT, &c, &ed);
    if (rv != 0) {
        consumer_part_error(k, cp, rv, ed.msg, now);
        return;
    }
    for (i = 0; i < *nb && builds[i].conn != c; i++) {
    }
    if (i == *nb) {
        if (i == CONSUMER_MAX_LEADERS || (fetch && conn_in_flight(c) > 0)) {
            return;
        }
        builds[i].conn = c;
        builds[i].req = mem_calloc(1, sizeof(struct cons_req));
        if (builds[i].req == NULL) {
            return;
        }
        builds[i].req->is_fetch = fetch;
        (*nb)++;
    }
    (void)cons_req_add(builds[i].req, cp);
}

void consumer_pump(struct weir_consumer *k)
{
    struct cons_build builds[CONSUMER_MAX_LEADERS];
    uint64_t now = client_now_ms(k->c);
    uint64_t wake = UINT64_MAX;
    size_t nb = 0;
    size_t i;

    for (i = 0; i < k->n_parts; i++) {
        struct cons_part *cp = k->parts[i];
        if (!cp->assigned || cp->state == CONS_FAILED ||
            cp->state == CONS_OFFSET_WAIT) {
            continue;
        }
        if (now < cp->backoff_until_ms) {
            wake = cp->backoff_until_ms < wake ? cp->backoff_until_ms : wake;
            continue;
        }
        if (cp->state == CONS_NEED_OFFSET) {
            consumer_plan(k, cp, false, builds, &nb, now);
        } else if (!cp->fetch_inflight && !cp->buffered) {
            consumer_plan(k, cp, true, builds, &nb, now);
        }
        if (cp->backoff_until_ms > now && cp->backoff_until_ms < wake) {
            wake = cp->backoff_until_ms;
        }
    }
    for (i = 0; i < nb; i++) {
        consumer_send(k, &builds[i], now);
    }
    k->wake_ms = wake;
}
