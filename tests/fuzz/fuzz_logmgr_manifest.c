/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the topic manifest decoder (broker/storage/
 * logmgr_manifest_parse.c), on a log manager with no storage. Oracles: a
 * refusal is WEIR_ECORRUPT (or WEIR_ENOMEM) with a message naming the file
 * and leaves no topics; an accepted manifest gives topics with valid
 * names in strict name order, counts in range and configs that re-parse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/logmgr_int.h"
#include "common/mem.h"
#include "common/names.h"

#define FUZZ_PATH "/fuzz/topics.meta"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_manifest_check(const struct logmgr *m)
{
    struct plog_config cfg;
    uint32_t i;

    for (i = 0; i < m->n_topics; i++) {
        const struct logmgr_rec *r = m->topics[i];

        if (names_topic_check(r->name, strlen(r->name), NULL) != 0 ||
            r->partitions < 1 || r->partitions > LOGMGR_MAX_PARTITIONS ||
            r->replication_factor < 0 || r->topic_id < -1 ||
            r->n_configs > 32 ||
            (i > 0 && strcmp(m->topics[i - 1]->name, r->name) >= 0) ||
            logmgr_parse_topic_config(&m->defaults, r->configs, r->n_configs,
                                      &cfg, NULL) != 0 ||
            cfg.segment_bytes != r->cfg.segment_bytes ||
            cfg.retention_ms != r->cfg.retention_ms) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err_detail ed;
    struct logmgr m;
    char *copy = malloc(size > 0 ? size : 1);
    int rv;

    if (copy == NULL) {
        abort();
    }
    /* exactly the bytes decoded, so ASan sees any read past them */
    memcpy(copy, data, size);
    memset(&m, 0, sizeof(m));
    plog_config_defaults(&m.defaults);
    err_detail_clear(&ed);
    rv = logmgr_manifest_parse(&m, copy, size, FUZZ_PATH, &ed);
    free(copy);
    if (rv != 0) {
        if ((rv != WEIR_ECORRUPT && rv != WEIR_ENOMEM) || ed.code != rv ||
            strstr(ed.msg, FUZZ_PATH) == NULL || m.n_topics != 0) {
            abort();
        }
    } else {
        fuzz_manifest_check(&m);
    }
    while (m.n_topics > 0) {
        logmgr_rec_free(logmgr_remove_at(&m, m.n_topics - 1));
    }
    mem_free(m.topics);
    return 0;
}
