/* SPDX-License-Identifier: Apache-2.0 */
/* Group requests of a consumer: build what the cgrp core asked for, send
 * it to the coordinator, and queue the reply for consumer_group_pump,
 * which steps it into the core outside pool_poll (so rebalance callbacks
 * never run inside a connection callback). JoinGroup and SyncGroup wait
 * at the coordinator until the whole group arrives, so they go on the
 * fetch lane: a parked join must not hold up the heartbeats, commits and
 * ListOffsets replies queued behind it on the default lane. */
#include <stdio.h>
#include <string.h>

#include "client/consumer_int.h"
#include "common/mem.h"
#include "common/rpc.h"

static void group_req_done(struct weir_consumer *k, struct cgrp_io_req *q)
{
    struct cons_group *g = &k->grp;

    if (q->prev != NULL) {
        q->prev->next = q->next;
    } else {
        g->inflight = q->next;
    }
    if (q->next != NULL) {
        q->next->prev = q->prev;
    }
    q->next = NULL;
    q->prev = g->done_tail;
    if (g->done_tail != NULL) {
        g->done_tail->next = q;
    } else {
        g->done_head = q;
    }
    g->done_tail = q;
}

static void group_on_reply(void *arg, struct conn_reply *r)
{
    struct cgrp_io_req *q = arg;

    if (q->k == NULL) {
        mem_free(q);
        return;
    }
    q->err = r->err;
    if (r->err != 0) {
        (void)snprintf(q->err_msg, sizeof(q->err_msg), "%s", r->err_msg);
    } else {
        q->resp = r->resp;
        r->resp = NULL;
    }
    group_req_done(q->k, q);
}

void consumer_group_fail(struct weir_consumer *k,
                         struct cgrp_io_req *q,
                         int err,
                         const char *msg)
{
    q->err = err;
    (void)snprintf(q->err_msg, sizeof(q->err_msg), "%s", msg);
    group_req_done(k, q);
}

static void group_send(struct weir_consumer *k,
                       struct cgrp_io_req *q,
                       Weir__Request *r,
                       bool long_poll)
{
    struct cons_group *g = &k->grp;
    struct err_detail ed;
    struct conn *c;
    uint32_t timeout = k->c->cfg.request_timeout_ms;
    int rv;

    rv = pool_get(k->c->pool, g->core.coord_host, g->core.coord_port,
                  long_poll ? POOL_LANE_FETCH : POOL_LANE_DEFAULT, &c, &ed);
    if (rv == 0) {
        if (long_poll) {
            timeout += k->cfg.rebalance_timeout_ms;
        }
        rv = conn_send(c, r, NULL, 0, true, timeout, client_now_ms(k->c),
                       group_on_reply, q, &ed);
    }
    if (rv != 0) {
        consumer_group_fail(k, q, rv, ed.msg);
    }
}

/* FindCoordinator goes to any broker: a short synchronous call. */
static void group_find(struct weir_consumer *k, struct cgrp_io_req *q)
{
    Weir__Request r;
    Weir__FindCoordinatorRequest fr;
    Weir__Response *resp = NULL;
    struct err_detail ed;
    int rv;

    weir__find_coordinator_request__init(&fr);
    fr.group = k->grp.group_id;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_FIND_COORDINATOR;
    r.find_coordinator = &fr;
    rv = metadata_call_any(k->c->md, &r, k->c->cfg.request_timeout_ms, &resp,
                           &ed);
    if (rv != 0) {
        consumer_group_fail(k, q, rv, ed.msg);
        return;
    }
    q->resp = resp;
    group_req_done(k, q);
}

static void group_join(struct weir_consumer *k, struct cgrp_io_req *q)
{
    struct cons_group *g = &k->grp;
    Weir__Request r;
    Weir__JoinGroupRequest jr;
    Weir__GroupProtocol protos[3];
    Weir__GroupProtocol *pp[3];
    struct weir_buf meta;
    char names[64];
    char *save = NULL;
    char *tok;
    size_t n = 0;

    buf_init(&meta);
    if (asg_encode_subscription((const char *const *)g->topics, g->n_topics,
                                g->prev_owned, g->n_prev_owned,
                                g->prev_generation, &meta) != 0) {
        buf_fini(&meta);
        consumer_group_fail(k, q, WEIR_ENOMEM,
                            "cannot encode the subscription");
        return;
    }
    (void)snprintf(names, sizeof(names), "%s", g->strategies);
    for (tok = strtok_r(names, ",", &save); tok != NULL && n < 3;
         tok = strtok_r(NULL, ",", &save)) {
        weir__group_protocol__init(&protos[n]);
        protos[n].name = tok;
        protos[n].metadata.data = meta.data;
        protos[n].metadata.len = meta.len;
        pp[n] = &protos[n];
        n++;
    }
    weir__join_group_request__init(&jr);
    jr.group = g->group_id;
    jr.member_id = g->core.member_id;
    jr.session_timeout_ms = k->cfg.session_timeout_ms;
    jr.rebalance_timeout_ms = k->cfg.rebalance_timeout_ms;
    jr.protocol_type = "consumer";
    jr.n_protocols = n;
    jr.protocols = pp;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_JOIN_GROUP;
    r.join_group = &jr;
    group_send(k, q, &r, true);
    buf_fini(&meta);
}

