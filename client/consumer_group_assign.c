/* SPDX-License-Identifier: Apache-2.0 */
/* The assignment side of a group consumer: as the leader, run the chosen
 * assignor over the members' subscriptions (client/assignor.h) and send
 * everyone's share in SyncGroup; as any member, turn the core's assign
 * and revoke actions into partitions of the consumer, started at their
 * committed offsets or the reset policy. */
#include <stdio.h>
#include <string.h>

#include "client/consumer_int.h"
#include "common/mem.h"
#include "common/rpc.h"

struct group_plan {
    size_t n;                       /* members */
    struct asg_subscription **subs; /* n, decoded */
    struct asg_member *members;     /* n, views of subs */
    struct asg_topic *topics;       /* existing subscribed topics */
    size_t n_topics;
    struct asg_result *results; /* n */
    bool have_results;
    struct weir_buf *bufs; /* n encoded assignments */
    Weir__MemberAssignment *mas;
    Weir__MemberAssignment **pmas;
};

static void group_plan_free(struct group_plan *p)
{
    size_t i;

    for (i = 0; i < p->n; i++) {
        if (p->subs != NULL) {
            asg_subscription_free(p->subs[i]);
        }
        if (p->bufs != NULL) {
            buf_fini(&p->bufs[i]);
        }
    }
    if (p->have_results) {
        asg_results_free(p->results, p->n);
    }
    mem_free(p->subs);
    mem_free(p->members);
    mem_free(p->topics);
    mem_free(p->results);
    mem_free(p->bufs);
    mem_free(p->mas);
    mem_free(p->pmas);
}

static bool group_plan_has_topic(const struct group_plan *p, const char *t)
{
    size_t i;

    for (i = 0; i < p->n_topics; i++) {
        if (strcmp(p->topics[i].name, t) == 0) {
            return true;
        }
    }
    return false;
}

/* Partition counts of every topic some member subscribes to; topics that
 * do not exist are left out (their subscribers get nothing of them). */
static int group_plan_topics(struct weir_consumer *k, struct group_plan *p)
{
    size_t total = 0;
    size_t i;
    size_t j;
    bool first = true;

    for (i = 0; i < p->n; i++) {
        total += p->members[i].n_topics;
    }
    p->topics = mem_calloc(total + 1, sizeof(*p->topics));
    if (p->topics == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < p->n; i++) {
        for (j = 0; j < p->members[i].n_topics; j++) {
            const char *name = p->members[i].topics[j];
            struct md_topic *t;
            if (group_plan_has_topic(p, name)) {
                continue;
            }
            if (client_topic(k->c, name, first, &t, NULL) != 0) {
                continue;
            }
            first = false;
            p->topics[p->n_topics].name = name;
            p->topics[p->n_topics].partitions = t->n_partitions;
            p->n_topics++;
        }
    }
    return 0;
}

static int group_plan_decode(struct group_plan *p,
                             const Weir__JoinGroupResponse *jr)
{
    size_t i;
    int rv;

    p->n = jr->n_members;
    p->subs = mem_calloc(p->n + 1, sizeof(*p->subs));
    p->members = mem_calloc(p->n + 1, sizeof(*p->members));
    p->results = mem_calloc(p->n + 1, sizeof(*p->results));
    p->bufs = mem_calloc(p->n + 1, sizeof(*p->bufs));
    p->mas = mem_calloc(p->n + 1, sizeof(*p->mas));
    p->pmas = mem_calloc(p->n + 1, sizeof(*p->pmas));
    if (p->subs == NULL || p->members == NULL || p->results == NULL ||
        p->bufs == NULL || p->mas == NULL || p->pmas == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < p->n; i++) {
        const Weir__GroupMemberInfo *m = jr->members[i];
        buf_init(&p->bufs[i]);
        rv = asg_decode_subscription(m->metadata.data, m->metadata.len,
                                     &p->subs[i]);
        if (rv != 0) {
            return rv;
        }
        asg_subscription_member(p->subs[i], m->member_id, &p->members[i]);
    }
    return 0;
}

static int group_plan_run(struct weir_consumer *k,
                          struct group_plan *p,
                          const Weir__JoinGroupResponse *jr)
{
    int kind = asg_kind_from_name(k->grp.core.protocol);
    size_t i;
    int rv;

    if (kind < 0) {
        return WEIR_EINCONSISTENT_GROUP_PROTOCOL;
    }
    rv = group_plan_decode(p, jr);
    if (rv == 0) {
        rv = group_plan_topics(k, p);
    }
    if (rv == 0) {
        rv = asg_assign((enum asg_kind)kind, p->members, p->n, p->topics,
                        p->n_topics, p->results);
        p->have_results = rv == 0;
    }
    for (i = 0; rv == 0 && i < p->n; i++) {
        rv = asg_encode_assignment(p->results[i].tps, p->results[i].n,
                                   &p->bufs[i]);
        weir__member_assignment__init(&p->mas[i]);
        p->mas[i].member_id = jr->members[i]->member_id;
        p->mas[i].assignment.data = p->bufs[i].data;
        p->mas[i].assignment.len = p->bufs[i].len;
        p->pmas[i] = &p->mas[i];
    }
    return rv;
}

