/* SPDX-License-Identifier: Apache-2.0 */
/* Group coordinator request handlers: FindCoordinator on any broker, the
 * membership calls through the group's core, OffsetCommit through a write
 * to the offsets partition, OffsetFetch / ListGroups / DescribeGroups from
 * memory, DeleteGroups with tombstones. */
#include <stdio.h>
#include <string.h>

#include "broker/cluster/cluster.h"
#include "broker/group/group_io_int.h"
#include "broker/group/group_records.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

static void
gio_respond(struct srv_req *req, uint32_t corr, Weir__Response *resp)
{
    resp->correlation_id = corr;
    broker_respond(req, resp, NULL, false);
}

/* ---- answers ---------------------------------------------------------------
 */

void gio_answer_join(struct srv_req *req,
                     uint32_t correlation_id,
                     const struct group_answer *a,
                     int err,
                     const char *msg)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__JoinGroupResponse body = WEIR__JOIN_GROUP_RESPONSE__INIT;
    Weir__GroupMemberInfo *ms = NULL;
    Weir__GroupMemberInfo **mp = NULL;
    size_t i;

    body.error_code = err;
    body.error_message = (char *)(msg != NULL ? msg : "");
    body.generation_id = -1;
    if (a != NULL && err == 0) {
        body.generation_id = a->generation_id;
        body.protocol_name = (char *)a->protocol;
        body.leader_id = (char *)a->leader_id;
        body.member_id = (char *)a->member_id;
        if (a->n_members > 0) {
            ms = mem_calloc(a->n_members, sizeof(*ms));
            mp = mem_calloc(a->n_members, sizeof(*mp));
            if (ms == NULL || mp == NULL) {
                body.error_code = WEIR_ENOMEM;
                body.error_message = "out of memory";
            }
        }
        for (i = 0; ms != NULL && mp != NULL && i < a->n_members; i++) {
            weir__group_member_info__init(&ms[i]);
            ms[i].member_id = (char *)a->members[i].member_id;
            ms[i].client_id = (char *)a->members[i].client_id;
            ms[i].client_host = (char *)a->members[i].client_host;
            ms[i].metadata.data = (uint8_t *)a->members[i].metadata.p;
            ms[i].metadata.len = a->members[i].metadata.len;
            mp[i] = &ms[i];
        }
        if (body.error_code == 0) {
            body.members = mp;
            body.n_members = a->n_members;
        }
    } else if (a != NULL && a->member_id != NULL) {
        body.member_id = (char *)a->member_id;
    }
    resp.body_case = WEIR__RESPONSE__BODY_JOIN_GROUP;
    resp.join_group = &body;
    gio_respond(req, correlation_id, &resp);
    mem_free(ms);
    mem_free(mp);
}

void gio_answer_sync(struct srv_req *req,
                     uint32_t correlation_id,
                     const struct group_answer *a,
                     int err,
                     const char *msg)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__SyncGroupResponse body = WEIR__SYNC_GROUP_RESPONSE__INIT;

    body.error_code = err;
    body.error_message = (char *)(msg != NULL ? msg : "");
    if (a != NULL && err == 0) {
        body.assignment.data = (uint8_t *)a->assignment.p;
        body.assignment.len = a->assignment.len;
    }
    resp.body_case = WEIR__RESPONSE__BODY_SYNC_GROUP;
    resp.sync_group = &body;
    gio_respond(req, correlation_id, &resp);
}

static void gio_answer_simple(struct srv_req *req,
                              const Weir__Request *r,
                              int err,
                              const char *msg)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__HeartbeatResponse hb = WEIR__HEARTBEAT_RESPONSE__INIT;
    Weir__LeaveGroupResponse lv = WEIR__LEAVE_GROUP_RESPONSE__INIT;

    if (r->body_case == WEIR__REQUEST__BODY_HEARTBEAT) {
        hb.error_code = err;
        hb.error_message = (char *)msg;
        resp.body_case = WEIR__RESPONSE__BODY_HEARTBEAT;
        resp.heartbeat = &hb;
    } else {
        lv.error_code = err;
        lv.error_message = (char *)msg;
        resp.body_case = WEIR__RESPONSE__BODY_LEAVE_GROUP;
        resp.leave_group = &lv;
    }
    gio_respond(req, r->correlation_id, &resp);
}

