/* SPDX-License-Identifier: Apache-2.0 */
/* Admin calls on consumer groups: list (every broker, merged), describe
 * and delete; admin_group_offsets.c has the offset calls. A group call
 * goes to the group's coordinator, found with FindCoordinator and found
 * again (with a short backoff) while the answer is "not available", "not
 * the coordinator" or "loading". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin_group.h"
#include "client/assignor.h"
#include "client/call.h"
#include "common/mem.h"
#include "common/rpc.h"

#define ADMIN_GROUP_TRIES      10
#define ADMIN_GROUP_BACKOFF_MS 200

static void admin_group_sleep(struct weir_client *c, uint32_t ms)
{
    uint64_t until = client_now_ms(c) + ms;

    while (client_now_ms(c) < until && !pool_interrupted(c->pool)) {
        (void)pool_poll(c->pool, NULL, 0, (int)(until - client_now_ms(c)));
    }
}

static int admin_group_find(struct weir_client *c,
                            const char *group,
                            char *host,
                            size_t host_len,
                            uint16_t *port,
                            struct err_detail *ed)
{
    Weir__Request req;
    Weir__FindCoordinatorRequest fr;
    Weir__Response *resp;
    int rv;

    weir__find_coordinator_request__init(&fr);
    fr.group = (char *)group;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_FIND_COORDINATOR;
    req.find_coordinator = &fr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    if (resp->body_case != WEIR__RESPONSE__BODY_FIND_COORDINATOR) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered with another call's response");
    }
    rv = resp->find_coordinator->error_code;
    if (rv != 0) {
        (void)err_set(ed, rv, "no coordinator for group '%s': %s", group,
                      resp->find_coordinator->error_message[0] != '\0'
                          ? resp->find_coordinator->error_message
                          : weir_err_str(rv));
    } else {
        const Weir__FindCoordinatorResponse *f = resp->find_coordinator;
        bool tls = c->tls != NULL && f->tls_port != 0;
        (void)snprintf(host, host_len, "%s", tls ? f->tls_host : f->host);
        *port = (uint16_t)(tls ? f->tls_port : f->port);
    }
    rpc_response_free(resp);
    return rv;
}

static bool admin_group_retry(int err)
{
    return err == WEIR_ECOORDINATOR_NOT_AVAILABLE ||
           err == WEIR_ENOT_COORDINATOR ||
           err == WEIR_ENOT_COORDINATOR_AFTER_APPEND ||
           err == WEIR_ECOORDINATOR_LOAD_IN_PROGRESS ||
           call_is_transport_err(err);
}

int admin_group_call(struct weir_client *c,
                     const char *group,
                     Weir__Request *req,
                     Weir__Response__BodyCase want,
                     admin_group_err_fn *body_err,
                     Weir__Response **out,
                     struct err_detail *ed)
{
    char host[256];
    uint16_t port = 0;
    int tries;
    int rv = 0;

    *out = NULL;
    for (tries = 0; tries < ADMIN_GROUP_TRIES; tries++) {
        if (tries > 0) {
            admin_group_sleep(c, ADMIN_GROUP_BACKOFF_MS);
        }
        rv = admin_group_find(c, group, host, sizeof(host), &port, ed);
        if (rv == 0) {
            rv = call_sync(c->pool, host, port, POOL_LANE_DEFAULT, req,
                           c->cfg.request_timeout_ms, out, ed);
        }
        if (rv == 0 && (*out)->body_case != want) {
            rpc_response_free(*out);
            *out = NULL;
            return err_set(ed, WEIR_EMALFORMED,
                           "broker answered with another call's response");
        }
        if (rv == 0 && admin_group_retry(body_err(*out))) {
            rv = body_err(*out);
            rpc_response_free(*out);
            *out = NULL;
            (void)err_set(ed, rv, "group '%s': %s", group, weir_err_str(rv));
            continue;
        }
        if (rv == 0) {
            return 0; /* body errors are the caller's to word */
        }
        if (!admin_group_retry(rv) || pool_interrupted(c->pool)) {
            return rv;
        }
    }
    return rv;
}

void weir_group_list_free(struct weir_group_list *l)
{
    size_t i;

    if (l == NULL) {
        return;
    }
    for (i = 0; i < l->n; i++) {
        mem_free(l->groups[i].group);
        mem_free(l->groups[i].state);
        mem_free(l->groups[i].protocol_type);
    }
    mem_free(l->groups);
    mem_free(l);
}

