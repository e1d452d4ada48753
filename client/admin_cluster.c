/* SPDX-License-Identifier: Apache-2.0 */
/* weir_admin_describe_cluster: one Metadata call (all topics, configs),
 * copied out of the protobuf answer into plain structs (with the
 * controller quorum when the answer carries it). */
#include <stdlib.h>
#include <string.h>

#include "client/call.h"
#include "client/client.h"
#include "common/mem.h"
#include "common/rpc.h"

void weir_cluster_desc_free(struct weir_cluster_desc *d)
{
    size_t i;

    if (d == NULL) {
        return;
    }
    for (i = 0; i < d->n_brokers; i++) {
        mem_free(d->brokers[i].host);
        mem_free(d->brokers[i].rack);
    }
    for (i = 0; i < d->n_partitions; i++) {
        mem_free(d->partitions[i].topic);
    }
    for (i = 0; i < d->n_voters; i++) {
        mem_free(d->voters[i].address);
    }
    mem_free(d->voters);
    mem_free(d->brokers);
    mem_free(d->partitions);
    mem_free(d->controller);
    mem_free(d);
}

static int32_t admin_cluster_min_isr(const Weir__TopicInfo *t)
{
    size_t i;

    for (i = 0; i < t->n_configs; i++) {
        if (strcmp(t->configs[i]->key, "min.insync.replicas") == 0) {
            return (int32_t)atoi(t->configs[i]->value);
        }
    }
    return -1;
}

static void
admin_cluster_ids(int32_t *dst, size_t *n, const int32_t *src, size_t n_src)
{
    *n = n_src < WEIR_MAX_REPLICAS ? n_src : WEIR_MAX_REPLICAS;
    if (*n > 0) {
        memcpy(dst, src, *n * sizeof(*dst));
    }
}

static int admin_cluster_partitions(struct weir_cluster_desc *d,
                                    const Weir__MetadataResponse *m)
{
    size_t n = 0;
    size_t t;
    size_t p;

    for (t = 0; t < m->n_topics; t++) {
        n += m->topics[t]->n_partitions;
    }
    d->partitions = mem_calloc(n + 1, sizeof(*d->partitions));
    if (d->partitions == NULL) {
        return WEIR_ENOMEM;
    }
    for (t = 0; t < m->n_topics; t++) {
        const Weir__TopicInfo *ti = m->topics[t];
        int32_t min_isr = admin_cluster_min_isr(ti);
        for (p = 0; p < ti->n_partitions; p++) {
            const Weir__PartitionInfo *pi = ti->partitions[p];
            struct weir_cluster_partition *out =
                &d->partitions[d->n_partitions];
            out->topic = mem_strdup(ti->name);
            if (out->topic == NULL) {
                return WEIR_ENOMEM;
            }
            d->n_partitions++;
            out->partition = pi->partition;
            out->error_code = pi->error_code;
            out->leader = pi->leader;
            out->leader_epoch = pi->leader_epoch;
            out->min_insync_replicas = min_isr;
            admin_cluster_ids(out->replicas, &out->n_replicas, pi->replicas,
                              pi->n_replicas);
            admin_cluster_ids(out->isr, &out->n_isr, pi->isr, pi->n_isr);
            admin_cluster_ids(out->elr, &out->n_elr, pi->elr, pi->n_elr);
        }
    }
    return 0;
}

static int admin_cluster_quorum(struct weir_cluster_desc *d,
                                const Weir__QuorumStatus *qs)
{
    size_t i;

    if (qs == NULL || qs->n_voters == 0) {
        return 0;
    }
    d->voters = mem_calloc(qs->n_voters, sizeof(*d->voters));
    if (d->voters == NULL) {
        return WEIR_ENOMEM;
    }
    d->quorum_term = qs->term;
    d->quorum_leader = qs->leader_id;
    for (i = 0; i < qs->n_voters; i++) {
        const Weir__QuorumVoter *v = qs->voters[i];
        struct weir_quorum_voter *out = &d->voters[i];
        out->address = mem_strdup(v->address != NULL ? v->address : "");
        if (out->address == NULL) {
            return WEIR_ENOMEM;
        }
        d->n_voters++;
        out->id = v->id;
        out->state = v->state >= WEIR_QUORUM_STATE_LEADER &&
                             v->state <= WEIR_QUORUM_STATE_UNREACHABLE
                         ? (enum weir_quorum_state)v->state
                         : WEIR_QUORUM_STATE_UNKNOWN;
        out->log_end = v->log_end;
        out->lag = v->lag;
    }
    return 0;
}

static int admin_cluster_fill(struct weir_cluster_desc *d,
                              const Weir__MetadataResponse *m)
{
    size_t i;

    d->controller =
        mem_strdup(m->controller_address != NULL ? m->controller_address : "");
    d->brokers = mem_calloc(m->n_brokers + 1, sizeof(*d->brokers));
    if (d->controller == NULL || d->brokers == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < m->n_brokers; i++) {
        const Weir__BrokerInfo *bi = m->brokers[i];
        struct weir_broker_desc *b = &d->brokers[i];
        b->host = mem_strdup(bi->host);
        b->rack = mem_strdup(bi->rack != NULL ? bi->rack : "");
        if (b->host == NULL || b->rack == NULL) {
            mem_free(b->host);
            mem_free(b->rack);
            return WEIR_ENOMEM;
        }
        d->n_brokers++;
        b->id = bi->id;
        b->port = (uint16_t)bi->port;
        b->fenced = bi->fenced;
    }
    if (admin_cluster_quorum(d, m->quorum) != 0) {
        return WEIR_ENOMEM;
    }
    return admin_cluster_partitions(d, m);
}

int weir_admin_describe_cluster(struct weir_client *c,
                                struct weir_cluster_desc **out,
                                struct err_detail *ed)
{
    Weir__Request req;
    Weir__MetadataRequest mr;
    Weir__Response *resp = NULL;
    struct weir_cluster_desc *d;
    int rv;

    *out = NULL;
    weir__metadata_request__init(&mr);
    mr.all_topics = true;
    mr.include_configs = true;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_METADATA;
    req.metadata = &mr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    if (resp->body_case != WEIR__RESPONSE__BODY_METADATA) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered with another call's response");
    }
    d = mem_calloc(1, sizeof(*d));
    if (d == NULL || admin_cluster_fill(d, resp->metadata) != 0) {
        weir_cluster_desc_free(d);
        rpc_response_free(resp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rpc_response_free(resp);
    *out = d;
    return 0;
}
