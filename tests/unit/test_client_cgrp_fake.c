/* SPDX-License-Identifier: Apache-2.0 */
/* Fake group coordinator for the client tests; see the header. Plain
 * calloc/free (a test fixture, not product code). */
#include "test_client_cgrp_fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

#define FBG_MAX_GROUPS  16
#define FBG_MAX_MEMBERS 16
#define FBG_MAX_OFFSETS 512

enum fbg_state {
    FBG_EMPTY,
    FBG_PREPARING,
    FBG_COMPLETING,
    FBG_STABLE,
};

static const char *const fbg_state_names[] = {"Empty", "PreparingRebalance",
                                              "CompletingRebalance", "Stable"};

struct fbg_member {
    char id[64];
    char client_id[64];
    char protocol[32]; /* its first choice */
    uint8_t *meta;
    size_t meta_len;
    uint8_t *assignment;
    size_t assignment_len;
    uint32_t session_ms;
    uint32_t rebalance_ms;
    uint64_t last_seen;
    bool joined; /* in this round */
    int join_ci; /* parked JoinGroup's connection, -1 none */
    uint32_t join_corr;
    int sync_ci; /* parked SyncGroup's connection, -1 none */
    uint32_t sync_corr;
};

struct fbg_offset {
    char topic[256];
    int32_t partition;
    int64_t offset;
};

struct fbg_group {
    bool used;
    char name[256];
    enum fbg_state state;
    int32_t generation;
    char leader[64];
    char protocol[32];
    uint64_t deadline; /* PREPARING: when the round closes */
    struct fbg_member m[FBG_MAX_MEMBERS];
    int n;
    struct fbg_offset off[FBG_MAX_OFFSETS];
    int n_off;
};

struct fbg {
    char host[64];
    uint16_t port;
    int next_member;
    struct fbg_group groups[FBG_MAX_GROUPS];
};

struct fbg *fbg_new(const char *host, uint16_t port)
{
    struct fbg *g = calloc(1, sizeof(*g));

    if (g != NULL) {
        (void)snprintf(g->host, sizeof(g->host), "%s", host);
        g->port = port;
    }
    return g;
}

static void fbg_member_free(struct fbg_member *m)
{
    free(m->meta);
    free(m->assignment);
    memset(m, 0, sizeof(*m));
}

void fbg_free(struct fbg *g)
{
    int i;
    int j;

    if (g == NULL) {
        return;
    }
    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        for (j = 0; j < g->groups[i].n; j++) {
            fbg_member_free(&g->groups[i].m[j]);
        }
    }
    free(g);
}

static struct fbg_group *fbg_group(struct fbg *g, const char *name, bool make)
{
    int i;

    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        if (g->groups[i].used && strcmp(g->groups[i].name, name) == 0) {
            return &g->groups[i];
        }
    }
    if (!make) {
        return NULL;
    }
    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        if (!g->groups[i].used) {
            memset(&g->groups[i], 0, sizeof(g->groups[i]));
            g->groups[i].used = true;
            (void)snprintf(g->groups[i].name, sizeof(g->groups[i].name), "%s",
                           name);
            return &g->groups[i];
        }
    }
    return NULL;
}

static struct fbg_member *fbg_member(struct fbg_group *gr, const char *id)
{
    int i;

    for (i = 0; i < gr->n; i++) {
        if (strcmp(gr->m[i].id, id) == 0) {
            return &gr->m[i];
        }
    }
    return NULL;
}

static void fbg_reply(fbg_send_fn *fn,
                      void *ctx,
                      int ci,
                      uint32_t corr,
                      Weir__Response *r,
                      bool parked)
{
    r->correlation_id = corr;
    fn(ctx, ci, r, parked);
}

static void fbg_answer_join(struct fbg_group *gr,
                            struct fbg_member *m,
                            int err,
                            fbg_send_fn *fn,
                            void *ctx)
{
    Weir__Response r;
    Weir__JoinGroupResponse jr;
    Weir__GroupMemberInfo infos[FBG_MAX_MEMBERS];
    Weir__GroupMemberInfo *pi[FBG_MAX_MEMBERS];
    int i;

    weir__join_group_response__init(&jr);
    jr.error_code = err;
    jr.generation_id = gr->generation;
    jr.protocol_name = gr->protocol;
    jr.leader_id = gr->leader;
    jr.member_id = m->id;
    if (err == 0 && strcmp(m->id, gr->leader) == 0) {
        for (i = 0; i < gr->n; i++) {
            weir__group_member_info__init(&infos[i]);
            infos[i].member_id = gr->m[i].id;
            infos[i].client_id = gr->m[i].client_id;
            infos[i].client_host = "127.0.0.1";
            infos[i].metadata.data = gr->m[i].meta;
            infos[i].metadata.len = gr->m[i].meta_len;
            pi[i] = &infos[i];
        }
        jr.n_members = (size_t)gr->n;
        jr.members = pi;
    }
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_JOIN_GROUP;
    r.join_group = &jr;
    fbg_reply(fn, ctx, m->join_ci, m->join_corr, &r, true);
    m->join_ci = -1;
}