static void group_heartbeat(struct weir_consumer *k, struct cgrp_io_req *q)
{
    Weir__Request r;
    Weir__HeartbeatRequest hr;

    weir__heartbeat_request__init(&hr);
    hr.group = k->grp.group_id;
    hr.generation_id = k->grp.core.generation;
    hr.member_id = k->grp.core.member_id;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_HEARTBEAT;
    r.heartbeat = &hr;
    group_send(k, q, &r, false);
}

static void group_leave(struct weir_consumer *k, struct cgrp_io_req *q)
{
    Weir__Request r;
    Weir__LeaveGroupRequest lr;

    weir__leave_group_request__init(&lr);
    lr.group = k->grp.group_id;
    lr.member_id = k->grp.core.member_id;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_LEAVE_GROUP;
    r.leave_group = &lr;
    group_send(k, q, &r, false);
}

/* The subscription's copy of a topic name (lives as long as the group). */
static const char *group_topic(const struct cons_group *g, const char *topic)
{
    size_t i;

    for (i = 0; i < g->n_topics; i++) {
        if (strcmp(g->topics[i], topic) == 0) {
            return g->topics[i];
        }
    }
    return NULL;
}

/* Keep the offsets of the commit being sent, for on_commit. */
static int group_keep_commit(struct cons_group *g,
                             const Weir__OffsetCommitPartition *ps,
                             size_t n)
{
    struct weir_committed *c = mem_calloc(n + 1, sizeof(*c));
    size_t i;

    if (c == NULL) {
        g->n_commit_sent = 0;
        return WEIR_ENOMEM;
    }
    mem_free(g->commit_sent);
    g->commit_sent = c;
    g->n_commit_sent = 0;
    for (i = 0; i < n; i++) {
        const char *t = group_topic(g, ps[i].topic);
        if (t != NULL) {
            c[g->n_commit_sent].topic = t;
            c[g->n_commit_sent].partition = ps[i].partition;
            c[g->n_commit_sent].offset = ps[i].offset;
            g->n_commit_sent++;
        }
    }
    return 0;
}

/* Commit the position of every owned partition whose position is known. */
static void group_commit(struct weir_consumer *k, struct cgrp_io_req *q)
{
    const struct cgrp *cg = &k->grp.core;
    Weir__Request r;
    Weir__OffsetCommitRequest cr;
    Weir__OffsetCommitPartition *ps;
    Weir__OffsetCommitPartition **pp;
    size_t n = 0;
    size_t i;

    if (k->cfg.before_commit != NULL) {
        k->cfg.before_commit(k->cfg.cb_arg);
    }
    ps = mem_calloc(cg->n_assigned + 1, sizeof(*ps));
    pp = mem_calloc(cg->n_assigned + 1, sizeof(*pp));
    if (ps == NULL || pp == NULL) {
        mem_free(ps);
        mem_free(pp);
        consumer_group_fail(k, q, WEIR_ENOMEM, "out of memory");
        return;
    }
    for (i = 0; i < cg->n_assigned; i++) {
        int64_t pos = weir_consumer_position(k, cg->assigned[i].topic,
                                             cg->assigned[i].partition);
        if (pos < 0) {
            continue;
        }
        weir__offset_commit_partition__init(&ps[n]);
        ps[n].topic = cg->assigned[i].topic;
        ps[n].partition = cg->assigned[i].partition;
        ps[n].offset = pos;
        ps[n].leader_epoch = -1;
        ps[n].metadata = "";
        pp[n] = &ps[n];
        n++;
    }
    if (group_keep_commit(&k->grp, ps, n) != 0) {
        mem_free(ps);
        mem_free(pp);
        consumer_group_fail(k, q, WEIR_ENOMEM, "out of memory");
        return;
    }
    weir__offset_commit_request__init(&cr);
    cr.group = k->grp.group_id;
    cr.generation_id = cg->generation;
    cr.member_id = cg->member_id;
    cr.n_partitions = n;
    cr.partitions = pp;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_OFFSET_COMMIT;
    r.offset_commit = &cr;
    k->grp.commits_sent++;
    group_send(k, q, &r, false);
    mem_free(ps);
    mem_free(pp);
}

