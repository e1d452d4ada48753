/* SPDX-License-Identifier: Apache-2.0 */
/* Topic configuration over the broker defaults. The keys, their syntax
 * and their ranges are common/topic_config.c's, the same table the
 * controller checks a CreateTopics against, so a config the cluster
 * accepted is one every broker applies. Strict: unknown keys, repeated
 * keys and values out of range are refused, naming the key and value. */
#include <string.h>

#include "broker/storage/logmgr.h"
#include "common/topic_config.h"

/* The logs of this manager hold one replica of a topic (their own): in a
 * standalone broker that is the topic's replication factor, and in a
 * cluster the broker passes only the keys its logs apply. */
#define LOGMGR_LOCAL_REPLICAS 1

static void logmgr_apply(const struct topic_config_value *v,
                         struct plog_config *cfg)
{
    switch (v->key) {
    case TOPIC_CONFIG_SEGMENT_BYTES:
        cfg->segment_bytes = (uint64_t)v->i;
        break;
    case TOPIC_CONFIG_SEGMENT_MS:
        cfg->segment_ms = v->i;
        break;
    case TOPIC_CONFIG_RETENTION_MS:
        cfg->retention_ms = v->i;
        break;
    case TOPIC_CONFIG_RETENTION_BYTES:
        cfg->retention_bytes = v->i;
        break;
    case TOPIC_CONFIG_INDEX_INTERVAL_BYTES:
        cfg->index_interval_bytes = (uint32_t)v->i;
        break;
    case TOPIC_CONFIG_MAX_MESSAGE_BYTES:
        cfg->max_batch_bytes = (uint32_t)v->i;
        break;
    case TOPIC_CONFIG_FLUSH_POLICY:
        cfg->flush_policy = v->flush == TOPIC_CONFIG_FLUSH_ACK ? PLOG_FLUSH_ACK
                            : v->flush == TOPIC_CONFIG_FLUSH_INTERVAL
                                ? PLOG_FLUSH_INTERVAL
                                : PLOG_FLUSH_NEVER;
        break;
    case TOPIC_CONFIG_FLUSH_MS:
        cfg->flush_ms = v->i;
        break;
    case TOPIC_CONFIG_FLUSH_MESSAGES:
        cfg->flush_messages = v->i;
        break;
    case TOPIC_CONFIG_CLEANUP_POLICY:
        cfg->cleanup_policy =
            ((v->bits & TOPIC_CONFIG_CLEANUP_DELETE) ? PLOG_CLEANUP_DELETE
                                                     : 0u) |
            ((v->bits & TOPIC_CONFIG_CLEANUP_COMPACT) ? PLOG_CLEANUP_COMPACT
                                                      : 0u);
        break;
    case TOPIC_CONFIG_DELETE_RETENTION_MS:
        cfg->delete_retention_ms = v->i;
        break;
    case TOPIC_CONFIG_MIN_COMPACTION_LAG_MS:
        cfg->min_compaction_lag_ms = v->i;
        break;
    case TOPIC_CONFIG_MIN_CLEANABLE_DIRTY_RATIO:
        cfg->min_cleanable_dirty_ratio = v->ratio;
        break;
    case TOPIC_CONFIG_MIN_INSYNC_REPLICAS: /* valid, not the log's */
    case TOPIC_CONFIG_KEY_COUNT:
        break;
    }
}

int logmgr_parse_topic_config(const struct plog_config *defaults,
                              const struct logmgr_kv *kv,
                              uint32_t n,
                              struct plog_config *out,
                              struct err_detail *ed)
{
    struct topic_config_value v;
    uint32_t i;
    uint32_t j;
    int rv;

    *out = *defaults;
    for (i = 0; i < n; i++) {
        rv = topic_config_parse(kv[i].key, kv[i].value, LOGMGR_LOCAL_REPLICAS,
                                &v, ed);
        if (rv != 0) {
            return rv;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(kv[j].key, kv[i].key) == 0) {
                return err_set(ed, WEIR_EINVALID_CONFIG,
                               "topic config %s is given twice", kv[i].key);
            }
        }
        logmgr_apply(&v, out);
    }
    return 0;
}