void gio_answer_commit(struct gio_write *w, int err, const char *msg)
{
    const Weir__OffsetCommitRequest *c = w->r->offset_commit;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__OffsetCommitResponse body = WEIR__OFFSET_COMMIT_RESPONSE__INIT;
    Weir__OffsetCommitPartitionResult *res =
        mem_calloc(c->n_partitions + 1, sizeof(*res));
    Weir__OffsetCommitPartitionResult **rp =
        mem_calloc(c->n_partitions + 1, sizeof(*rp));
    size_t i;

    body.error_code = err;
    body.error_message = (char *)msg;
    if (res != NULL && rp != NULL) {
        for (i = 0; i < c->n_partitions; i++) {
            weir__offset_commit_partition_result__init(&res[i]);
            res[i].topic = c->partitions[i]->topic;
            res[i].partition = c->partitions[i]->partition;
            res[i].error_code = err;
            rp[i] = &res[i];
        }
        body.partitions = rp;
        body.n_partitions = c->n_partitions;
    } else if (err == 0) {
        body.error_code = WEIR_ENOMEM;
        body.error_message = "out of memory";
    }
    resp.body_case = WEIR__RESPONSE__BODY_OFFSET_COMMIT;
    resp.offset_commit = &body;
    gio_respond(w->req, w->correlation_id, &resp);
    mem_free(res);
    mem_free(rp);
}

/* ---- FindCoordinator ------------------------------------------------------
 */

void group_io_find_coordinator(struct group_io *io,
                               struct srv_req *req,
                               Weir__Request *r)
{
    const char *group = r->find_coordinator->group;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__FindCoordinatorResponse body = WEIR__FIND_COORDINATOR_RESPONSE__INIT;
    struct gio_group *g;
    char msg[300] = "";
    int rv;

    body.node_id = -1;
    body.partition = -1;
    body.host = "";
    rv = gio_route(io, group, false, &g, msg, sizeof(msg));
    if (rv == 0 || rv == WEIR_ECOORDINATOR_LOAD_IN_PROGRESS) {
        /* this broker: the client's next call may find it loading */
        rv = 0;
        body.node_id = (int32_t)io->b->cfg.id;
        body.host = io->b->adv_host;
        body.port = io->b->adv_port;
        if (io->b->srv_tls != NULL) {
            body.tls_host = io->b->tls_adv_host;
            body.tls_port = io->b->tls_adv_port;
        }
        body.partition = grec_partition_for(group, io->n_parts);
    } else if (rv == WEIR_ENOT_COORDINATOR && io->b->cluster != NULL) {
        const struct meta_image *img = cluster_image(io->b->cluster);
        const struct meta_topic *t = meta_image_topic_by_name(
            img, GROUP_OFFSETS_TOPIC, strlen(GROUP_OFFSETS_TOPIC));
        int32_t p = grec_partition_for(group, io->n_parts);
        const struct meta_broker *mb = NULL;
        if (t != NULL && (uint32_t)p < t->n_partitions &&
            t->partitions[p].leader >= 0) {
            mb = meta_image_broker(img, t->partitions[p].leader);
        }
        if (mb != NULL && !mb->fenced) {
            rv = 0;
            body.node_id = mb->id;
            body.host = mb->host;
            body.port = mb->port;
            if (mb->tls_port != 0) {
                body.tls_host = mb->tls_host;
                body.tls_port = mb->tls_port;
            }
            body.partition = p;
        } else {
            rv = WEIR_ECOORDINATOR_NOT_AVAILABLE;
            (void)snprintf(msg, sizeof(msg), "%s/%d has no leader now",
                           GROUP_OFFSETS_TOPIC, (int)p);
        }
    }
    body.error_code = rv;
    body.error_message = rv != 0 ? msg : "";
    resp.body_case = WEIR__RESPONSE__BODY_FIND_COORDINATOR;
    resp.find_coordinator = &body;
    gio_respond(req, r->correlation_id, &resp);
    rpc_request_free(r);
}

