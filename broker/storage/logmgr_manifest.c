/* SPDX-License-Identifier: Apache-2.0 */
/* The topic manifest, <data_dir>/topics.meta, a line-based text file:
 *
 *   weir-topics 1
 *   topic <name> <partitions> <replication factor> <config count> [id=<n>]
 *   config <key> <value>          (config count lines)
 *   ...
 *   end <topic count>
 *
 * Written atomically (temp, fsync, rename, directory fsync); read and
 * decoded by logmgr_manifest_parse (logmgr_manifest_parse.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/logmgr_int.h"
#include "common/mem.h"
#include "common/names.h"

int logmgr_manifest_write(const struct logmgr *m, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    char line[512];
    struct weir_buf b;
    uint32_t i;
    uint32_t j;
    int rv;

    rv = storage_join(path, sizeof(path), m->data_dir, LOGMGR_MANIFEST, ed);
    if (rv != 0) {
        return rv;
    }
    buf_init(&b);
    buf_put(&b, LOGMGR_VERSION_LINE "\n", strlen(LOGMGR_VERSION_LINE) + 1);
    for (i = 0; i < m->n_topics; i++) {
        const struct logmgr_rec *r = m->topics[i];
        int n =
            r->topic_id >= 0
                ? snprintf(line, sizeof(line), "topic %s %d %d %u id=%lld\n",
                           r->name, r->partitions, r->replication_factor,
                           r->n_configs, (long long)r->topic_id)
                : snprintf(line, sizeof(line), "topic %s %d %d %u\n", r->name,
                           r->partitions, r->replication_factor, r->n_configs);
        buf_put(&b, line, (size_t)n);
        for (j = 0; j < r->n_configs; j++) {
            buf_put(&b, "config ", 7);
            buf_put(&b, r->configs[j].key, strlen(r->configs[j].key));
            buf_put(&b, " ", 1);
            buf_put(&b, r->configs[j].value, strlen(r->configs[j].value));
            buf_put(&b, "\n", 1);
        }
    }
    (void)snprintf(line, sizeof(line), "end %u\n", m->n_topics);
    buf_put(&b, line, strlen(line));
    if (!buf_ok(&b)) {
        rv = err_set(ed, WEIR_ENOMEM, "writing %s: out of memory", path);
    } else {
        rv = storage_write_atomic(m->ops, m->data_dir, path, b.data, b.len, ed);
    }
    buf_fini(&b);
    return rv;
}

int logmgr_manifest_read(struct logmgr *m, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    char *text;
    size_t len;
    int rv;

    rv = storage_join(path, sizeof(path), m->data_dir, LOGMGR_MANIFEST, ed);
    if (rv != 0) {
        return rv;
    }
    rv = storage_read_small(m->ops, path, LOGMGR_MANIFEST_MAX, &text, &len, ed);
    if (rv == WEIR_ENOT_FOUND) {
        return 0; /* a new data directory */
    }
    if (rv != 0) {
        if (rv == WEIR_ECORRUPT) {
            err_wrap(ed, "topic manifest %s", path);
        }
        return rv;
    }
    rv = logmgr_manifest_parse(m, text, len, path, ed);
    mem_free(text);
    return rv;
}