/* OffsetFetch of the pending assignment, one TopicPartitions per
 * partition (the coordinator merges; keeps this simple). */
static void group_offsets(struct weir_consumer *k, struct cgrp_io_req *q)
{
    const struct cgrp *cg = &k->grp.core;
    Weir__Request r;
    Weir__OffsetFetchRequest fr;
    Weir__TopicPartitions *ts;
    Weir__TopicPartitions **pt;
    int32_t *parts;
    size_t i;

    if (cg->n_pending == 0) { /* nothing to ask: an empty answer */
        group_req_done(k, q);
        return;
    }
    ts = mem_calloc(cg->n_pending, sizeof(*ts));
    pt = mem_calloc(cg->n_pending, sizeof(*pt));
    parts = mem_calloc(cg->n_pending, sizeof(*parts));
    if (ts == NULL || pt == NULL || parts == NULL) {
        mem_free(ts);
        mem_free(pt);
        mem_free(parts);
        consumer_group_fail(k, q, WEIR_ENOMEM, "out of memory");
        return;
    }
    for (i = 0; i < cg->n_pending; i++) {
        weir__topic_partitions__init(&ts[i]);
        ts[i].topic = cg->pending[i].topic;
        parts[i] = cg->pending[i].partition;
        ts[i].n_partitions = 1;
        ts[i].partitions = &parts[i];
        pt[i] = &ts[i];
    }
    weir__offset_fetch_request__init(&fr);
    fr.group = k->grp.group_id;
    fr.n_topics = cg->n_pending;
    fr.topics = pt;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_OFFSET_FETCH;
    r.offset_fetch = &fr;
    group_send(k, q, &r, false);
    mem_free(ts);
    mem_free(pt);
    mem_free(parts);
}

/* SyncGroup; the leader carries everyone's assignment
 * (consumer_group_assign.c). */
void consumer_group_sync(struct weir_consumer *k,
                         Weir__MemberAssignment **as,
                         size_t n,
                         struct cgrp_io_req *q)
{
    Weir__Request r;
    Weir__SyncGroupRequest sr;

    weir__sync_group_request__init(&sr);
    sr.group = k->grp.group_id;
    sr.generation_id = k->grp.core.generation;
    sr.member_id = k->grp.core.member_id;
    sr.n_assignments = n;
    sr.assignments = as;
    weir__request__init(&r);
    r.body_case = WEIR__REQUEST__BODY_SYNC_GROUP;
    r.sync_group = &sr;
    group_send(k, q, &r, true);
}

void consumer_group_send(struct weir_consumer *k, enum cgrp_req kind)
{
    struct cons_group *g = &k->grp;
    struct cgrp_io_req *q = mem_calloc(1, sizeof(*q));

    if (q == NULL) {
        /* Not sent after all: the next step may try again. */
        g->core.inflight &= ~CGRP_BIT(kind);
        g->err = WEIR_ENOMEM;
        (void)snprintf(g->err_msg, sizeof(g->err_msg), "out of memory");
        return;
    }
    q->k = k;
    q->kind = kind;
    q->next = g->inflight;
    if (g->inflight != NULL) {
        g->inflight->prev = q;
    }
    g->inflight = q;
    switch (kind) {
    case CGRP_REQ_FIND:
        group_find(k, q);
        break;
    case CGRP_REQ_JOIN:
        group_join(k, q);
        break;
    case CGRP_REQ_SYNC:
        consumer_group_leader_sync(k, q);
        break;
    case CGRP_REQ_OFFSETS:
        group_offsets(k, q);
        break;
    case CGRP_REQ_HEARTBEAT:
        group_heartbeat(k, q);
        break;
    case CGRP_REQ_COMMIT:
        group_commit(k, q);
        break;
    case CGRP_REQ_LEAVE:
        group_leave(k, q);
        break;
    default:
        consumer_group_fail(k, q, WEIR_EUNKNOWN, "unknown group request");
        break;
    }
}