/* ---- membership -------------------------------------------------------- */

static struct gio_park *gio_park(struct gio_group *g,
                                 enum group_event_type type,
                                 struct srv_req *req,
                                 uint32_t corr)
{
    struct gio_park *k = mem_calloc(1, sizeof(*k));

    if (k == NULL) {
        return NULL;
    }
    k->id = ++g->io->next_request_id;
    k->type = type;
    k->req = req;
    k->correlation_id = corr;
    k->next = g->parked;
    g->parked = k;
    return k;
}

/* The park entry of id if the core has not answered it (refusal). */
static struct gio_park *gio_unpark(struct gio_group *g, uint64_t id)
{
    struct gio_park **pp = &g->parked;
    struct gio_park *k;

    while ((k = *pp) != NULL && k->id != id) {
        pp = &k->next;
    }
    if (k != NULL) {
        *pp = k->next;
    }
    return k;
}

/* Step a JOIN or SYNC whose request is parked under ev->request_id; a
 * refusal (or a failed step) answers it at once. */
static void gio_step_parked(struct gio_group *g, struct group_event *ev)
{
    struct group_actions out;
    struct gio_park *k;
    int rv;

    group_actions_init(&out);
    rv = gio_step(g, ev, &out);
    if (rv == 0) {
        rv = out.result;
    }
    if (rv != 0 && (k = gio_unpark(g, ev->request_id)) != NULL) {
        if (k->type == GROUP_EV_JOIN) {
            gio_answer_join(k->req, k->correlation_id, NULL, rv,
                            weir_err_str(rv));
        } else {
            gio_answer_sync(k->req, k->correlation_id, NULL, rv,
                            weir_err_str(rv));
        }
        mem_free(k);
    }
    group_actions_fini(&out);
}

static void gio_client_host(const char *peer, char *out, size_t cap)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon != NULL ? (size_t)(colon - peer) : strlen(peer);

    (void)snprintf(out, cap, "/%.*s", (int)n, peer);
}

void group_io_join(struct group_io *io, struct srv_req *req, Weir__Request *r)
{
    const Weir__JoinGroupRequest *m = r->join_group;
    struct group_protocol protos[GROUP_MAX_PROTOCOLS];
    struct group_event ev;
    struct gio_group *g;
    struct gio_park *k;
    char msg[300] = "";
    char host[80];
    char token[64];
    size_t i;
    int rv;

    rv = gio_route(io, m->group, true, &g, msg, sizeof(msg));
    if (rv == 0 &&
        (m->n_protocols == 0 || m->n_protocols > GROUP_MAX_PROTOCOLS ||
         m->protocol_type[0] == '\0')) {
        rv = WEIR_EINCONSISTENT_GROUP_PROTOCOL;
        (void)snprintf(msg, sizeof(msg),
                       "a join needs a protocol type and 1..%d protocols",
                       GROUP_MAX_PROTOCOLS);
    }
    if (rv != 0 ||
        (k = gio_park(g, GROUP_EV_JOIN, req, r->correlation_id)) == NULL) {
        gio_answer_join(req, r->correlation_id, NULL,
                        rv != 0 ? rv : WEIR_ENOMEM,
                        rv != 0 ? msg : "out of memory");
        rpc_request_free(r);
        return;
    }
    for (i = 0; i < m->n_protocols; i++) {
        protos[i].name = m->protocols[i]->name;
        protos[i].metadata.p = m->protocols[i]->metadata.data;
        protos[i].metadata.len = m->protocols[i]->metadata.len;
    }
    gio_client_host(req->peer, host, sizeof(host));
    (void)snprintf(token, sizeof(token), "%lld-%llu-%llu",
                   (long long)io->b->cfg.id,
                   (unsigned long long)gio_wall_ms(io),
                   (unsigned long long)++io->member_seq);
    memset(&ev, 0, sizeof(ev));
    ev.type = GROUP_EV_JOIN;
    ev.request_id = k->id;
    ev.member_id = m->member_id;
    ev.u.join.client_id = r->client_id;
    ev.u.join.client_host = host;
    ev.u.join.new_member_token = token;
    ev.u.join.session_timeout_ms = m->session_timeout_ms;
    ev.u.join.rebalance_timeout_ms = m->rebalance_timeout_ms;
    ev.u.join.protocol_type = m->protocol_type;
    ev.u.join.protocols = protos;
    ev.u.join.n_protocols = m->n_protocols;
    gio_step_parked(g, &ev);
    rpc_request_free(r);
}