static void
fbg_answer_sync(struct fbg_member *m, int err, fbg_send_fn *fn, void *ctx)
{
    Weir__Response r;
    Weir__SyncGroupResponse sr;

    weir__sync_group_response__init(&sr);
    sr.error_code = err;
    if (err == 0) {
        sr.assignment.data = m->assignment;
        sr.assignment.len = m->assignment_len;
    }
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_SYNC_GROUP;
    r.sync_group = &sr;
    fbg_reply(fn, ctx, m->sync_ci, m->sync_corr, &r, true);
    m->sync_ci = -1;
}

static void fbg_remove(struct fbg_group *gr, int i)
{
    fbg_member_free(&gr->m[i]);
    memmove(&gr->m[i], &gr->m[i + 1],
            (size_t)(gr->n - i - 1) * sizeof(gr->m[0]));
    gr->n--;
    memset(&gr->m[gr->n], 0, sizeof(gr->m[0]));
}

/* Start a rebalance: parked syncs learn of it at once. */
static void
fbg_prepare(struct fbg_group *gr, uint64_t now, fbg_send_fn *fn, void *ctx)
{
    uint32_t wait = 0;
    int i;

    if (gr->state == FBG_PREPARING) {
        return;
    }
    for (i = 0; i < gr->n; i++) {
        if (gr->m[i].sync_ci >= 0) {
            fbg_answer_sync(&gr->m[i], WEIR_EREBALANCE_IN_PROGRESS, fn, ctx);
        }
        gr->m[i].joined = false;
        if (gr->m[i].rebalance_ms > wait) {
            wait = gr->m[i].rebalance_ms;
        }
    }
    gr->state = gr->n > 0 ? FBG_PREPARING : FBG_EMPTY;
    gr->deadline = now + wait;
}

/* Close the join round: evict who did not join, bump the generation,
 * answer every join. */
static void fbg_complete_join(struct fbg_group *gr, fbg_send_fn *fn, void *ctx)
{
    int i;

    for (i = gr->n - 1; i >= 0; i--) {
        if (!gr->m[i].joined) {
            fbg_remove(gr, i);
        }
    }
    if (gr->n == 0) {
        gr->state = FBG_EMPTY;
        return;
    }
    gr->generation++;
    if (fbg_member(gr, gr->leader) == NULL) {
        (void)snprintf(gr->leader, sizeof(gr->leader), "%s", gr->m[0].id);
    }
    (void)snprintf(gr->protocol, sizeof(gr->protocol), "%s", gr->m[0].protocol);
    gr->state = FBG_COMPLETING;
    for (i = 0; i < gr->n; i++) {
        free(gr->m[i].assignment);
        gr->m[i].assignment = NULL;
        gr->m[i].assignment_len = 0;
        if (gr->m[i].join_ci >= 0) {
            fbg_answer_join(gr, &gr->m[i], 0, fn, ctx);
        }
    }
}

static void
fbg_group_tick(struct fbg_group *gr, uint64_t now, fbg_send_fn *fn, void *ctx)
{
    bool all = true;
    int i;

    for (i = gr->n - 1; i >= 0; i--) {
        struct fbg_member *m = &gr->m[i];
        if (m->join_ci < 0 && m->sync_ci < 0 &&
            now > m->last_seen + m->session_ms) {
            fbg_remove(gr, i);
            fbg_prepare(gr, now, fn, ctx);
        }
    }
    if (gr->state != FBG_PREPARING) {
        return;
    }
    for (i = 0; i < gr->n; i++) {
        all = all && gr->m[i].joined;
    }
    if (all || now >= gr->deadline) {
        fbg_complete_join(gr, fn, ctx);
    }
}

void fbg_tick(struct fbg *g, uint64_t now, fbg_send_fn *fn, void *ctx)
{
    int i;

    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        if (g->groups[i].used) {
            fbg_group_tick(&g->groups[i], now, fn, ctx);
        }
    }
}

