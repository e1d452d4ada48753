/* SPDX-License-Identifier: Apache-2.0 */
/* Topic configuration keys and their validators (see topic_config.h).
 * Values are strict: plain decimal integers (an optional '-', no spaces,
 * no suffixes), the exact words of an enumeration, a plain decimal
 * fraction. Anything else is refused rather than read as a default, so a
 * typo never silently becomes "keep the broker's setting". */
#include "common/topic_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"

enum topic_config_kind {
    TOPIC_CONFIG_KIND_INT,
    TOPIC_CONFIG_KIND_FLUSH,
    TOPIC_CONFIG_KIND_CLEANUP,
    TOPIC_CONFIG_KIND_RATIO,
    TOPIC_CONFIG_KIND_REPLICAS, /* 1..the replication factor */
};

struct topic_config_def {
    const char *name;
    enum topic_config_kind kind;
    int64_t min; /* integer kinds */
    int64_t max;
};

/* In enum topic_config_key order. Positions in a segment are 32-bit,
 * hence the INT32_MAX bounds on sizes. */
static const struct topic_config_def topic_config_defs[] = {
    [TOPIC_CONFIG_SEGMENT_BYTES] = {"segment.bytes", TOPIC_CONFIG_KIND_INT,
                                    BATCH_HEADER_BYTES, INT32_MAX},
    [TOPIC_CONFIG_SEGMENT_MS] = {"segment.ms", TOPIC_CONFIG_KIND_INT, 1,
                                 INT64_MAX},
    [TOPIC_CONFIG_RETENTION_MS] = {"retention.ms", TOPIC_CONFIG_KIND_INT, -1,
                                   INT64_MAX},
    [TOPIC_CONFIG_RETENTION_BYTES] = {"retention.bytes", TOPIC_CONFIG_KIND_INT,
                                      -1, INT64_MAX},
    [TOPIC_CONFIG_INDEX_INTERVAL_BYTES] = {"index.interval.bytes",
                                           TOPIC_CONFIG_KIND_INT, 0, INT32_MAX},
    [TOPIC_CONFIG_MAX_MESSAGE_BYTES] = {"max.message.bytes",
                                        TOPIC_CONFIG_KIND_INT,
                                        BATCH_HEADER_BYTES, INT32_MAX},
    [TOPIC_CONFIG_FLUSH_POLICY] = {"flush.policy", TOPIC_CONFIG_KIND_FLUSH, 0,
                                   0},
    [TOPIC_CONFIG_FLUSH_MS] = {"flush.ms", TOPIC_CONFIG_KIND_INT, 0, INT64_MAX},
    [TOPIC_CONFIG_FLUSH_MESSAGES] = {"flush.messages", TOPIC_CONFIG_KIND_INT, 1,
                                     INT64_MAX},
    [TOPIC_CONFIG_CLEANUP_POLICY] = {"cleanup.policy",
                                     TOPIC_CONFIG_KIND_CLEANUP, 0, 0},
    [TOPIC_CONFIG_DELETE_RETENTION_MS] = {"delete.retention.ms",
                                          TOPIC_CONFIG_KIND_INT, 0, INT64_MAX},
    [TOPIC_CONFIG_MIN_COMPACTION_LAG_MS] = {"min.compaction.lag.ms",
                                            TOPIC_CONFIG_KIND_INT, 0,
                                            INT64_MAX},
    [TOPIC_CONFIG_MIN_CLEANABLE_DIRTY_RATIO] = {"min.cleanable.dirty.ratio",
                                                TOPIC_CONFIG_KIND_RATIO, 0, 0},
    [TOPIC_CONFIG_MIN_INSYNC_REPLICAS] = {"min.insync.replicas",
                                          TOPIC_CONFIG_KIND_REPLICAS, 1,
                                          INT16_MAX},
};

_Static_assert(sizeof(topic_config_defs) / sizeof(topic_config_defs[0]) ==
                   TOPIC_CONFIG_KEY_COUNT,
               "one definition per key");

const char *topic_config_key_name(enum topic_config_key key)
{
    return (unsigned)key < TOPIC_CONFIG_KEY_COUNT ? topic_config_defs[key].name
                                                  : NULL;
}

bool topic_config_is_log_key(enum topic_config_key key)
{
    return (unsigned)key < TOPIC_CONFIG_KEY_COUNT &&
           key != TOPIC_CONFIG_MIN_INSYNC_REPLICAS;
}

/* Plain decimal with an optional '-'; false on anything else or on
 * overflow. No strtoll: it skips spaces and accepts '+'. */
static bool topic_config_parse_i64(const char *s, int64_t *out)
{
    bool neg = *s == '-';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;

    s += neg;
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        unsigned d = (unsigned)(*s - '0');

        if (d > 9 || v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v)
               : (int64_t)v;
    return true;
}

static int topic_config_int(const struct topic_config_def *d,
                            const char *value,
                            int64_t max,
                            const char *note,
                            struct topic_config_value *out,
                            struct err_detail *ed)
{
    if (!topic_config_parse_i64(value, &out->i) || out->i < d->min ||
        out->i > max) {
        return err_set(ed, WEIR_EINVALID_CONFIG,
                       "invalid value '%s' for %s: expected an integer in "
                       "[%lld, %lld]%s",
                       value, d->name, (long long)d->min, (long long)max, note);
    }
    return 0;
}