void consumer_group_leader_sync(struct weir_consumer *k, struct cgrp_io_req *q)
{
    struct cons_group *g = &k->grp;
    struct group_plan p;
    char msg[300];
    int rv;

    if (g->join == NULL || strcmp(g->core.member_id, g->core.leader_id) != 0) {
        consumer_group_sync(k, NULL, 0, q);
        return;
    }
    memset(&p, 0, sizeof(p));
    rv = group_plan_run(k, &p, g->join->join_group);
    if (rv != 0) {
        (void)snprintf(msg, sizeof(msg),
                       "leader cannot assign partitions with '%s': %s",
                       g->core.protocol, weir_err_str(rv));
        consumer_group_fail(k, q, rv, msg);
    } else {
        consumer_group_sync(k, p.pmas, p.n, q);
    }
    group_plan_free(&p);
}

/* The committed offset of a partition in the last OffsetFetch, or -1. */
static int64_t group_committed(const struct cons_group *g,
                               const char *topic,
                               int32_t partition)
{
    const Weir__OffsetFetchResponse *of;
    size_t i;

    if (g->offsets == NULL ||
        g->offsets->body_case != WEIR__RESPONSE__BODY_OFFSET_FETCH) {
        return -1;
    }
    of = g->offsets->offset_fetch;
    for (i = 0; i < of->n_partitions; i++) {
        const Weir__OffsetFetchPartition *p = of->partitions[i];
        if (p->partition == partition && strcmp(p->topic, topic) == 0) {
            return p->error_code == 0 ? p->offset : -1;
        }
    }
    return -1;
}

static void group_tps_view(const struct cgrp *cg,
                           struct weir_topic_partition *v)
{
    size_t i;

    for (i = 0; i < cg->n_assigned; i++) {
        v[i].topic = cg->assigned[i].topic;
        v[i].partition = cg->assigned[i].partition;
    }
}

static void group_start_part(struct weir_consumer *k, const struct cgrp_tp *tp)
{
    struct weir_assignment a = {tp->topic, tp->partition, k->cfg.reset, 0};
    int64_t committed = group_committed(&k->grp, tp->topic, tp->partition);
    struct cons_part *cp;

    (void)metadata_want(k->c->md, tp->topic);
    cp = consumer_part_get(k, tp->topic, tp->partition);
    if (cp == NULL) {
        k->grp.err = WEIR_ENOMEM;
        (void)snprintf(k->grp.err_msg, sizeof(k->grp.err_msg), "out of memory");
        return;
    }
    if (committed >= 0) {
        a.start = WEIR_START_OFFSET;
        a.value = committed;
    }
    if (a.start == WEIR_START_OFFSET && committed < 0) {
        /* auto offset reset "none": the application decides (seek) */
        a.value = 0;
        consumer_part_start(k, cp, &a);
        cp->position = -1;
        cp->state = CONS_FAILED;
        cp->err = WEIR_EOFFSET_OUT_OF_RANGE;
        cp->err_reported = false;
        (void)snprintf(cp->err_msg, sizeof(cp->err_msg),
                       "group '%s' has no committed offset and the offset "
                       "reset policy is none",
                       k->grp.group_id);
        return;
    }
    consumer_part_start(k, cp, &a);
}

void consumer_group_assign(struct weir_consumer *k)
{
    struct cons_group *g = &k->grp;
    const struct cgrp *cg = &g->core;
    struct weir_topic_partition *v;
    size_t i;

    for (i = 0; i < k->n_parts; i++) {
        k->parts[i]->assigned = false;
        k->parts[i]->epoch++;
    }
    for (i = 0; i < cg->n_assigned; i++) {
        group_start_part(k, &cg->assigned[i]);
    }
    g->generation = cg->generation;
    rpc_response_free(g->offsets);
    g->offsets = NULL;
    if (k->cfg.on_assign == NULL) {
        return;
    }
    v = mem_calloc(cg->n_assigned + 1, sizeof(*v));
    if (v != NULL) {
        group_tps_view(cg, v);
        k->cfg.on_assign(k->cfg.cb_arg, v, cg->n_assigned);
        mem_free(v);
    }
}

/* Remember what was owned, for the sticky assignor's next round. */
static void group_keep_owned(struct cons_group *g)
{
    const struct cgrp *cg = &g->core;
    size_t i;

    for (i = 0; i < g->n_prev_owned; i++) {
        mem_free((char *)g->prev_owned[i].topic);
    }
    mem_free(g->prev_owned);
    g->n_prev_owned = 0;
    g->prev_generation = -1;
    g->prev_owned = mem_calloc(cg->n_assigned + 1, sizeof(*g->prev_owned));
    if (g->prev_owned == NULL) {
        return;
    }
    for (i = 0; i < cg->n_assigned; i++) {
        char *t = mem_strdup(cg->assigned[i].topic);
        if (t == NULL) {
            break;
        }
        g->prev_owned[i].topic = t;
        g->prev_owned[i].partition = cg->assigned[i].partition;
        g->n_prev_owned++;
    }
    g->prev_generation = g->generation;
}

void consumer_group_revoke(struct weir_consumer *k)
{
    struct cons_group *g = &k->grp;
    const struct cgrp *cg = &g->core;
    struct weir_topic_partition *v;
    size_t i;

    if (k->cfg.on_revoke != NULL) {
        v = mem_calloc(cg->n_assigned + 1, sizeof(*v));
        if (v != NULL) {
            group_tps_view(cg, v);
            k->cfg.on_revoke(k->cfg.cb_arg, v, cg->n_assigned);
            mem_free(v);
        }
    }
    group_keep_owned(g);
    for (i = 0; i < k->n_parts; i++) {
        k->parts[i]->assigned = false;
        k->parts[i]->epoch++;
    }
    g->generation = -1;
}