void fbg_conn_closed(struct fbg *g, int ci)
{
    int i;
    int j;

    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        for (j = 0; j < g->groups[i].n; j++) {
            struct fbg_member *m = &g->groups[i].m[j];
            if (m->join_ci == ci) {
                m->join_ci = -1;
            }
            if (m->sync_ci == ci) {
                m->sync_ci = -1;
            }
        }
    }
}

static void fbg_simple(fbg_send_fn *fn,
                       void *ctx,
                       int ci,
                       const Weir__Request *q,
                       Weir__Response *r)
{
    fbg_reply(fn, ctx, ci, q->correlation_id, r, false);
}

static void fbg_find(
    struct fbg *g, int ci, const Weir__Request *q, fbg_send_fn *fn, void *ctx)
{
    Weir__Response r;
    Weir__FindCoordinatorResponse fr;

    weir__find_coordinator_response__init(&fr);
    fr.node_id = 1;
    fr.host = g->host;
    fr.port = g->port;
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_FIND_COORDINATOR;
    r.find_coordinator = &fr;
    fbg_simple(fn, ctx, ci, q, &r);
}

/* Returns false when parked. */
static bool fbg_join(struct fbg *g,
                     int ci,
                     const Weir__Request *q,
                     uint64_t now,
                     fbg_send_fn *fn,
                     void *ctx)
{
    const Weir__JoinGroupRequest *jq = q->join_group;
    struct fbg_group *gr = fbg_group(g, jq->group, true);
    struct fbg_member tmp;
    struct fbg_member *m;

    memset(&tmp, 0, sizeof(tmp));
    tmp.join_ci = ci;
    tmp.join_corr = q->correlation_id;
    tmp.sync_ci = -1;
    m = gr != NULL ? fbg_member(gr, jq->member_id) : NULL;
    if (gr == NULL || jq->n_protocols == 0 ||
        (jq->member_id[0] != '\0' && m == NULL) ||
        (m == NULL && gr->n == FBG_MAX_MEMBERS)) {
        struct fbg_group none;
        memset(&none, 0, sizeof(none));
        (void)snprintf(tmp.id, sizeof(tmp.id), "%s", jq->member_id);
        fbg_answer_join(&none, &tmp,
                        jq->n_protocols == 0 ? WEIR_EINCONSISTENT_GROUP_PROTOCOL
                                             : WEIR_EUNKNOWN_MEMBER_ID,
                        fn, ctx);
        return true;
    }
    if (m == NULL) {
        m = &gr->m[gr->n++];
        memset(m, 0, sizeof(*m));
        (void)snprintf(m->id, sizeof(m->id), "%s-%d",
                       q->client_id[0] != '\0' ? q->client_id : "member",
                       ++g->next_member);
        (void)snprintf(m->client_id, sizeof(m->client_id), "%s", q->client_id);
        m->sync_ci = -1;
    }
    free(m->meta);
    m->meta_len = jq->protocols[0]->metadata.len;
    m->meta = malloc(m->meta_len + 1);
    memcpy(m->meta, jq->protocols[0]->metadata.data, m->meta_len);
    (void)snprintf(m->protocol, sizeof(m->protocol), "%s",
                   jq->protocols[0]->name);
    m->session_ms = jq->session_timeout_ms;
    m->rebalance_ms = jq->rebalance_timeout_ms;
    m->last_seen = now;
    m->join_ci = ci;
    m->join_corr = q->correlation_id;
    fbg_prepare(gr, now, fn, ctx);
    m->joined = true;
    fbg_group_tick(gr, now, fn, ctx);
    return false;
}

static int fbg_check_member(struct fbg_group *gr,
                            const char *id,
                            int32_t gen,
                            uint64_t now,
                            struct fbg_member **out)
{
    struct fbg_member *m = gr != NULL ? fbg_member(gr, id) : NULL;

    *out = m;
    if (m == NULL) {
        return WEIR_EUNKNOWN_MEMBER_ID;
    }
    m->last_seen = now;
    if (gen != gr->generation) {
        return WEIR_EILLEGAL_GENERATION;
    }
    return 0;
}

