/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata: brokers, topics, partitions (leader, replicas, ISR, offsets)
 * and, on request, topic configurations. With one broker it leads every
 * partition; the controller issue replaces this view with the cluster's. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/rpc.h"

/* Everything one response points to, freed in one place. */
struct md_build {
    Weir__BrokerInfo broker;
    Weir__BrokerInfo *brokers[1];
    Weir__TopicInfo *topics;
    Weir__TopicInfo **topic_ptrs;
    Weir__PartitionInfo *parts;
    Weir__PartitionInfo **part_ptrs;
    Weir__ConfigEntry *cfgs;
    Weir__ConfigEntry **cfg_ptrs;
    char (*cfg_vals)[32];
    int32_t self[1];
    size_t n_topics;
};

#define MD_CONFIGS 9

static void
md_configs(struct md_build *m, size_t t, const struct logmgr_topic *lt)
{
    static const char *const keys[MD_CONFIGS] = {
        "segment.bytes",        "segment.ms",
        "retention.ms",         "retention.bytes",
        "index.interval.bytes", "max.message.bytes",
        "flush.policy",         "flush.ms",
        "flush.messages"};
    const struct plog_config *c = lt->log_config;
    Weir__TopicInfo *ti = &m->topics[t];
    size_t base = t * MD_CONFIGS;
    long long v[MD_CONFIGS] = {(long long)c->segment_bytes,
                               (long long)c->segment_ms,
                               (long long)c->retention_ms,
                               (long long)c->retention_bytes,
                               (long long)c->index_interval_bytes,
                               (long long)c->max_batch_bytes,
                               0,
                               (long long)c->flush_ms,
                               (long long)c->flush_messages};
    size_t i;

    for (i = 0; i < MD_CONFIGS; i++) {
        Weir__ConfigEntry *e = &m->cfgs[base + i];
        weir__config_entry__init(e);
        e->key = (char *)keys[i];
        if (i == 6) {
            (void)snprintf(m->cfg_vals[base + i], sizeof(m->cfg_vals[0]), "%s",
                           broker_flush_policy_name(c->flush_policy));
        } else {
            (void)snprintf(m->cfg_vals[base + i], sizeof(m->cfg_vals[0]),
                           "%lld", v[i]);
        }
        e->value = m->cfg_vals[base + i];
        m->cfg_ptrs[base + i] = e;
    }
    ti->configs = &m->cfg_ptrs[base];
    ti->n_configs = MD_CONFIGS;
}

static size_t md_fill_partitions(struct broker *b,
                                 struct md_build *m,
                                 size_t t,
                                 size_t next_part,
                                 const struct logmgr_topic *lt)
{
    Weir__TopicInfo *ti = &m->topics[t];
    int32_t p;

    ti->partitions = &m->part_ptrs[next_part];
    ti->n_partitions = (size_t)lt->partitions;
    for (p = 0; p < lt->partitions; p++) {
        Weir__PartitionInfo *pi = &m->parts[next_part];
        struct plog *log = logmgr_partition(b->logs, lt->name, p);
        weir__partition_info__init(pi);
        pi->partition = p;
        pi->leader = (int32_t)b->cfg.id;
        pi->leader_epoch = 0;
        pi->replicas = m->self;
        pi->n_replicas = 1;
        pi->isr = m->self;
        pi->n_isr = 1;
        if (log != NULL) {
            pi->log_start_offset = plog_start_offset(log);
            pi->high_watermark = broker_high_watermark(b, log);
        } else {
            pi->error_code = WEIR_ELEADER_NOT_AVAILABLE;
            pi->leader = -1;
        }
        m->part_ptrs[next_part++] = pi;
    }
    return next_part;
}

/* Which topics the response lists: all, or the requested ones in order. */
static size_t
md_count(struct broker *b, const Weir__MetadataRequest *mr, size_t *n_parts)
{
    struct logmgr_topic lt;
    size_t n;
    size_t i;

    *n_parts = 0;
    if (mr->all_topics || mr->n_topics == 0) {
        n = logmgr_topic_count(b->logs);
        for (i = 0; i < n; i++) {
            logmgr_topic_at(b->logs, (uint32_t)i, &lt);
            *n_parts += (size_t)lt.partitions;
        }
        return n;
    }
    for (i = 0; i < mr->n_topics; i++) {
        if (logmgr_topic(b->logs, mr->topics[i], &lt)) {
            *n_parts += (size_t)lt.partitions;
        }
    }
    return mr->n_topics;
}

