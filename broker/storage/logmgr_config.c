/* SPDX-License-Identifier: Apache-2.0 */
/* Topic configuration: Kafka-style keys over the broker defaults. Strict:
 * unknown keys, repeated keys and values out of range are refused, naming
 * the key and the value. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/logmgr.h"
#include "common/batch.h"

enum logmgr_field {
    LOGMGR_F_U64,
    LOGMGR_F_I64,
    LOGMGR_F_U32,
    LOGMGR_F_FLUSH_POLICY,
    LOGMGR_F_CLEANUP_POLICY,
    LOGMGR_F_RATIO,
};

struct logmgr_key {
    const char *key;
    enum logmgr_field kind;
    size_t offset; /* in struct plog_config */
    int64_t min;
    int64_t max;
};

static const struct logmgr_key logmgr_keys[] = {
    /* positions in a segment are 32-bit, hence INT32_MAX */
    {"segment.bytes", LOGMGR_F_U64, offsetof(struct plog_config, segment_bytes),
     BATCH_HEADER_BYTES, INT32_MAX},
    {"segment.ms", LOGMGR_F_I64, offsetof(struct plog_config, segment_ms), 1,
     INT64_MAX},
    {"retention.ms", LOGMGR_F_I64, offsetof(struct plog_config, retention_ms),
     -1, INT64_MAX},
    {"retention.bytes", LOGMGR_F_I64,
     offsetof(struct plog_config, retention_bytes), -1, INT64_MAX},
    {"index.interval.bytes", LOGMGR_F_U32,
     offsetof(struct plog_config, index_interval_bytes), 0, INT32_MAX},
    {"max.message.bytes", LOGMGR_F_U32,
     offsetof(struct plog_config, max_batch_bytes), BATCH_HEADER_BYTES,
     INT32_MAX},
    {"flush.policy", LOGMGR_F_FLUSH_POLICY,
     offsetof(struct plog_config, flush_policy), 0, 0},
    {"flush.ms", LOGMGR_F_I64, offsetof(struct plog_config, flush_ms), 0,
     INT64_MAX},
    {"flush.messages", LOGMGR_F_I64,
     offsetof(struct plog_config, flush_messages), 1, INT64_MAX},
    {"cleanup.policy", LOGMGR_F_CLEANUP_POLICY, 0, 0, 0},
    {"delete.retention.ms", LOGMGR_F_I64,
     offsetof(struct plog_config, delete_retention_ms), 0, INT64_MAX},
    {"min.compaction.lag.ms", LOGMGR_F_I64,
     offsetof(struct plog_config, min_compaction_lag_ms), 0, INT64_MAX},
    {"min.cleanable.dirty.ratio", LOGMGR_F_RATIO, 0, 0, 0},
};

#define LOGMGR_N_KEYS (sizeof(logmgr_keys) / sizeof(logmgr_keys[0]))

/* Plain decimal, optional '-', nothing else (no spaces, no suffixes). */
static bool logmgr_parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (*s == '\0' || !(*s == '-' || (*s >= '0' && *s <= '9'))) {
        return false;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

static int logmgr_set_int(const struct logmgr_key *k,
                          const char *value,
                          struct plog_config *cfg,
                          struct err_detail *ed)
{
    char *field = (char *)cfg + k->offset;
    int64_t v;

    if (!logmgr_parse_i64(value, &v) || v < k->min || v > k->max) {
        return err_set(ed, WEIR_EINVALID_CONFIG,
                       "invalid value '%s' for %s: expected an integer in "
                       "[%lld, %lld]",
                       value, k->key, (long long)k->min, (long long)k->max);
    }
    switch (k->kind) {
    case LOGMGR_F_U64: {
        uint64_t u = (uint64_t)v;
        memcpy(field, &u, sizeof(u));
        break;
    }
    case LOGMGR_F_U32: {
        uint32_t u = (uint32_t)v;
        memcpy(field, &u, sizeof(u));
        break;
    }
    default:
        memcpy(field, &v, sizeof(v));
        break;
    }
    return 0;
}

/* "delete", "compact", or both comma-separated (either order, once each,
 * no spaces: as Kafka lists them). */
static int logmgr_set_cleanup(const struct logmgr_key *k,
                              const char *value,
                              struct plog_config *cfg,
                              struct err_detail *ed)
{
    static const struct {
        const char *text;
        uint32_t bits;
    } forms[] = {
        {"delete", PLOG_CLEANUP_DELETE},
        {"compact", PLOG_CLEANUP_COMPACT},
        {"compact,delete", PLOG_CLEANUP_COMPACT | PLOG_CLEANUP_DELETE},
        {"delete,compact", PLOG_CLEANUP_COMPACT | PLOG_CLEANUP_DELETE},
    };
    size_t i;

    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        if (strcmp(value, forms[i].text) == 0) {
            cfg->cleanup_policy = forms[i].bits;
            return 0;
        }
    }
    return err_set(ed, WEIR_EINVALID_CONFIG,
                   "invalid value '%s' for %s: expected delete, compact or "
                   "compact,delete",
                   value, k->key);
}