static bool fbg_sync(struct fbg *g,
                     int ci,
                     const Weir__Request *q,
                     uint64_t now,
                     fbg_send_fn *fn,
                     void *ctx)
{
    const Weir__SyncGroupRequest *sq = q->sync_group;
    struct fbg_group *gr = fbg_group(g, sq->group, false);
    struct fbg_member *m;
    struct fbg_member tmp;
    size_t i;
    int err;
    int j;

    err = fbg_check_member(gr, sq->member_id, sq->generation_id, now, &m);
    if (err == 0 && gr->state == FBG_PREPARING) {
        err = WEIR_EREBALANCE_IN_PROGRESS;
    }
    if (err != 0) {
        memset(&tmp, 0, sizeof(tmp));
        tmp.sync_ci = ci;
        tmp.sync_corr = q->correlation_id;
        fbg_answer_sync(&tmp, err, fn, ctx);
        return true;
    }
    m->sync_ci = ci;
    m->sync_corr = q->correlation_id;
    if (gr->state == FBG_COMPLETING && strcmp(m->id, gr->leader) == 0) {
        for (i = 0; i < sq->n_assignments; i++) {
            struct fbg_member *t =
                fbg_member(gr, sq->assignments[i]->member_id);
            if (t == NULL) {
                continue;
            }
            free(t->assignment);
            t->assignment_len = sq->assignments[i]->assignment.len;
            t->assignment = malloc(t->assignment_len + 1);
            memcpy(t->assignment, sq->assignments[i]->assignment.data,
                   t->assignment_len);
        }
        gr->state = FBG_STABLE;
    }
    if (gr->state == FBG_STABLE) {
        for (j = 0; j < gr->n; j++) {
            if (gr->m[j].sync_ci >= 0) {
                fbg_answer_sync(&gr->m[j], 0, fn, ctx);
            }
        }
    }
    return false;
}

