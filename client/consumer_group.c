/* SPDX-License-Identifier: Apache-2.0 */
/* A consumer in a group: the adapter between the cgrp core and the
 * consumer. Replies queued by consumer_group_req.c become core events
 * here, stamped with the client's clock; the core's actions (send,
 * revoke, assign, report) are carried out in the order the core lists
 * them. Everything runs inside weir_consumer_poll / commit / close, never
 * inside a connection callback. */
#include <stdio.h>
#include <string.h>

#include "client/consumer_int.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/rpc.h"

#define GROUP_ID_MAX_LEN     255
#define GROUP_MAX_STRATEGIES 3

static int group_check_strategies(const char *list, struct err_detail *ed)
{
    char names[64];
    char *save = NULL;
    char *tok;
    size_t n = 0;

    if (list == NULL || list[0] == '\0' || strlen(list) >= sizeof(names)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "assignment strategies: a comma list of range, "
                       "roundrobin and sticky");
    }
    (void)snprintf(names, sizeof(names), "%s", list);
    for (tok = strtok_r(names, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (asg_kind_from_name(tok) < 0 || ++n > GROUP_MAX_STRATEGIES) {
            return err_set(ed, WEIR_EINVALID_ARGUMENT,
                           "unknown or repeated assignment strategy '%s' "
                           "(range, roundrobin, sticky)",
                           tok);
        }
    }
    return 0;
}

static int group_check_config(const struct weir_consumer_config *cfg,
                              struct err_detail *ed)
{
    size_t len = strlen(cfg->group_id);

    if (len == 0 || len > GROUP_ID_MAX_LEN) {
        return err_set(ed, WEIR_EINVALID_GROUP_ID,
                       "group id must be 1 to %d bytes", GROUP_ID_MAX_LEN);
    }
    if (cfg->session_timeout_ms == 0 || cfg->heartbeat_interval_ms == 0 ||
        cfg->heartbeat_interval_ms > cfg->session_timeout_ms / 3) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "heartbeat interval (%u ms) must be positive and at "
                       "most a third of the session timeout (%u ms)",
                       cfg->heartbeat_interval_ms, cfg->session_timeout_ms);
    }
    if (cfg->rebalance_timeout_ms == 0 ||
        (cfg->auto_commit && cfg->auto_commit_interval_ms == 0)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "rebalance timeout and auto commit interval must be "
                       "positive");
    }
    return group_check_strategies(cfg->strategies, ed);
}

int consumer_group_init(struct weir_consumer *k,
                        const struct weir_consumer_config *cfg,
                        struct err_detail *ed)
{
    struct cons_group *g = &k->grp;
    struct cgrp_config cc;
    int rv;

