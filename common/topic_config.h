/* SPDX-License-Identifier: Apache-2.0 */
/* Topic configuration keys: the one table of every key a topic may set,
 * with a validator per key. The controller (CreateTopics), the standalone
 * broker (CreateTopics) and the partition logs (logmgr_config.c) all go
 * through it, so what is accepted and what is applied never disagree: an
 * unknown key, a value that does not parse or is out of range is refused
 * with WEIR_EINVALID_CONFIG naming the key and the reason. Pure: no I/O.
 * Callers check that no key is given twice.
 * Locality: any thread. */
#ifndef COMMON_TOPIC_CONFIG_H
#define COMMON_TOPIC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum topic_config_key {
    TOPIC_CONFIG_SEGMENT_BYTES,
    TOPIC_CONFIG_SEGMENT_MS,
    TOPIC_CONFIG_RETENTION_MS,
    TOPIC_CONFIG_RETENTION_BYTES,
    TOPIC_CONFIG_INDEX_INTERVAL_BYTES,
    TOPIC_CONFIG_MAX_MESSAGE_BYTES,
    TOPIC_CONFIG_FLUSH_POLICY,
    TOPIC_CONFIG_FLUSH_MS,
    TOPIC_CONFIG_FLUSH_MESSAGES,
    TOPIC_CONFIG_CLEANUP_POLICY,
    TOPIC_CONFIG_DELETE_RETENTION_MS,
    TOPIC_CONFIG_MIN_COMPACTION_LAG_MS,
    TOPIC_CONFIG_MIN_CLEANABLE_DIRTY_RATIO,
    TOPIC_CONFIG_MIN_INSYNC_REPLICAS, /* the cluster's, not the log's */
    TOPIC_CONFIG_KEY_COUNT,
};

/* flush.policy values */
enum topic_config_flush {
    TOPIC_CONFIG_FLUSH_ACK,      /* "ack" */
    TOPIC_CONFIG_FLUSH_INTERVAL, /* "interval" */
    TOPIC_CONFIG_FLUSH_NEVER,    /* "never" */
};

/* cleanup.policy bits */
#define TOPIC_CONFIG_CLEANUP_DELETE  1u
#define TOPIC_CONFIG_CLEANUP_COMPACT 2u

/* One parsed value; which member is set depends on the key. */
struct topic_config_value {
    enum topic_config_key key;
    int64_t i;      /* integer keys, min.insync.replicas */
    uint32_t bits;  /* cleanup.policy: TOPIC_CONFIG_CLEANUP_* */
    uint32_t flush; /* flush.policy: enum topic_config_flush */
    double ratio;   /* min.cleanable.dirty.ratio, in [0, 1] */
};

/* The key's name ("retention.ms"); NULL past the last key. */
const char *topic_config_key_name(enum topic_config_key key);

/* True for keys the partition logs apply (all but min.insync.replicas). */
bool topic_config_is_log_key(enum topic_config_key key);

/* Parse and check one key=value. replication_factor bounds
 * min.insync.replicas (1..replication_factor); 0 means unknown (then only
 * 1..32767 is checked). The error message names the key, the value and
 * what was expected; an unknown key's lists the valid keys.
 * Errors: WEIR_EINVALID_CONFIG. */
WEIR_MUST_CHECK int topic_config_parse(const char *key,
                                       const char *value,
                                       int32_t replication_factor,
                                       struct topic_config_value *out,
                                       struct err_detail *ed);

#endif /* COMMON_TOPIC_CONFIG_H */