static int admin_group_list_add(struct weir_group_list *l,
                                const Weir__GroupListing *g)
{
    struct weir_group_listing *v;
    size_t i;

    for (i = 0; i < l->n; i++) {
        if (strcmp(l->groups[i].group, g->group) == 0) {
            return 0;
        }
    }
    v = mem_realloc(l->groups, (l->n + 1) * sizeof(*v));
    if (v == NULL) {
        return WEIR_ENOMEM;
    }
    l->groups = v;
    v[l->n].group = mem_strdup(g->group);
    v[l->n].state = mem_strdup(g->state);
    v[l->n].protocol_type = mem_strdup(g->protocol_type);
    l->n++;
    if (v[l->n - 1].group == NULL || v[l->n - 1].state == NULL ||
        v[l->n - 1].protocol_type == NULL) {
        return WEIR_ENOMEM;
    }
    return 0;
}

static int admin_group_cmp(const void *a, const void *b)
{
    return strcmp(((const struct weir_group_listing *)a)->group,
                  ((const struct weir_group_listing *)b)->group);
}

/* One broker's groups into l. */
static int admin_group_list_one(struct weir_client *c,
                                const char *host,
                                uint16_t port,
                                struct weir_group_list *l,
                                struct err_detail *ed)
{
    Weir__Request req;
    Weir__ListGroupsRequest lr;
    Weir__Response *resp;
    size_t i;
    int rv;

    weir__list_groups_request__init(&lr);
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_LIST_GROUPS;
    req.list_groups = &lr;
    rv = call_sync(c->pool, host, port, POOL_LANE_DEFAULT, &req,
                   c->cfg.request_timeout_ms, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    if (resp->body_case != WEIR__RESPONSE__BODY_LIST_GROUPS) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered with another call's response");
    }
    rv = resp->list_groups->error_code;
    if (rv != 0) {
        (void)err_set(ed, rv, "%s:%u: %s", host, port, weir_err_str(rv));
    }
    for (i = 0; rv == 0 && i < resp->list_groups->n_groups; i++) {
        rv = admin_group_list_add(l, resp->list_groups->groups[i]);
    }
    rpc_response_free(resp);
    return rv;
}

int weir_admin_list_groups(struct weir_client *c,
                           struct weir_group_list **out,
                           struct err_detail *ed)
{
    Weir__Request req;
    Weir__MetadataRequest mr;
    Weir__Response *md = NULL;
    struct weir_group_list *l;
    size_t answered = 0;
    size_t i;
    int rv;

    *out = NULL;
    weir__metadata_request__init(&mr);
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_METADATA;
    req.metadata = &mr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, &md, ed);
    if (rv != 0) {
        return rv;
    }
    l = mem_calloc(1, sizeof(*l));
    if (l == NULL || md->body_case != WEIR__RESPONSE__BODY_METADATA) {
        rpc_response_free(md);
        mem_free(l);
        return err_set(ed, l == NULL ? WEIR_ENOMEM : WEIR_EMALFORMED,
                       "no broker list");
    }
    for (i = 0; i < md->metadata->n_brokers; i++) {
        const Weir__BrokerInfo *b = md->metadata->brokers[i];
        rv = admin_group_list_one(c, b->host, (uint16_t)b->port, l, ed);
        if (rv == WEIR_ENOMEM) {
            break;
        }
        answered += rv == 0;
    }
    rpc_response_free(md);
    if (rv == WEIR_ENOMEM || answered == 0) {
        weir_group_list_free(l);
        return rv == WEIR_ENOMEM ? err_set(ed, rv, "out of memory")
                                 : (rv != 0 ? rv : 0);
    }
    if (l->n > 1) {
        qsort(l->groups, l->n, sizeof(*l->groups), admin_group_cmp);
    }
    *out = l;
    return 0;
}

void weir_group_desc_free(struct weir_group_desc *d)
{
    size_t i;
    size_t j;

    if (d == NULL) {
        return;
    }
    for (i = 0; i < d->n_members; i++) {
        struct weir_group_member *m = &d->members[i];
        for (j = 0; j < m->n_partitions; j++) {
            mem_free(m->partitions[j].topic);
        }
        mem_free(m->partitions);
        mem_free(m->member_id);
        mem_free(m->client_id);
        mem_free(m->client_host);
    }
    mem_free(d->members);
    mem_free(d->group);
    mem_free(d->state);
    mem_free(d->protocol_type);
    mem_free(d->protocol);
    mem_free(d->leader_id);
    mem_free(d);
}