    memset(g, 0, sizeof(*g));
    g->wake_ms = UINT64_MAX;
    g->generation = -1;
    g->prev_generation = -1;
    if (cfg->group_id == NULL) {
        return 0;
    }
    rv = group_check_config(cfg, ed);
    if (rv != 0) {
        return rv;
    }
    g->group_id = mem_strdup(cfg->group_id);
    g->strategies = mem_strdup(cfg->strategies);
    if (g->group_id == NULL || g->strategies == NULL) {
        mem_free(g->group_id);
        mem_free(g->strategies);
        g->group_id = NULL;
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    memset(&cc, 0, sizeof(cc));
    cc.session_timeout_ms = cfg->session_timeout_ms;
    cc.heartbeat_interval_ms = cfg->heartbeat_interval_ms;
    cc.rebalance_timeout_ms = cfg->rebalance_timeout_ms;
    cc.auto_commit = cfg->auto_commit;
    cc.auto_commit_interval_ms = cfg->auto_commit_interval_ms;
    cc.retry_backoff_ms = cfg->retry_backoff_ms > 0 ? cfg->retry_backoff_ms : 1;
    cc.retry_backoff_max_ms = cc.retry_backoff_ms * 10;
    cgrp_init(&g->core, &cc);
    return 0;
}

static void group_topics_free(struct cons_group *g)
{
    size_t i;

    for (i = 0; i < g->n_topics; i++) {
        mem_free(g->topics[i]);
    }
    mem_free(g->topics);
    g->topics = NULL;
    g->n_topics = 0;
}

void consumer_group_fini(struct weir_consumer *k)
{
    struct cons_group *g = &k->grp;
    struct cgrp_io_req *q;
    size_t i;

    if (g->group_id == NULL) {
        return;
    }
    for (q = g->inflight; q != NULL; q = q->next) {
        q->k = NULL; /* freed by its callback */
    }
    while ((q = g->done_head) != NULL) {
        g->done_head = q->next;
        rpc_response_free(q->resp);
        mem_free(q);
    }
    group_topics_free(g);
    for (i = 0; i < g->n_prev_owned; i++) {
        mem_free((char *)g->prev_owned[i].topic);
    }
    mem_free(g->prev_owned);
    mem_free(g->commit_sent);
    rpc_response_free(g->join);
    rpc_response_free(g->offsets);
    cgrp_fini(&g->core);
    mem_free(g->group_id);
    mem_free(g->strategies);
    memset(g, 0, sizeof(*g));
}

static void group_act(struct weir_consumer *k, const struct cgrp_actions *a)
{
    struct cons_group *g = &k->grp;
    int r;

    if (a->revoke) {
        consumer_group_revoke(k);
    }
    if (a->assign) {
        consumer_group_assign(k);
    }
    for (r = 0; r < CGRP_REQ_COUNT; r++) {
        if (a->send & CGRP_BIT(r)) {
            consumer_group_send(k, (enum cgrp_req)r);
        }
    }
    if (a->err != 0 && g->err == 0) {
        g->err = a->err;
        (void)snprintf(g->err_msg, sizeof(g->err_msg), "group '%s': %s",
                       g->group_id, a->err_msg);
    }
    g->wake_ms = a->next_ms;
}

static int group_step(struct weir_consumer *k, const struct cgrp_event *ev)
{
    struct cgrp_actions a;
    int rv;

    rv = cgrp_step(&k->grp.core, ev, &a);
    if (rv != 0) {
        return rv;
    }
    group_act(k, &a);
    return 0;
}

static const Weir__Response__BodyCase group_bodies[CGRP_REQ_COUNT] = {
    WEIR__RESPONSE__BODY_FIND_COORDINATOR, WEIR__RESPONSE__BODY_JOIN_GROUP,
    WEIR__RESPONSE__BODY_SYNC_GROUP,       WEIR__RESPONSE__BODY_OFFSET_FETCH,
    WEIR__RESPONSE__BODY_HEARTBEAT,        WEIR__RESPONSE__BODY_OFFSET_COMMIT,
    WEIR__RESPONSE__BODY_LEAVE_GROUP,
};

/* The first partition error of a commit that succeeded as a whole. */
static int group_commit_err(const Weir__OffsetCommitResponse *cr,
                            const char **msg)
{
    size_t i;

    if (cr->error_code != 0) {
        *msg = cr->error_message;
        return cr->error_code;
    }
    for (i = 0; i < cr->n_partitions; i++) {
        if (cr->partitions[i]->error_code != 0) {
            *msg = cr->partitions[i]->error_message;
            return cr->partitions[i]->error_code;
        }
    }
    return 0;
}

/* Fill the event's reply fields from the response body. The event
 * borrows from q->resp and from *asg, freed by the caller after the
 * step. */
static void group_reply_event(struct weir_consumer *k,
                              struct cgrp_io_req *q,
                              struct cgrp_event *ev,
                              struct asg_assignment **asg,
                              struct cgrp_tp **tps)
{
    Weir__Response *r = q->resp;
    size_t i;

