/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct logmgr, shared by the logmgr_*.c files only.
 * Locality: broker loop thread only. */
#ifndef BROKER_STORAGE_LOGMGR_INT_H
#define BROKER_STORAGE_LOGMGR_INT_H

#include <stdint.h>

#include "broker/storage/logmgr.h"
#include "common/buf.h"

#define LOGMGR_MANIFEST     "topics.meta"
#define LOGMGR_MANIFEST_MAX (64 * 1024 * 1024)
#define LOGMGR_VERSION_LINE "weir-topics 1"

/* One topic. Owned by the logmgr's topic array. */
struct logmgr_rec {
    char *name; /* validated with names_topic_check */
    int32_t partitions;
    int32_t replication_factor;
    int64_t topic_id; /* the cluster's id of the topic, -1 unknown */
    uint32_t n_configs;
    struct logmgr_kv *configs; /* owned strings, as given at create */
    struct plog_config cfg;    /* effective: defaults + configs */
    struct plog **logs;        /* [partitions]; NULL until opened */
};

struct logmgr {
    const struct storage_ops *ops;
    char *data_dir; /* owned */
    struct plog_config defaults;
    struct logmgr_rec **topics; /* owned; sorted by name */
    uint32_t n_topics;
    uint32_t cap_topics;
    uint32_t compact_next;      /* partition (counted over all topics in order)
                                   where the next compaction search starts */
    uint32_t scrub_topic;       /* where the next scrub starts: topic index */
    int32_t scrub_part;         /* ... and partition (hints, clamped) */
    plog_offline_fn offline_fn; /* set on every log opened */
    void *offline_arg;
    logmgr_opened_fn opened_fn; /* told of every log opened after it is set */
    void *opened_arg;
};

/* The partition at flat index k (counted over all topics in name order);
 * false past the last one. */
bool logmgr_flat(const struct logmgr *m,
                 uint32_t k,
                 struct logmgr_rec **r,
                 int32_t *p);
/* Partitions over all topics. */
uint32_t logmgr_partition_count(const struct logmgr *m);

/* A record with copies of name and configs; logs not opened.
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_rec_new(const char *name,
                                   int32_t partitions,
                                   int32_t replication_factor,
                                   const struct logmgr_kv *configs,
                                   uint32_t n_configs,
                                   const struct plog_config *cfg,
                                   struct logmgr_rec **out);
/* Frees logs without the clean marker (plog_free); NULL is a no-op. */
void logmgr_rec_free(struct logmgr_rec *r);
/* Index of name in m->topics, or -1 (*at gets the insertion point). */
int64_t logmgr_find(const struct logmgr *m, const char *name, uint32_t *at);
/* Insert r in name order (consumes r only on success). WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_insert(struct logmgr *m, struct logmgr_rec *r);
/* Take topic i out of the array (not freed). */
struct logmgr_rec *logmgr_remove_at(struct logmgr *m, uint32_t i);

/* logmgr_manifest.c: encode all topics / replace them from the file. */
WEIR_MUST_CHECK int logmgr_manifest_write(const struct logmgr *m,
                                          struct err_detail *ed);
/* Missing file: no topics. Errors: WEIR_ECORRUPT naming the file and line,
 * WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_manifest_read(struct logmgr *m,
                                         struct err_detail *ed);
/* logmgr_manifest_parse.c: decode the manifest text[0..len) (path only
 * names the file in messages) into m, which must hold no topics; m->defaults
 * is the base of every topic's config. Pure: no I/O, text is not changed.
 * Strict: every number a plain decimal in range, every name re-validated,
 * every config re-parsed, no NUL, nothing after the 'end' line. On failure
 * m holds no topics again. Errors: WEIR_ECORRUPT naming the file, line and
 * byte offset; WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_manifest_parse(struct logmgr *m,
                                          const char *text,
                                          size_t len,
                                          const char *path,
                                          struct err_detail *ed);

#endif /* BROKER_STORAGE_LOGMGR_INT_H */