static int topic_config_flush(const struct topic_config_def *d,
                              const char *value,
                              struct topic_config_value *out,
                              struct err_detail *ed)
{
    static const char *const words[] = {
        [TOPIC_CONFIG_FLUSH_ACK] = "ack",
        [TOPIC_CONFIG_FLUSH_INTERVAL] = "interval",
        [TOPIC_CONFIG_FLUSH_NEVER] = "never",
    };
    uint32_t i;

    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strcmp(value, words[i]) == 0) {
            out->flush = i;
            return 0;
        }
    }
    return err_set(ed, WEIR_EINVALID_CONFIG,
                   "invalid value '%s' for %s: expected ack, interval or "
                   "never",
                   value, d->name);
}

/* "delete", "compact", or both comma-separated (either order, once each,
 * no spaces: as Kafka lists them). */
static int topic_config_cleanup(const struct topic_config_def *d,
                                const char *value,
                                struct topic_config_value *out,
                                struct err_detail *ed)
{
    static const struct {
        const char *text;
        uint32_t bits;
    } forms[] = {
        {"delete", TOPIC_CONFIG_CLEANUP_DELETE},
        {"compact", TOPIC_CONFIG_CLEANUP_COMPACT},
        {"compact,delete",
         TOPIC_CONFIG_CLEANUP_COMPACT | TOPIC_CONFIG_CLEANUP_DELETE},
        {"delete,compact",
         TOPIC_CONFIG_CLEANUP_COMPACT | TOPIC_CONFIG_CLEANUP_DELETE},
    };
    size_t i;

    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        if (strcmp(value, forms[i].text) == 0) {
            out->bits = forms[i].bits;
            return 0;
        }
    }
    return err_set(ed, WEIR_EINVALID_CONFIG,
                   "invalid value '%s' for %s: expected delete, compact or "
                   "compact,delete",
                   value, d->name);
}

/* A plain decimal fraction in [0, 1] ("0.5", "1", "0"): digits, then
 * optionally '.' and digits; checked before strtod sees it. */
static int topic_config_ratio(const struct topic_config_def *d,
                              const char *value,
                              struct topic_config_value *out,
                              struct err_detail *ed)
{
    const char *p = value;
    double v = -1.0;

    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (*value != '\0' && *value != '.' && *p == '\0' && p - value <= 64) {
        v = strtod(value, NULL);
    }
    if (!(v >= 0.0 && v <= 1.0)) {
        return err_set(ed, WEIR_EINVALID_CONFIG,
                       "invalid value '%s' for %s: expected a number in "
                       "[0, 1]",
                       value, d->name);
    }
    out->ratio = v;
    return 0;
}

/* "unknown topic config 'k'; valid keys: a, b, ..." */
static int topic_config_unknown(const char *key, struct err_detail *ed)
{
    char list[400];
    size_t used = 0;
    unsigned i;

    list[0] = '\0';
    for (i = 0; i < TOPIC_CONFIG_KEY_COUNT && used < sizeof(list); i++) {
        int n = snprintf(list + used, sizeof(list) - used, "%s%s",
                         i > 0 ? ", " : "", topic_config_defs[i].name);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
    return err_set(ed, WEIR_EINVALID_CONFIG,
                   "unknown topic config '%.64s'; valid keys: %s", key, list);
}

int topic_config_parse(const char *key,
                       const char *value,
                       int32_t replication_factor,
                       struct topic_config_value *out,
                       struct err_detail *ed)
{
    const struct topic_config_def *d = NULL;
    unsigned i;

    memset(out, 0, sizeof(*out));
    if (key == NULL || value == NULL) {
        return err_set(ed, WEIR_EINVALID_CONFIG, "topic config %s has no %s",
                       key != NULL ? key : "(null)",
                       key == NULL ? "key" : "value");
    }
    for (i = 0; i < TOPIC_CONFIG_KEY_COUNT && d == NULL; i++) {
        if (strcmp(topic_config_defs[i].name, key) == 0) {
            d = &topic_config_defs[i];
            out->key = (enum topic_config_key)i;
        }
    }
    if (d == NULL) {
        return topic_config_unknown(key, ed);
    }
    switch (d->kind) {
    case TOPIC_CONFIG_KIND_FLUSH:
        return topic_config_flush(d, value, out, ed);
    case TOPIC_CONFIG_KIND_CLEANUP:
        return topic_config_cleanup(d, value, out, ed);
    case TOPIC_CONFIG_KIND_RATIO:
        return topic_config_ratio(d, value, out, ed);
    case TOPIC_CONFIG_KIND_REPLICAS:
        if (replication_factor > 0) {
            return topic_config_int(d, value, replication_factor,
                                    " (at most the replication factor)", out,
                                    ed);
        }
        break;
    case TOPIC_CONFIG_KIND_INT:
        break;
    }
    return topic_config_int(d, value, d->max, "", out, ed);
}