    ev->reply.err = q->err;
    ev->reply.err_msg = q->err_msg;
    if (q->err != 0 || r == NULL) {
        return;
    }
    if (r->body_case != group_bodies[q->kind]) {
        ev->reply.err = WEIR_EMALFORMED;
        ev->reply.err_msg = "broker answered with another call's response";
        return;
    }
    switch (q->kind) {
    case CGRP_REQ_FIND:
        ev->reply.err = r->find_coordinator->error_code;
        ev->reply.err_msg = r->find_coordinator->error_message;
        /* a TLS client uses the coordinator's TLS listener if it has one
         * beside the plain one */
        if (k->c->tls != NULL && r->find_coordinator->tls_port != 0) {
            ev->reply.host = r->find_coordinator->tls_host;
            ev->reply.port = (uint16_t)r->find_coordinator->tls_port;
        } else {
            ev->reply.host = r->find_coordinator->host;
            ev->reply.port = (uint16_t)r->find_coordinator->port;
        }
        break;
    case CGRP_REQ_JOIN:
        ev->reply.err = r->join_group->error_code;
        ev->reply.err_msg = r->join_group->error_message;
        ev->reply.generation = r->join_group->generation_id;
        ev->reply.member_id = r->join_group->member_id;
        ev->reply.leader_id = r->join_group->leader_id;
        ev->reply.protocol = r->join_group->protocol_name;
        break;
    case CGRP_REQ_SYNC:
        ev->reply.err = r->sync_group->error_code;
        ev->reply.err_msg = r->sync_group->error_message;
        if (ev->reply.err != 0) {
            break;
        }
        if (r->sync_group->assignment.len > 0 &&
            (asg_decode_assignment(r->sync_group->assignment.data,
                                   r->sync_group->assignment.len, asg) != 0 ||
             (*tps = mem_calloc((*asg)->n + 1, sizeof(**tps))) == NULL)) {
            ev->reply.err = WEIR_EMALFORMED;
            ev->reply.err_msg = "cannot decode the assignment";
            break;
        }
        for (i = 0; *asg != NULL && i < (*asg)->n; i++) {
            (*tps)[i].topic = (char *)(*asg)->tps[i].topic;
            (*tps)[i].partition = (*asg)->tps[i].partition;
        }
        ev->reply.tps = *tps;
        ev->reply.n_tps = *asg != NULL ? (*asg)->n : 0;
        break;
    case CGRP_REQ_OFFSETS:
        ev->reply.err = r->offset_fetch->error_code;
        ev->reply.err_msg = r->offset_fetch->error_message;
        break;
    case CGRP_REQ_HEARTBEAT:
        ev->reply.err = r->heartbeat->error_code;
        ev->reply.err_msg = r->heartbeat->error_message;
        break;
    case CGRP_REQ_COMMIT:
        ev->reply.err = group_commit_err(r->offset_commit, &ev->reply.err_msg);
        break;
    case CGRP_REQ_LEAVE:
        ev->reply.err = r->leave_group->error_code;
        ev->reply.err_msg = r->leave_group->error_message;
        break;
    default:
        break;
    }
    (void)k;
}

/* Keep what later actions read: the leader's member list, and the
 * committed offsets for the assignment. */
static void group_keep(struct cons_group *g,
                       struct cgrp_io_req *q,
                       const struct cgrp_event *ev)
{
    if (ev->reply.err != 0) {
        return;
    }
    if (q->kind == CGRP_REQ_JOIN) {
        rpc_response_free(g->join);
        g->join = q->resp;
        q->resp = NULL;
    } else if (q->kind == CGRP_REQ_OFFSETS) {
        rpc_response_free(g->offsets);
        g->offsets = q->resp;
        q->resp = NULL;
    }
}

static int group_step_reply(struct weir_consumer *k, struct cgrp_io_req *q)
{
    struct cons_group *g = &k->grp;
    struct asg_assignment *asg = NULL;
    struct cgrp_tp *tps = NULL;
    struct cgrp_event ev;
    int rv;

    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_REPLY;
    ev.now_ms = client_now_ms(k->c);
    ev.reply.req = q->kind;
    group_reply_event(k, q, &ev, &asg, &tps);
    if (q->kind == CGRP_REQ_COMMIT) {
        g->commits_done++;
        g->commit_err = ev.reply.err;
        if (k->cfg.on_commit != NULL) {
            k->cfg.on_commit(k->cfg.cb_arg, g->commit_sent, g->n_commit_sent,
                             ev.reply.err);
        }
        (void)snprintf(g->commit_msg, sizeof(g->commit_msg), "%s",
                       ev.reply.err_msg != NULL && ev.reply.err_msg[0] != '\0'
                           ? ev.reply.err_msg
                           : weir_err_str(ev.reply.err));
    }
    if (q->kind == CGRP_REQ_FIND && ev.reply.err != 0) {
        metadata_refresh_async(k->c->md);
    }
    /* The join response is kept before the step, which may send SyncGroup
     * at once (the leader reads the members). */
    group_keep(g, q, &ev);
    rv = group_step(k, &ev);
    mem_free(tps);
    asg_assignment_free(asg);
    return rv;
}

#define GROUP_PUMP_ROUNDS 8

int consumer_group_pump(struct weir_consumer *k, struct err_detail *ed)
{
    struct cons_group *g = &k->grp;
    struct cgrp_io_req *q;
    struct cgrp_event ev;
    int round;
    int rv = 0;

    if (g->group_id == NULL) {
        return 0;
    }
    /* a synchronous send (FindCoordinator) queues its reply at once:
     * step it in the same pump rather than after the next wait */
    for (round = 0; rv == 0 && round < GROUP_PUMP_ROUNDS; round++) {
        while (rv == 0 && (q = g->done_head) != NULL) {
            g->done_head = q->next;
            if (g->done_head == NULL) {
                g->done_tail = NULL;
            } else {
                g->done_head->prev = NULL;
            }
            rv = group_step_reply(k, q);
            rpc_response_free(q->resp);
            mem_free(q);
        }
        if (rv == 0) {
            memset(&ev, 0, sizeof(ev));
            ev.type = CGRP_EV_TICK;
            ev.now_ms = client_now_ms(k->c);
            rv = group_step(k, &ev);
        }
        if (g->done_head == NULL) {
            break;
        }
    }
    if (g->done_head != NULL) {
        g->wake_ms = 0; /* more replies: come back without waiting */
    }
    if (rv != 0) {
        return err_set(ed, rv, "group '%s': %s", g->group_id, weir_err_str(rv));
    }
    if (g->err != 0) {
        rv = err_set(ed, g->err, "%s", g->err_msg);
        g->err = 0;
    }
    return rv;
}

int weir_consumer_subscribe(struct weir_consumer *k,
                            const char *const *topics,
                            size_t n,
                            struct err_detail *ed)
{
    struct cons_group *g = &k->grp;
    struct cgrp_event ev;
    char **v;
    size_t i;
    int rv;