void group_io_sync(struct group_io *io, struct srv_req *req, Weir__Request *r)
{
    const Weir__SyncGroupRequest *m = r->sync_group;
    struct group_assignment *as = NULL;
    struct group_event ev;
    struct gio_group *g;
    struct gio_park *k = NULL;
    char msg[300] = "";
    size_t i;
    int rv;

    rv = gio_route(io, m->group, false, &g, msg, sizeof(msg));
    if (rv == 0 && g == NULL) {
        rv = WEIR_EUNKNOWN_MEMBER_ID;
        (void)snprintf(msg, sizeof(msg), "no group %s here", m->group);
    }
    if (rv == 0 && m->n_assignments > 0 &&
        (as = mem_calloc(m->n_assignments, sizeof(*as))) == NULL) {
        rv = WEIR_ENOMEM;
    }
    if (rv == 0 &&
        (k = gio_park(g, GROUP_EV_SYNC, req, r->correlation_id)) == NULL) {
        rv = WEIR_ENOMEM;
    }
    if (rv != 0) {
        gio_answer_sync(req, r->correlation_id, NULL, rv,
                        msg[0] != '\0' ? msg : weir_err_str(rv));
        mem_free(as);
        rpc_request_free(r);
        return;
    }
    for (i = 0; i < m->n_assignments; i++) {
        as[i].member_id = m->assignments[i]->member_id;
        as[i].assignment.p = m->assignments[i]->assignment.data;
        as[i].assignment.len = m->assignments[i]->assignment.len;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = GROUP_EV_SYNC;
    ev.request_id = k->id;
    ev.member_id = m->member_id;
    ev.generation_id = m->generation_id;
    ev.u.sync.assignments = as;
    ev.u.sync.n_assignments = m->n_assignments;
    gio_step_parked(g, &ev);
    mem_free(as);
    rpc_request_free(r);
}

/* Heartbeat and LeaveGroup: answered at once with the core's verdict. */
static void gio_member_call(struct group_io *io,
                            struct srv_req *req,
                            Weir__Request *r,
                            enum group_event_type type,
                            const char *group,
                            const char *member_id,
                            int32_t generation)
{
    struct group_actions out;
    struct group_event ev;
    struct gio_group *g;
    char msg[300] = "";
    int rv;

    rv = gio_route(io, group, false, &g, msg, sizeof(msg));
    if (rv == 0 && g == NULL) {
        rv = WEIR_EUNKNOWN_MEMBER_ID;
        (void)snprintf(msg, sizeof(msg), "no group %s here", group);
    }
    if (rv == 0) {
        memset(&ev, 0, sizeof(ev));
        ev.type = type;
        ev.member_id = member_id;
        ev.generation_id = generation;
        group_actions_init(&out);
        rv = gio_step(g, &ev, &out);
        if (rv == 0) {
            rv = out.result;
        }
        group_actions_fini(&out);
        (void)snprintf(msg, sizeof(msg), "%s", rv != 0 ? weir_err_str(rv) : "");
    }
    gio_answer_simple(req, r, rv, msg);
    rpc_request_free(r);
}

void group_io_heartbeat(struct group_io *io,
                        struct srv_req *req,
                        Weir__Request *r)
{
    const Weir__HeartbeatRequest *m = r->heartbeat;

    gio_member_call(io, req, r, GROUP_EV_HEARTBEAT, m->group, m->member_id,
                    m->generation_id);
}

void group_io_leave(struct group_io *io, struct srv_req *req, Weir__Request *r)
{
    const Weir__LeaveGroupRequest *m = r->leave_group;

    trace_info("group", "event=member_leave group=%s member=%s peer=%s",
               m->group, m->member_id, req->peer);
    gio_member_call(io, req, r, GROUP_EV_LEAVE, m->group, m->member_id, -1);
}

/* ---- offsets --------------------------------------------------------------
 */

static int
gio_commit_check(const Weir__OffsetCommitRequest *c, char *msg, size_t cap)
{
    size_t i;

    for (i = 0; i < c->n_partitions; i++) {
        const Weir__OffsetCommitPartition *p = c->partitions[i];
        if (p->topic[0] == '\0' || p->partition < 0 || p->offset < 0) {
            (void)snprintf(msg, cap,
                           "commit %zu: topic, partition >= 0 and offset >= "
                           "0 needed",
                           i);
            return WEIR_EINVALID_REQUEST;
        }
        if (strlen(p->metadata) > GROUP_MAX_METADATA) {
            (void)snprintf(msg, cap, "commit metadata over %d bytes",
                           GROUP_MAX_METADATA);
            return WEIR_EINVALID_REQUEST;
        }
    }
    return 0;
}

void group_io_offset_commit(struct group_io *io,
                            struct srv_req *req,
                            Weir__Request *r)
{
    const Weir__OffsetCommitRequest *c = r->offset_commit;
    struct gio_write *w = mem_calloc(1, sizeof(*w));
    struct group_actions out;
    struct group_event ev;
    struct batch_builder bb;
    struct gio_group *g = NULL;
    bool admin = c->generation_id < 0 && c->member_id[0] == '\0';
    char msg[300] = "";
    int64_t now = gio_wall_ms(io);
    size_t i;
    int rv = w == NULL ? WEIR_ENOMEM : 0;

    batch_builder_init(&bb);
    if (rv == 0) {
        w->kind = GIO_WRITE_COMMIT;
        w->req = req;
        w->r = r;
        w->correlation_id = r->correlation_id;
        w->group = mem_strdup(c->group);
        rv = w->group == NULL
                 ? WEIR_ENOMEM
                 : gio_route(io, c->group, true, &g, msg, sizeof(msg));
    }
    if (rv == 0) {
        rv = gio_commit_check(c, msg, sizeof(msg));
    }
    if (rv == 0) {
        memset(&ev, 0, sizeof(ev));
        ev.type = GROUP_EV_COMMIT;
        ev.member_id = c->member_id;
        ev.generation_id = c->generation_id;
        group_actions_init(&out);
        rv = gio_step(g, &ev, &out);
        if (rv == 0 && out.result != 0) {
            rv = admin ? WEIR_ENON_EMPTY_GROUP : out.result;
            (void)snprintf(msg, sizeof(msg), "%s",
                           admin ? "the group has live members: stop them "
                                   "first"
                                 : weir_err_str(out.result));
        }
        group_actions_fini(&out);
    }
    for (i = 0; rv == 0 && i < c->n_partitions; i++) {
        const Weir__OffsetCommitPartition *p = c->partitions[i];
        struct grec_offset v = {p->offset, p->leader_epoch, p->metadata, now};
        rv = grec_add_offset(&bb, now, c->group, p->topic, p->partition, &v);
    }
    if (rv == 0 && c->n_partitions > 0) {
        rv = gio_write(io, g, &bb, w, msg, sizeof(msg));
        if (rv == 0) {
            batch_builder_fini(&bb);
            return; /* answered once committed */
        }
    }
    if (w == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
    } else {
        if (rv != 0 && msg[0] == '\0') {
            (void)snprintf(msg, sizeof(msg), "%s", weir_err_str(rv));
        }
        gio_answer_commit(w, rv, rv != 0 ? msg : "");
        rpc_request_free(r);
        mem_free(w->group);
        mem_free(w);
    }
    batch_builder_fini(&bb);
}

static bool gio_fetch_wanted(const Weir__OffsetFetchRequest *f,
                             const char *topic,
                             int32_t partition)
{
    size_t i;
    size_t j;

    if (f->n_topics == 0) {
        return true;
    }
    for (i = 0; i < f->n_topics; i++) {
        if (strcmp(f->topics[i]->topic, topic) != 0) {
            continue;
        }
        if (f->topics[i]->n_partitions == 0) {
            return true;
        }
        for (j = 0; j < f->topics[i]->n_partitions; j++) {
            if (f->topics[i]->partitions[j] == partition) {
                return true;
            }
        }
    }
    return false;
}

void group_io_offset_fetch(struct group_io *io,
                           struct srv_req *req,
                           Weir__Request *r)
{
    const Weir__OffsetFetchRequest *f = r->offset_fetch;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__OffsetFetchResponse body = WEIR__OFFSET_FETCH_RESPONSE__INIT;
    Weir__OffsetFetchPartition *ps = NULL;
    Weir__OffsetFetchPartition **pp = NULL;
    struct gio_group *g;
    char msg[300] = "";
    size_t n = 0;
    uint32_t i;
    int rv;

    rv = gio_route(io, f->group, false, &g, msg, sizeof(msg));
    if (rv == 0 && g != NULL && g->n_offs > 0) {
        ps = mem_calloc(g->n_offs, sizeof(*ps));
        pp = mem_calloc(g->n_offs, sizeof(*pp));
        if (ps == NULL || pp == NULL) {
            rv = WEIR_ENOMEM;
            (void)snprintf(msg, sizeof(msg), "out of memory");
        }
    }
    for (i = 0; rv == 0 && g != NULL && i < g->n_offs; i++) {
        const struct gio_offset *o = &g->offs[i];
        if (!gio_fetch_wanted(f, o->topic, o->partition)) {
            continue;
        }
        weir__offset_fetch_partition__init(&ps[n]);
        ps[n].topic = o->topic;
        ps[n].partition = o->partition;
        ps[n].offset = o->offset;
        ps[n].leader_epoch = o->leader_epoch;
        ps[n].metadata = o->metadata;
        ps[n].commit_timestamp = o->commit_ts;
        pp[n] = &ps[n];
        n++;
    }
    body.error_code = rv;
    body.error_message = rv != 0 ? msg : "";
    body.partitions = pp;
    body.n_partitions = rv == 0 ? n : 0;
    resp.body_case = WEIR__RESPONSE__BODY_OFFSET_FETCH;
    resp.offset_fetch = &body;
    gio_respond(req, r->correlation_id, &resp);
    mem_free(ps);
    mem_free(pp);
    rpc_request_free(r);
}

/* ---- list, describe, delete -----------------------------------------------
 */

void group_io_list(struct group_io *io, struct srv_req *req, Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__ListGroupsResponse body = WEIR__LIST_GROUPS_RESPONSE__INIT;
    Weir__GroupListing *ls = NULL;
    Weir__GroupListing **lp = NULL;
    struct gio_group *g;
    struct group_view v;
    size_t n = 0;
    size_t k = 0;

    for (g = io->groups; g != NULL; g = g->next) {
        n++;
    }
    if (n > 0) {
        ls = mem_calloc(n, sizeof(*ls));
        lp = mem_calloc(n, sizeof(*lp));
    }
    if (n > 0 && (ls == NULL || lp == NULL)) {
        body.error_code = WEIR_ENOMEM;
        body.error_message = "out of memory";
    } else {
        for (g = io->groups; g != NULL; g = g->next) {
            if (io->parts[g->partition].state != GIO_LOADED) {
                continue;
            }
            group_core_describe(g->core, &v);
            weir__group_listing__init(&ls[k]);
            ls[k].group = g->id;
            ls[k].state = (char *)group_state_name(v.state);
            ls[k].protocol_type = (char *)v.protocol_type;
            lp[k] = &ls[k];
            k++;
        }
        body.groups = lp;
        body.n_groups = k;
    }
    resp.body_case = WEIR__RESPONSE__BODY_LIST_GROUPS;
    resp.list_groups = &body;
    gio_respond(req, r->correlation_id, &resp);
    mem_free(ls);
    mem_free(lp);
    rpc_request_free(r);
}

/* Describe one group into d; member arrays allocated into *ms / *mp. */
static void gio_describe_one(struct group_io *io,
                             const char *group,
                             Weir__GroupDescription *d,
                             Weir__GroupMemberInfo **ms,
                             Weir__GroupMemberInfo ***mp,
                             char *msg,
                             size_t cap)
{
    struct gio_group *g;
    struct group_view v;
    size_t i;
    int rv;

    weir__group_description__init(d);
    d->group = (char *)group;
    d->generation_id = -1;
    rv = gio_route(io, group, false, &g, msg, cap);
    if (rv == 0 && g == NULL) {
        rv = WEIR_EGROUP_NOT_FOUND;
        (void)snprintf(msg, cap, "no group %s", group);
    }
    d->error_code = rv;
    d->error_message = rv != 0 ? msg : "";
    if (rv != 0) {
        d->state = "Dead";
        return;
    }
    group_core_describe(g->core, &v);
    d->state = (char *)group_state_name(v.state);
    d->protocol_type = (char *)v.protocol_type;
    d->protocol = (char *)v.protocol;
    d->generation_id = v.generation_id;
    d->leader_id = (char *)v.leader_id;
    if (v.n_members == 0) {
        return;
    }
    *ms = mem_calloc(v.n_members, sizeof(**ms));
    *mp = mem_calloc(v.n_members, sizeof(**mp));
    if (*ms == NULL || *mp == NULL) {
        d->error_code = WEIR_ENOMEM;
        d->error_message = "out of memory";
        return;
    }
    for (i = 0; i < v.n_members; i++) {
        Weir__GroupMemberInfo *m = &(*ms)[i];
        weir__group_member_info__init(m);
        m->member_id = (char *)v.members[i].member_id;
        m->client_id = (char *)v.members[i].client_id;
        m->client_host = (char *)v.members[i].client_host;
        m->metadata.data = (uint8_t *)v.members[i].metadata.p;
        m->metadata.len = v.members[i].metadata.len;
        m->assignment.data = (uint8_t *)v.members[i].assignment.p;
        m->assignment.len = v.members[i].assignment.len;
        (*mp)[i] = m;
    }
    d->members = *mp;
    d->n_members = v.n_members;
}

void group_io_describe(struct group_io *io,
                       struct srv_req *req,
                       Weir__Request *r)
{
    const Weir__DescribeGroupsRequest *m = r->describe_groups;
    size_t n = m->n_groups;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__DescribeGroupsResponse body = WEIR__DESCRIBE_GROUPS_RESPONSE__INIT;
    Weir__GroupDescription *ds = mem_calloc(n + 1, sizeof(*ds));
    Weir__GroupDescription **dp = mem_calloc(n + 1, sizeof(*dp));
    Weir__GroupMemberInfo **ms = mem_calloc(n + 1, sizeof(*ms));
    Weir__GroupMemberInfo ***mp = mem_calloc(n + 1, sizeof(*mp));
    char(*msgs)[300] = mem_calloc(n + 1, sizeof(*msgs));
    size_t i;

    if (ds == NULL || dp == NULL || ms == NULL || mp == NULL || msgs == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
    } else {
        /* describing one group does not step any core, so the views of
         * earlier groups stay valid while later ones are described */
        for (i = 0; i < n; i++) {
            gio_describe_one(io, m->groups[i], &ds[i], &ms[i], &mp[i], msgs[i],
                             sizeof(msgs[i]));
            dp[i] = &ds[i];
        }
        body.groups = dp;
        body.n_groups = n;
        resp.body_case = WEIR__RESPONSE__BODY_DESCRIBE_GROUPS;
        resp.describe_groups = &body;
        gio_respond(req, r->correlation_id, &resp);
    }
    for (i = 0; ms != NULL && mp != NULL && i < n; i++) {
        mem_free(ms[i]);
        mem_free(mp[i]);
    }
    mem_free(ds);
    mem_free(dp);
    mem_free(ms);
    mem_free(mp);
    mem_free(msgs);
    rpc_request_free(r);
}

/* Tombstones for the group record and every offset; the group goes from
 * memory at once (the tombstones are written without waiting). */
static int
gio_delete_one(struct group_io *io, const char *group, char *msg, size_t cap)
{
    struct gio_group *g;
    struct gio_write *w;
    struct batch_builder bb;
    int64_t now = gio_wall_ms(io);
    uint32_t i;
    int rv;

    rv = gio_route(io, group, false, &g, msg, cap);
    if (rv == 0 && g == NULL) {
        (void)snprintf(msg, cap, "no group %s", group);
        return WEIR_EGROUP_NOT_FOUND;
    }
    if (rv != 0) {
        return rv;
    }
    if (!group_core_delete(g->core)) {
        (void)snprintf(msg, cap, "group %s has live members", group);
        return WEIR_ENON_EMPTY_GROUP;
    }
    w = mem_calloc(1, sizeof(*w));
    if (w == NULL) {
        return WEIR_ENOMEM;
    }
    w->kind = GIO_WRITE_DELETE;
    batch_builder_init(&bb);
    rv = grec_add_group(&bb, now, g->id, NULL);
    for (i = 0; rv == 0 && i < g->n_offs; i++) {
        rv = grec_add_offset(&bb, now, g->id, g->offs[i].topic,
                             g->offs[i].partition, NULL);
    }
    if (rv == 0) {
        rv = gio_write(io, g, &bb, w, msg, cap);
    }
    batch_builder_fini(&bb);
    if (rv != 0) {
        mem_free(w);
        return rv;
    }
    trace_info("group", "event=group_deleted group=%s offsets=%u", group,
               (unsigned)g->n_offs);
    gio_group_drop(io, g);
    return 0;
}

void group_io_delete(struct group_io *io, struct srv_req *req, Weir__Request *r)
{
    const Weir__DeleteGroupsRequest *m = r->delete_groups;
    size_t n = m->n_groups;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__DeleteGroupsResponse body = WEIR__DELETE_GROUPS_RESPONSE__INIT;
    Weir__GroupResult *rs = mem_calloc(n + 1, sizeof(*rs));
    Weir__GroupResult **rp = mem_calloc(n + 1, sizeof(*rp));
    char(*msgs)[300] = mem_calloc(n + 1, sizeof(*msgs));
    size_t i;

    if (rs == NULL || rp == NULL || msgs == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
    } else {
        for (i = 0; i < n; i++) {
            weir__group_result__init(&rs[i]);
            rs[i].group = m->groups[i];
            rs[i].error_code =
                gio_delete_one(io, m->groups[i], msgs[i], sizeof(msgs[i]));
            rs[i].error_message = rs[i].error_code != 0 ? msgs[i] : "";
            rp[i] = &rs[i];
        }
        body.groups = rp;
        body.n_groups = n;
        resp.body_case = WEIR__RESPONSE__BODY_DELETE_GROUPS;
        resp.delete_groups = &body;
        gio_respond(req, r->correlation_id, &resp);
    }
    mem_free(rs);
    mem_free(rp);
    mem_free(msgs);
    rpc_request_free(r);
}
