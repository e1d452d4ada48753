/* SPDX-License-Identifier: Apache-2.0 */
/* MetadataResponse from an image. Everything is sized in one pass and
 * allocated up front, so filling cannot fail half-way. */
#include "controller/meta/meta_pb.h"

#include <string.h>

#include "common/mem.h"
#include "common/names.h"

static const struct meta_topic *meta_pb_topic(const struct meta_image *img,
                                              const Weir__MetadataRequest *mr,
                                              bool all,
                                              size_t i)
{
    if (all) {
        return meta_image_topic_at(img, (uint32_t)i);
    }
    return meta_image_topic_by_name(img, mr->topics[i], strlen(mr->topics[i]));
}

static int meta_pb_alloc(struct meta_pb *m,
                         size_t n_brokers,
                         size_t n_topics,
                         size_t n_parts,
                         size_t n_cfgs)
{
    m->brokers = mem_calloc(n_brokers + 1, sizeof(*m->brokers));
    m->broker_ptrs = mem_calloc(n_brokers + 1, sizeof(*m->broker_ptrs));
    m->topics = mem_calloc(n_topics + 1, sizeof(*m->topics));
    m->topic_ptrs = mem_calloc(n_topics + 1, sizeof(*m->topic_ptrs));
    m->parts = mem_calloc(n_parts + 1, sizeof(*m->parts));
    m->part_ptrs = mem_calloc(n_parts + 1, sizeof(*m->part_ptrs));
    m->cfgs = mem_calloc(n_cfgs + 1, sizeof(*m->cfgs));
    m->cfg_ptrs = mem_calloc(n_cfgs + 1, sizeof(*m->cfg_ptrs));
    if (m->brokers == NULL || m->broker_ptrs == NULL || m->topics == NULL ||
        m->topic_ptrs == NULL || m->parts == NULL || m->part_ptrs == NULL ||
        m->cfgs == NULL || m->cfg_ptrs == NULL) {
        return WEIR_ENOMEM;
    }
    return 0;
}

static void meta_pb_brokers(const struct meta_image *img,
                            Weir__MetadataResponse *body,
                            struct meta_pb *m)
{
    uint32_t n = meta_image_broker_count(img);
    uint32_t i;

    for (i = 0; i < n; i++) {
        const struct meta_broker *b = meta_image_broker_at(img, i);
        Weir__BrokerInfo *bi = &m->brokers[i];
        weir__broker_info__init(bi);
        bi->id = b->id;
        bi->host = b->host;
        bi->port = b->port;
        bi->rack = b->rack;
        bi->fenced = b->fenced;
        if (b->tls_port != 0) {
            bi->tls_host = b->tls_host;
            bi->tls_port = b->tls_port;
        }
        m->broker_ptrs[i] = bi;
    }
    body->brokers = m->broker_ptrs;
    body->n_brokers = n;
}

static void meta_pb_fill_topic(const struct meta_topic *t,
                               bool configs,
                               Weir__TopicInfo *ti,
                               struct meta_pb *m,
                               size_t *next_part,
                               size_t *next_cfg)
{
    uint32_t p;

    ti->partitions = &m->part_ptrs[*next_part];
    ti->n_partitions = t->n_partitions;
    for (p = 0; p < t->n_partitions; p++) {
        struct meta_partition *mp = &t->partitions[p];
        Weir__PartitionInfo *pi = &m->parts[*next_part];
        weir__partition_info__init(pi);
        pi->partition = (int32_t)p;
        pi->leader = mp->leader;
        pi->leader_epoch = mp->leader_epoch;
        pi->replicas = mp->replicas.ids;
        pi->n_replicas = mp->replicas.n;
        pi->isr = mp->isr.ids;
        pi->n_isr = mp->isr.n;
        pi->elr = mp->elr.ids;
        pi->n_elr = mp->elr.n;
        pi->log_start_offset = -1;
        pi->high_watermark = -1;
        if (mp->leader < 0) {
            pi->error_code = WEIR_ELEADER_NOT_AVAILABLE;
        }
        m->part_ptrs[(*next_part)++] = pi;
    }
    if (!configs) {
        return;
    }
    ti->configs = &m->cfg_ptrs[*next_cfg];
    ti->n_configs = t->n_configs;
    for (p = 0; p < t->n_configs; p++) {
        Weir__ConfigEntry *e = &m->cfgs[*next_cfg];
        weir__config_entry__init(e);
        e->key = t->configs[p].key;
        e->value = t->configs[p].value;
        m->cfg_ptrs[(*next_cfg)++] = e;
    }
}

int meta_pb_build(const struct meta_image *img,
                  const Weir__MetadataRequest *mr,
                  Weir__MetadataResponse *body,
                  struct meta_pb *m)
{
    bool all = mr->all_topics || mr->n_topics == 0;
    size_t n_topics = all ? meta_image_topic_count(img) : mr->n_topics;
    size_t n_parts = 0;
    size_t n_cfgs = 0;
    size_t next_part = 0;
    size_t next_cfg = 0;
    size_t i;

    for (i = 0; i < n_topics; i++) {
        const struct meta_topic *t = meta_pb_topic(img, mr, all, i);
        if (t != NULL) {
            n_parts += t->n_partitions;
            n_cfgs += t->n_configs;
        }
    }
    if (meta_pb_alloc(m, meta_image_broker_count(img), n_topics, n_parts,
                      n_cfgs) != 0) {
        return WEIR_ENOMEM;
    }
    meta_pb_brokers(img, body, m);
    for (i = 0; i < n_topics; i++) {
        const struct meta_topic *t = meta_pb_topic(img, mr, all, i);
        Weir__TopicInfo *ti = &m->topics[i];
        weir__topic_info__init(ti);
        m->topic_ptrs[i] = ti;
        if (t == NULL) {
            ti->name = mr->topics[i];
            ti->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
            ti->error_message = "unknown topic";
            continue;
        }
        ti->name = t->name;
        ti->internal = names_topic_internal(t->name);
        meta_pb_fill_topic(t, mr->include_configs, ti, m, &next_part,
                           &next_cfg);
    }
    body->topics = m->topic_ptrs;
    body->n_topics = n_topics;
    return 0;
}

void meta_pb_free(struct meta_pb *m)
{
    mem_free(m->brokers);
    mem_free(m->broker_ptrs);
    mem_free(m->topics);
    mem_free(m->topic_ptrs);
    mem_free(m->parts);
    mem_free(m->part_ptrs);
    mem_free(m->cfgs);
    mem_free(m->cfg_ptrs);
    memset(m, 0, sizeof(*m));
}