    if (g->group_id == NULL || k->manual || n == 0 || g->closed) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       g->group_id == NULL ? "subscribe needs a group id"
                       : k->manual         ? "partitions were assigned by hand"
                       : g->closed         ? "the consumer is closed"
                                   : "subscribe needs at least one topic");
    }
    for (i = 0; i < n; i++) {
        rv = names_topic_check(topics[i], strlen(topics[i]), ed);
        if (rv != 0) {
            return rv;
        }
    }
    v = mem_calloc(n, sizeof(*v));
    for (i = 0; v != NULL && i < n; i++) {
        v[i] = mem_strdup(topics[i]);
        if (v[i] == NULL || metadata_want(k->c->md, topics[i]) == NULL) {
            mem_free(v[i]);
            while (i-- > 0) {
                mem_free(v[i]);
            }
            mem_free(v);
            v = NULL;
        }
    }
    if (v == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    group_topics_free(g);
    g->topics = v;
    g->n_topics = n;
    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_SUBSCRIBE;
    ev.now_ms = client_now_ms(k->c);
    rv = group_step(k, &ev);
    return rv != 0 ? err_set(ed, rv, "out of memory") : 0;
}

/* Poll the pool once and pump the group; used by the waits below. */
static void group_wait_once(struct weir_consumer *k)
{
    struct cons_group *g = &k->grp;
    struct err_detail ed;

    (void)pool_poll(k->c->pool, NULL, 0, 20);
    consumer_pump(k);
    if (consumer_group_pump(k, &ed) != 0 && g->err == 0) {
        /* keep it for the next poll */
        g->err = ed.code;
        (void)snprintf(g->err_msg, sizeof(g->err_msg), "%s", ed.msg);
    }
}