/* A plain decimal fraction in [0, 1] ("0.5", "1", "0"). */
static int logmgr_set_ratio(const struct logmgr_key *k,
                            const char *value,
                            struct plog_config *cfg,
                            struct err_detail *ed)
{
    const char *p = value;
    char *end;
    double v;

    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
        }
    }
    errno = 0;
    v = *value == '\0' || *value == '.' || *p != '\0' ? -1.0
                                                      : strtod(value, &end);
    if (errno != 0 || !(v >= 0.0 && v <= 1.0)) {
        return err_set(ed, WEIR_EINVALID_CONFIG,
                       "invalid value '%s' for %s: expected a number in "
                       "[0, 1]",
                       value, k->key);
    }
    cfg->min_cleanable_dirty_ratio = v;
    return 0;
}

static int logmgr_set_one(const struct logmgr_key *k,
                          const char *value,
                          struct plog_config *cfg,
                          struct err_detail *ed)
{
    switch (k->kind) {
    case LOGMGR_F_FLUSH_POLICY:
        if (strcmp(value, "ack") == 0) {
            cfg->flush_policy = PLOG_FLUSH_ACK;
        } else if (strcmp(value, "interval") == 0) {
            cfg->flush_policy = PLOG_FLUSH_INTERVAL;
        } else if (strcmp(value, "never") == 0) {
            cfg->flush_policy = PLOG_FLUSH_NEVER;
        } else {
            return err_set(ed, WEIR_EINVALID_CONFIG,
                           "invalid value '%s' for %s: expected ack, "
                           "interval or never",
                           value, k->key);
        }
        return 0;
    case LOGMGR_F_CLEANUP_POLICY:
        return logmgr_set_cleanup(k, value, cfg, ed);
    case LOGMGR_F_RATIO:
        return logmgr_set_ratio(k, value, cfg, ed);
    default:
        return logmgr_set_int(k, value, cfg, ed);
    }
}

int logmgr_parse_topic_config(const struct plog_config *defaults,
                              const struct logmgr_kv *kv,
                              uint32_t n,
                              struct plog_config *out,
                              struct err_detail *ed)
{
    uint32_t i;
    uint32_t j;
    size_t k;
    int rv;

    *out = *defaults;
    for (i = 0; i < n; i++) {
        if (kv[i].key == NULL || kv[i].value == NULL) {
            return err_set(ed, WEIR_EINVALID_CONFIG,
                           "topic config %u has no key or no value", i);
        }
        for (j = 0; j < i; j++) {
            if (strcmp(kv[j].key, kv[i].key) == 0) {
                return err_set(ed, WEIR_EINVALID_CONFIG,
                               "topic config %s is given twice", kv[i].key);
            }
        }
        for (k = 0; k < LOGMGR_N_KEYS; k++) {
            if (strcmp(logmgr_keys[k].key, kv[i].key) == 0) {
                break;
            }
        }
        if (k == LOGMGR_N_KEYS) {
            return err_set(ed, WEIR_EINVALID_CONFIG,
                           "unknown topic config '%s' (value '%s')", kv[i].key,
                           kv[i].value);
        }
        rv = logmgr_set_one(&logmgr_keys[k], kv[i].value, out, ed);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}
