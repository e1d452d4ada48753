/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the identity files of a data directory (common/
 * metaprops.c): every input is parsed as meta.properties and as a stamp
 * (the files a broker keeps per cluster: clean-shutdown-epoch, and
 * metadata-offset with its optional chain line). Oracles: a refusal is
 * WEIR_ECORRUPT with a message; an accepted file has valid (or empty) ids and
 * numbers in range, and formats back to text that parses to the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/metaprops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_metaprops_check(const struct metaprops *p)
{
    size_t c = strlen(p->cluster_id);
    size_t d = strlen(p->directory_id);

    if ((c > 0 && !metaprops_id_valid(p->cluster_id, c)) ||
        (d > 0 && !metaprops_id_valid(p->directory_id, d)) || p->node_id < -1 ||
        p->node_id > INT32_MAX) {
        abort();
    }
}

static void fuzz_metaprops_stamp(const char *text, size_t size)
{
    char cluster[METAPROPS_ID_MAX + 1];
    char back_cluster[METAPROPS_ID_MAX + 1];
    struct err_detail ed;
    struct weir_buf b;
    int64_t v = -1;
    int64_t back = -1;
    int rv;

    err_detail_clear(&ed);
    rv = metaprops_parse_stamp(text, size, "broker.epoch", cluster, &v, &ed);
    if (rv != 0) {
        if (rv != WEIR_ECORRUPT || ed.code != rv || ed.msg[0] == '\0') {
            abort();
        }
        return;
    }
    if (v < 0 || !metaprops_id_valid(cluster, strlen(cluster))) {
        abort();
    }
    buf_init(&b);
    if (metaprops_format_stamp(cluster, "broker.epoch", v, &b) != 0 ||
        metaprops_parse_stamp((const char *)b.data, b.len, "broker.epoch",
                              back_cluster, &back, &ed) != 0 ||
        back != v || strcmp(back_cluster, cluster) != 0) {
        abort();
    }
    buf_fini(&b);
}

/* The metadata-offset stamp: an offset and, on an optional third line,
 * the chain value of the history there. */
static void fuzz_metaprops_stamp2(const char *text, size_t size)
{
    char cluster[METAPROPS_ID_MAX + 1];
    char back_cluster[METAPROPS_ID_MAX + 1];
    struct err_detail ed;
    struct weir_buf b;
    int64_t v = -1;
    int64_t v2 = -2;
    int64_t back = -1;
    int64_t back2 = -2;
    int rv;

    err_detail_clear(&ed);
    rv = metaprops_parse_stamp2(text, size, "metadata.end_offset",
                                "metadata.chain", cluster, &v, &v2, &ed);
    if (rv != 0) {
        if (rv != WEIR_ECORRUPT || ed.code != rv || ed.msg[0] == '\0') {
            abort();
        }
        return;
    }
    if (v < 0 || v2 < -1 || !metaprops_id_valid(cluster, strlen(cluster))) {
        abort();
    }
    buf_init(&b);
    if (metaprops_format_stamp2(cluster, "metadata.end_offset", v,
                                "metadata.chain", v2, &b) != 0 ||
        metaprops_parse_stamp2((const char *)b.data, b.len,
                               "metadata.end_offset", "metadata.chain",
                               back_cluster, &back, &back2, &ed) != 0 ||
        back != v || back2 != v2 || strcmp(back_cluster, cluster) != 0) {
        abort();
    }
    buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct metaprops p;
    struct metaprops back;
    struct err_detail ed;
    struct weir_buf b;
    char *copy = malloc(size > 0 ? size : 1);
    int rv;

    if (copy == NULL) {
        abort();
    }
    /* exactly the bytes parsed, so ASan sees any read past them */
    memcpy(copy, data, size);
    fuzz_metaprops_stamp(copy, size);
    fuzz_metaprops_stamp2(copy, size);
    err_detail_clear(&ed);
    rv = metaprops_parse(copy, size, &p, &ed);
    free(copy);
    if (rv != 0) {
        if (rv != WEIR_ECORRUPT || ed.code != rv || ed.msg[0] == '\0') {
            abort();
        }
        return 0;
    }
    fuzz_metaprops_check(&p);
    buf_init(&b);
    if (metaprops_format(&p, &b) != 0 ||
        metaprops_parse((const char *)b.data, b.len, &back, &ed) != 0 ||
        memcmp(&p, &back, sizeof(p)) != 0) {
        abort();
    }
    buf_fini(&b);
    return 0;
}