int weir_consumer_commit(struct weir_consumer *k,
                         bool sync,
                         struct err_detail *ed)
{
    struct cons_group *g = &k->grp;
    struct cgrp_event ev;
    uint64_t target = g->commits_sent + 1;
    uint64_t deadline;
    int rv;

    if (g->group_id == NULL || g->closed || pool_in_poll(k->c->pool)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "commit needs an open group consumer, outside "
                       "callbacks");
    }
    if (g->core.state != CGRP_STATE_STABLE) {
        return err_set(ed, WEIR_EREBALANCE_IN_PROGRESS,
                       "group '%s' is rebalancing (%s): nothing to commit",
                       g->group_id, cgrp_state_name(g->core.state));
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_COMMIT;
    ev.now_ms = client_now_ms(k->c);
    rv = group_step(k, &ev);
    if (rv != 0 || !sync) {
        return rv != 0 ? err_set(ed, rv, "out of memory") : 0;
    }
    deadline = client_now_ms(k->c) + k->c->cfg.request_timeout_ms;
    while (g->commits_done < target) {
        if (client_now_ms(k->c) >= deadline || pool_interrupted(k->c->pool) ||
            (g->core.state != CGRP_STATE_STABLE && g->commits_sent < target)) {
            return err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                           "group '%s': commit not answered", g->group_id);
        }
        group_wait_once(k);
    }
    if (g->commit_err != 0) {
        if (g->err == g->commit_err) {
            g->err = 0; /* returned here, not again from poll */
        }
        return err_set(ed, g->commit_err, "group '%s': commit failed: %s",
                       g->group_id, g->commit_msg);
    }
    return 0;
}

int weir_consumer_close(struct weir_consumer *k, struct err_detail *ed)
{
    struct cons_group *g = &k->grp;
    struct cgrp_event ev;
    uint64_t deadline;
    uint64_t commits = g->commits_done;
    int rv;

    if (g->group_id == NULL || g->closed) {
        return 0;
    }
    if (pool_in_poll(k->c->pool)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "close called from inside a callback");
    }
    g->closed = true;
    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_CLOSE;
    ev.now_ms = client_now_ms(k->c);
    rv = group_step(k, &ev);
    if (rv != 0) {
        return err_set(ed, rv, "out of memory");
    }
    deadline = client_now_ms(k->c) + k->c->cfg.request_timeout_ms;
    while (g->core.state != CGRP_STATE_CLOSED &&
           client_now_ms(k->c) < deadline) {
        group_wait_once(k);
        if (pool_interrupted(k->c->pool)) {
            break;
        }
    }
    if (g->commits_done > commits && g->commit_err != 0) {
        return err_set(ed, g->commit_err, "group '%s': final commit: %s",
                       g->group_id, g->commit_msg);
    }
    return 0;
}

int32_t weir_consumer_generation(const struct weir_consumer *k)
{
    return k->grp.generation;
}