static int admin_group_member(struct weir_group_member *m,
                              const Weir__GroupMemberInfo *mi)
{
    struct asg_assignment *a = NULL;
    size_t i;

    m->member_id = mem_strdup(mi->member_id);
    m->client_id = mem_strdup(mi->client_id);
    m->client_host = mem_strdup(mi->client_host);
    if (m->member_id == NULL || m->client_id == NULL ||
        m->client_host == NULL) {
        return WEIR_ENOMEM;
    }
    if (mi->assignment.len == 0) {
        return 0;
    }
    if (asg_decode_assignment(mi->assignment.data, mi->assignment.len, &a) !=
        0) {
        return 0; /* shown without partitions rather than failing */
    }
    m->partitions = mem_calloc(a->n + 1, sizeof(*m->partitions));
    for (i = 0; m->partitions != NULL && i < a->n; i++) {
        m->partitions[i].topic = mem_strdup(a->tps[i].topic);
        if (m->partitions[i].topic == NULL) {
            break;
        }
        m->partitions[i].partition = a->tps[i].partition;
        m->n_partitions++;
    }
    i = a->n;
    asg_assignment_free(a);
    return m->n_partitions == i ? 0 : WEIR_ENOMEM;
}

static int admin_group_desc_fill(struct weir_group_desc *d,
                                 const Weir__GroupDescription *g)
{
    size_t i;

    d->group = mem_strdup(g->group);
    d->state = mem_strdup(g->state);
    d->protocol_type = mem_strdup(g->protocol_type);
    d->protocol = mem_strdup(g->protocol);
    d->leader_id = mem_strdup(g->leader_id);
    d->generation = g->generation_id;
    d->members = mem_calloc(g->n_members + 1, sizeof(*d->members));
    if (d->group == NULL || d->state == NULL || d->protocol_type == NULL ||
        d->protocol == NULL || d->leader_id == NULL || d->members == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < g->n_members; i++) {
        d->n_members++;
        if (admin_group_member(&d->members[i], g->members[i]) != 0) {
            return WEIR_ENOMEM;
        }
    }
    return 0;
}

static int admin_group_describe_err(const Weir__Response *r)
{
    const Weir__DescribeGroupsResponse *d = r->describe_groups;

    return d->n_groups > 0 ? d->groups[0]->error_code : 0;
}

int weir_admin_describe_group(struct weir_client *c,
                              const char *group,
                              struct weir_group_desc **out,
                              struct err_detail *ed)
{
    Weir__Request req;
    Weir__DescribeGroupsRequest dr;
    Weir__Response *resp;
    struct weir_group_desc *d;
    char *groups[1] = {(char *)group};
    const Weir__GroupDescription *g;
    int rv;

    *out = NULL;
    weir__describe_groups_request__init(&dr);
    dr.n_groups = 1;
    dr.groups = groups;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_DESCRIBE_GROUPS;
    req.describe_groups = &dr;
    rv = admin_group_call(c, group, &req, WEIR__RESPONSE__BODY_DESCRIBE_GROUPS,
                          admin_group_describe_err, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    if (resp->describe_groups->n_groups != 1) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED, "broker did not describe '%s'",
                       group);
    }
    g = resp->describe_groups->groups[0];
    if (g->error_code != 0) {
        rv = err_set(ed, g->error_code, "group '%s': %s", group,
                     g->error_code == WEIR_EGROUP_NOT_FOUND
                         ? "no such group"
                         : (g->error_message[0] != '\0'
                                ? g->error_message
                                : weir_err_str(g->error_code)));
        rpc_response_free(resp);
        return rv;
    }
    d = mem_calloc(1, sizeof(*d));
    if (d == NULL || admin_group_desc_fill(d, g) != 0) {
        weir_group_desc_free(d);
        rpc_response_free(resp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rpc_response_free(resp);
    *out = d;
    return 0;
}

static int admin_group_delete_err(const Weir__Response *r)
{
    const Weir__DeleteGroupsResponse *d = r->delete_groups;

    return d->n_groups > 0 ? d->groups[0]->error_code : 0;
}

int weir_admin_delete_group(struct weir_client *c,
                            const char *group,
                            struct err_detail *ed)
{
    Weir__Request req;
    Weir__DeleteGroupsRequest dr;
    Weir__Response *resp;
    char *groups[1] = {(char *)group};
    int rv;

    weir__delete_groups_request__init(&dr);
    dr.n_groups = 1;
    dr.groups = groups;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_DELETE_GROUPS;
    req.delete_groups = &dr;
    rv = admin_group_call(c, group, &req, WEIR__RESPONSE__BODY_DELETE_GROUPS,
                          admin_group_delete_err, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    rv = admin_group_delete_err(resp);
    if (rv == WEIR_ENON_EMPTY_GROUP) {
        (void)err_set(ed, rv,
                      "group '%s' has live members; stop its consumers first",
                      group);
    } else if (rv == WEIR_EGROUP_NOT_FOUND) {
        (void)err_set(ed, rv, "group '%s' does not exist", group);
    } else if (rv != 0) {
        (void)err_set(ed, rv, "cannot delete group '%s': %s", group,
                      weir_err_str(rv));
    }
    rpc_response_free(resp);
    return rv;
}
