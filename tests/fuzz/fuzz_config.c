/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: configuration text. The input is an INI document applied
 * with cfg_load_string over a small options table; the same bytes also go
 * through cfg_set as "name=value", through the integer and boolean
 * parsers, and as a topic config "key=value" through topic_config_parse
 * (what CreateTopics receives from any client). Oracles: only the
 * documented codes, accepted values inside their bounds, no leaks once
 * cfg_free has run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "common/mem.h"
#include "common/topic_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_conf {
    char *data_dir;
    char *rack;
    int64_t port;
    int64_t segment_bytes;
    bool verbose;
};

static const struct cfg_option fuzz_opts[] = {
    {"data-dir", CFG_STR, "/var/lib/weir", "",
     offsetof(struct fuzz_conf, data_dir), 0, 0},
    {"rack", CFG_STR, NULL, "", offsetof(struct fuzz_conf, rack), 0, 0},
    {"port", CFG_INT, "9092", "", offsetof(struct fuzz_conf, port), 1, 65535},
    {"segment-bytes", CFG_INT, "1g", "",
     offsetof(struct fuzz_conf, segment_bytes), 4096, INT64_MAX},
    {"verbose", CFG_BOOL, "false", "", offsetof(struct fuzz_conf, verbose), 0,
     0},
};

#define FUZZ_N_OPTS (sizeof(fuzz_opts) / sizeof(fuzz_opts[0]))

static void fuzz_config_check(const struct fuzz_conf *c,
                              int rv,
                              const struct err_detail *ed)
{
    if (rv != 0) {
        if ((rv != WEIR_ECONFIG && rv != WEIR_ENOMEM) || ed->code != rv) {
            abort();
        }
        return;
    }
    if (c->port < 1 || c->port > 65535 || c->segment_bytes < 4096 ||
        c->data_dir == NULL) {
        abort();
    }
}

/* A topic config as CreateTopics carries it; the replication factor
 * comes from the input's length so every bound is reached. */
static void fuzz_topic_config(const char *key, const char *value, size_t size)
{
    int32_t rf = (int32_t)(size % 6);
    struct topic_config_value v;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = topic_config_parse(key, value, rf, &v, &ed);
    if (rv != 0) {
        if (rv != WEIR_EINVALID_CONFIG || ed.code != rv || ed.msg[0] == '\0') {
            abort();
        }
        return;
    }
    if (strcmp(topic_config_key_name(v.key), key) != 0) {
        abort();
    }
    if (v.key == TOPIC_CONFIG_MIN_INSYNC_REPLICAS &&
        (v.i < 1 || v.i > (rf > 0 ? rf : INT16_MAX))) {
        abort();
    }
    if (v.key == TOPIC_CONFIG_MIN_CLEANABLE_DIRTY_RATIO &&
        !(v.ratio >= 0.0 && v.ratio <= 1.0)) {
        abort();
    }
    if (v.key == TOPIC_CONFIG_CLEANUP_POLICY &&
        (v.bits == 0 || (v.bits & ~(TOPIC_CONFIG_CLEANUP_DELETE |
                                    TOPIC_CONFIG_CLEANUP_COMPACT)) != 0)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_conf c;
    struct err_detail ed;
    char *text;
    char *eq;
    int64_t iv;
    bool bv;
    int rv;

    text = mem_malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';

    memset(&c, 0, sizeof(c));
    rv = cfg_defaults(fuzz_opts, FUZZ_N_OPTS, &c, &ed);
    if (rv == 0) {
        rv = cfg_load_string(fuzz_opts, FUZZ_N_OPTS, &c, text, "fuzz", &ed);
        fuzz_config_check(&c, rv, &ed);
    }
    cfg_free(fuzz_opts, FUZZ_N_OPTS, &c);

    /* only "0" and "1" read as both an integer and a boolean */
    if (cfg_parse_int(text, &iv) == 0 && cfg_parse_bool(text, &bv) == 0 &&
        iv != (int64_t)bv) {
        abort();
    }

    /* the same bytes as one "name=value" setting (a flag or env var) */
    eq = strchr(text, '=');
    if (eq != NULL) {
        *eq = '\0';
        memset(&c, 0, sizeof(c));
        if (cfg_defaults(fuzz_opts, FUZZ_N_OPTS, &c, &ed) == 0) {
            rv = cfg_set(fuzz_opts, FUZZ_N_OPTS, &c, text, eq + 1, "fuzz", &ed);
            fuzz_config_check(&c, rv, &ed);
        }
        cfg_free(fuzz_opts, FUZZ_N_OPTS, &c);
        fuzz_topic_config(text, eq + 1, size);
    }
    mem_free(text);
    return 0;
}