static void fbg_heartbeat(struct fbg *g,
                          int ci,
                          const Weir__Request *q,
                          uint64_t now,
                          fbg_send_fn *fn,
                          void *ctx)
{
    const Weir__HeartbeatRequest *hq = q->heartbeat;
    struct fbg_group *gr = fbg_group(g, hq->group, false);
    struct fbg_member *m;
    Weir__Response r;
    Weir__HeartbeatResponse hr;

    weir__heartbeat_response__init(&hr);
    hr.error_code =
        fbg_check_member(gr, hq->member_id, hq->generation_id, now, &m);
    if (hr.error_code == 0 && gr->state == FBG_PREPARING) {
        hr.error_code = WEIR_EREBALANCE_IN_PROGRESS;
    }
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_HEARTBEAT;
    r.heartbeat = &hr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static void fbg_leave(struct fbg *g,
                      int ci,
                      const Weir__Request *q,
                      uint64_t now,
                      fbg_send_fn *fn,
                      void *ctx)
{
    const Weir__LeaveGroupRequest *lq = q->leave_group;
    struct fbg_group *gr = fbg_group(g, lq->group, false);
    Weir__Response r;
    Weir__LeaveGroupResponse lr;
    int i;

    weir__leave_group_response__init(&lr);
    lr.error_code = WEIR_EUNKNOWN_MEMBER_ID;
    for (i = 0; gr != NULL && i < gr->n; i++) {
        if (strcmp(gr->m[i].id, lq->member_id) == 0) {
            fbg_remove(gr, i);
            lr.error_code = 0;
            gr->state = FBG_STABLE; /* so that prepare starts a round */
            fbg_prepare(gr, now, fn, ctx);
            break;
        }
    }
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_LEAVE_GROUP;
    r.leave_group = &lr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static struct fbg_offset *fbg_offset(struct fbg_group *gr,
                                     const char *topic,
                                     int32_t partition,
                                     bool make)
{
    int i;

    for (i = 0; i < gr->n_off; i++) {
        if (gr->off[i].partition == partition &&
            strcmp(gr->off[i].topic, topic) == 0) {
            return &gr->off[i];
        }
    }
    if (!make || gr->n_off == FBG_MAX_OFFSETS) {
        return NULL;
    }
    i = gr->n_off++;
    (void)snprintf(gr->off[i].topic, sizeof(gr->off[i].topic), "%s", topic);
    gr->off[i].partition = partition;
    return &gr->off[i];
}

static void fbg_commit(struct fbg *g,
                       int ci,
                       const Weir__Request *q,
                       uint64_t now,
                       fbg_send_fn *fn,
                       void *ctx)
{
    const Weir__OffsetCommitRequest *cq = q->offset_commit;
    struct fbg_group *gr = fbg_group(g, cq->group, true);
    struct fbg_member *m;
    Weir__Response r;
    Weir__OffsetCommitResponse cr;
    size_t i;

    weir__offset_commit_response__init(&cr);
    if (gr == NULL) {
        cr.error_code = WEIR_ECOORDINATOR_NOT_AVAILABLE;
    } else if (cq->generation_id == -1 && cq->member_id[0] == '\0') {
        cr.error_code = gr->n > 0 ? WEIR_ENON_EMPTY_GROUP : 0;
    } else {
        cr.error_code =
            fbg_check_member(gr, cq->member_id, cq->generation_id, now, &m);
    }
    for (i = 0; cr.error_code == 0 && i < cq->n_partitions; i++) {
        struct fbg_offset *o = fbg_offset(gr, cq->partitions[i]->topic,
                                          cq->partitions[i]->partition, true);
        if (o != NULL) {
            o->offset = cq->partitions[i]->offset;
        }
    }
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_OFFSET_COMMIT;
    r.offset_commit = &cr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static void fbg_offset_fetch(
    struct fbg *g, int ci, const Weir__Request *q, fbg_send_fn *fn, void *ctx)
{
    const Weir__OffsetFetchRequest *fq = q->offset_fetch;
    struct fbg_group *gr = fbg_group(g, fq->group, false);
    Weir__OffsetFetchPartition ps[FBG_MAX_OFFSETS];
    Weir__OffsetFetchPartition *pp[FBG_MAX_OFFSETS];
    Weir__Response r;
    Weir__OffsetFetchResponse fr;
    size_t n = 0;
    size_t i;
    size_t j;
    int k;

    for (i = 0; i < fq->n_topics; i++) {
        for (j = 0; j < fq->topics[i]->n_partitions && n < FBG_MAX_OFFSETS;
             j++) {
            const struct fbg_offset *o =
                gr != NULL ? fbg_offset(gr, fq->topics[i]->topic,
                                        fq->topics[i]->partitions[j], false)
                           : NULL;
            weir__offset_fetch_partition__init(&ps[n]);
            ps[n].topic = fq->topics[i]->topic;
            ps[n].partition = fq->topics[i]->partitions[j];
            ps[n].offset = o != NULL ? o->offset : -1;
            ps[n].leader_epoch = -1;
            pp[n] = &ps[n];
            n++;
        }
    }
    for (k = 0; fq->n_topics == 0 && gr != NULL && k < gr->n_off; k++) {
        weir__offset_fetch_partition__init(&ps[n]);
        ps[n].topic = gr->off[k].topic;
        ps[n].partition = gr->off[k].partition;
        ps[n].offset = gr->off[k].offset;
        ps[n].leader_epoch = -1;
        pp[n] = &ps[n];
        n++;
    }
    weir__offset_fetch_response__init(&fr);
    fr.n_partitions = n;
    fr.partitions = pp;
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_OFFSET_FETCH;
    r.offset_fetch = &fr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static void fbg_list(
    struct fbg *g, int ci, const Weir__Request *q, fbg_send_fn *fn, void *ctx)
{
    Weir__GroupListing ls[FBG_MAX_GROUPS];
    Weir__GroupListing *pl[FBG_MAX_GROUPS];
    Weir__Response r;
    Weir__ListGroupsResponse lr;
    size_t n = 0;
    int i;

    for (i = 0; i < FBG_MAX_GROUPS; i++) {
        if (!g->groups[i].used) {
            continue;
        }
        weir__group_listing__init(&ls[n]);
        ls[n].group = g->groups[i].name;
        ls[n].state = (char *)fbg_state_names[g->groups[i].state];
        ls[n].protocol_type = "consumer";
        pl[n] = &ls[n];
        n++;
    }
    weir__list_groups_response__init(&lr);
    lr.n_groups = n;
    lr.groups = pl;
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_LIST_GROUPS;
    r.list_groups = &lr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static void fbg_describe_one(struct fbg *g,
                             const char *name,
                             Weir__GroupDescription *d,
                             Weir__GroupMemberInfo *infos,
                             Weir__GroupMemberInfo **pi)
{
    struct fbg_group *gr = fbg_group(g, name, false);
    int i;

    weir__group_description__init(d);
    d->group = (char *)name;
    if (gr == NULL) {
        d->error_code = WEIR_EGROUP_NOT_FOUND;
        return;
    }
    d->state = (char *)fbg_state_names[gr->state];
    d->protocol_type = "consumer";
    d->protocol = gr->protocol;
    d->generation_id = gr->generation;
    d->leader_id = gr->leader;
    for (i = 0; i < gr->n; i++) {
        weir__group_member_info__init(&infos[i]);
        infos[i].member_id = gr->m[i].id;
        infos[i].client_id = gr->m[i].client_id;
        infos[i].client_host = "127.0.0.1";
        infos[i].metadata.data = gr->m[i].meta;
        infos[i].metadata.len = gr->m[i].meta_len;
        infos[i].assignment.data = gr->m[i].assignment;
        infos[i].assignment.len = gr->m[i].assignment_len;
        pi[i] = &infos[i];
    }
    d->n_members = (size_t)gr->n;
    d->members = pi;
}

static void fbg_describe(
    struct fbg *g, int ci, const Weir__Request *q, fbg_send_fn *fn, void *ctx)
{
    const Weir__DescribeGroupsRequest *dq = q->describe_groups;
    size_t n = dq->n_groups < 4 ? dq->n_groups : 4;
    Weir__GroupDescription ds[4];
    Weir__GroupDescription *pd[4];
    Weir__GroupMemberInfo infos[4][FBG_MAX_MEMBERS];
    Weir__GroupMemberInfo *pi[4][FBG_MAX_MEMBERS];
    Weir__Response r;
    Weir__DescribeGroupsResponse dr;
    size_t i;

    for (i = 0; i < n; i++) {
        fbg_describe_one(g, dq->groups[i], &ds[i], infos[i], pi[i]);
        pd[i] = &ds[i];
    }
    weir__describe_groups_response__init(&dr);
    dr.n_groups = n;
    dr.groups = pd;
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_DESCRIBE_GROUPS;
    r.describe_groups = &dr;
    fbg_simple(fn, ctx, ci, q, &r);
}

static void fbg_delete(
    struct fbg *g, int ci, const Weir__Request *q, fbg_send_fn *fn, void *ctx)
{
    const Weir__DeleteGroupsRequest *dq = q->delete_groups;
    size_t n = dq->n_groups < 16 ? dq->n_groups : 16;
    Weir__GroupResult rs[16];
    Weir__GroupResult *pr[16];
    Weir__Response r;
    Weir__DeleteGroupsResponse dr;
    size_t i;

    for (i = 0; i < n; i++) {
        struct fbg_group *gr = fbg_group(g, dq->groups[i], false);
        weir__group_result__init(&rs[i]);
        rs[i].group = dq->groups[i];
        if (gr == NULL) {
            rs[i].error_code = WEIR_EGROUP_NOT_FOUND;
        } else if (gr->n > 0) {
            rs[i].error_code = WEIR_ENON_EMPTY_GROUP;
        } else {
            gr->used = false;
        }
        pr[i] = &rs[i];
    }
    weir__delete_groups_response__init(&dr);
    dr.n_groups = n;
    dr.groups = pr;
    weir__response__init(&r);
    r.body_case = WEIR__RESPONSE__BODY_DELETE_GROUPS;
    r.delete_groups = &dr;
    fbg_simple(fn, ctx, ci, q, &r);
}

bool fbg_handle(struct fbg *g,
                int ci,
                const Weir__Request *q,
                uint64_t now,
                fbg_send_fn *fn,
                void *ctx)
{
    switch (q->body_case) {
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
        fbg_find(g, ci, q, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_JOIN_GROUP:
        return fbg_join(g, ci, q, now, fn, ctx);
    case WEIR__REQUEST__BODY_SYNC_GROUP:
        return fbg_sync(g, ci, q, now, fn, ctx);
    case WEIR__REQUEST__BODY_HEARTBEAT:
        fbg_heartbeat(g, ci, q, now, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
        fbg_leave(g, ci, q, now, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
        fbg_commit(g, ci, q, now, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
        fbg_offset_fetch(g, ci, q, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_LIST_GROUPS:
        fbg_list(g, ci, q, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
        fbg_describe(g, ci, q, fn, ctx);
        return true;
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        fbg_delete(g, ci, q, fn, ctx);
        return true;
    default:
        return true;
    }
}

int64_t fbg_committed(struct fbg *g,
                      const char *group,
                      const char *topic,
                      int32_t partition)
{
    struct fbg_group *gr = fbg_group(g, group, false);
    const struct fbg_offset *o =
        gr != NULL ? fbg_offset(gr, topic, partition, false) : NULL;

    return o != NULL ? o->offset : -1;
}

int32_t fbg_generation(struct fbg *g, const char *group)
{
    struct fbg_group *gr = fbg_group(g, group, false);

    return gr != NULL ? gr->generation : -1;
}