static void md_free(struct md_build *m)
{
    mem_free(m->topics);
    mem_free(m->topic_ptrs);
    mem_free(m->parts);
    mem_free(m->part_ptrs);
    mem_free(m->cfgs);
    mem_free(m->cfg_ptrs);
    mem_free(m->cfg_vals);
}

static int md_alloc(struct md_build *m, size_t n_topics, size_t n_parts)
{
    size_t nc = n_topics * MD_CONFIGS;

    m->topics = mem_calloc(n_topics + 1, sizeof(*m->topics));
    m->topic_ptrs = mem_calloc(n_topics + 1, sizeof(*m->topic_ptrs));
    m->parts = mem_calloc(n_parts + 1, sizeof(*m->parts));
    m->part_ptrs = mem_calloc(n_parts + 1, sizeof(*m->part_ptrs));
    m->cfgs = mem_calloc(nc + 1, sizeof(*m->cfgs));
    m->cfg_ptrs = mem_calloc(nc + 1, sizeof(*m->cfg_ptrs));
    m->cfg_vals = mem_calloc(nc + 1, sizeof(*m->cfg_vals));
    if (m->topics == NULL || m->topic_ptrs == NULL || m->parts == NULL ||
        m->part_ptrs == NULL || m->cfgs == NULL || m->cfg_ptrs == NULL ||
        m->cfg_vals == NULL) {
        return WEIR_ENOMEM;
    }
    return 0;
}

void api_metadata(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    const Weir__MetadataRequest *mr = r->metadata;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__MetadataResponse body = WEIR__METADATA_RESPONSE__INIT;
    struct md_build m;
    struct logmgr_topic lt;
    bool all = mr->all_topics || mr->n_topics == 0;
    size_t n_parts;
    size_t next_part = 0;
    size_t i;

    if (b->cluster != NULL) {
        cluster_api_metadata(b, req, r); /* the cluster's view */
        return;
    }
    memset(&m, 0, sizeof(m));
    m.n_topics = md_count(b, mr, &n_parts);
    if (md_alloc(&m, m.n_topics, n_parts) != 0) {
        md_free(&m);
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
        return;
    }
    weir__broker_info__init(&m.broker);
    m.broker.id = (int32_t)b->cfg.id;
    m.broker.host = b->adv_host;
    m.broker.port = b->adv_port;
    if (b->srv_tls != NULL) {
        m.broker.tls_host = b->tls_adv_host;
        m.broker.tls_port = b->tls_adv_port;
    }
    m.brokers[0] = &m.broker;
    m.self[0] = (int32_t)b->cfg.id;
    for (i = 0; i < m.n_topics; i++) {
        Weir__TopicInfo *ti = &m.topics[i];
        bool found;
        weir__topic_info__init(ti);
        m.topic_ptrs[i] = ti;
        if (all) {
            logmgr_topic_at(b->logs, (uint32_t)i, &lt);
            found = true;
        } else {
            found = logmgr_topic(b->logs, mr->topics[i], &lt);
        }
        ti->name = all ? (char *)lt.name : mr->topics[i];
        if (!found) {
            ti->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
            ti->error_message = "unknown topic";
            continue;
        }
        ti->internal = names_topic_internal(ti->name);
        next_part = md_fill_partitions(b, &m, i, next_part, &lt);
        if (mr->include_configs) {
            md_configs(&m, i, &lt);
        }
    }
    body.cluster_id = "weir-local";
    body.controller_id = -1;
    body.brokers = m.brokers;
    body.n_brokers = 1;
    body.topics = m.topic_ptrs;
    body.n_topics = m.n_topics;
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_METADATA;
    resp.metadata = &body;
    broker_respond(req, &resp, NULL, false);
    md_free(&m);
    rpc_request_free(r);
}
