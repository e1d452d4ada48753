/* SPDX-License-Identifier: Apache-2.0 */
/* Log manager: the data directory of one broker. Holds the topic manifest
 * (<data_dir>/topics.meta, written atomically) and one plog per partition
 * (<data_dir>/<topic>-<partition>/). Topic names are checked with
 * names_topic_check before any path is built from them.
 * Deleting a topic renames its partition directories to
 * <topic>-<partition>.<wall_ms>.delete, rewrites the manifest, then removes
 * them; leftovers of that kind are removed on open. Directories the
 * manifest does not know are left alone with a warning.
 * Locality: broker loop thread only. */
#ifndef BROKER_STORAGE_LOGMGR_H
#define BROKER_STORAGE_LOGMGR_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/storage/plog.h"
#include "broker/storage/storage_ops.h"
#include "common/err.h"

#define LOGMGR_MAX_PARTITIONS 10000

struct logmgr; /* opaque */

struct logmgr_kv {
    const char *key;
    const char *value;
};

/* Read-only view of one topic; valid until the next create/delete. */
struct logmgr_topic {
    const char *name;
    int32_t partitions;
    int32_t replication_factor;
    int64_t topic_id;   /* the cluster's id of the topic, -1 unknown */
    uint32_t n_configs; /* only the keys set explicitly at create time */
    const struct logmgr_kv *configs;
    const struct plog_config *log_config; /* effective */
};

/* Open the data directory (created if missing), read the manifest, open
 * every partition log (running recovery where the last stop was unclean).
 * `defaults` are the broker-wide log settings that topic configs override.
 * Errors: WEIR_EIO, WEIR_ECORRUPT (manifest unreadable, partition refuses
 * to open: the message names the directory), WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_open(const struct storage_ops *ops,
                                const char *data_dir,
                                const struct plog_config *defaults,
                                int64_t wall_ms,
                                struct logmgr **out,
                                struct err_detail *ed);
/* Close every log cleanly (plog_close) and free. Returns how many logs
 * could not be closed cleanly (offline, or a failed fsync at the close):
 * their next open recovers, and the broker's stop was not clean. NULL is
 * a no-op (0). */
uint32_t logmgr_close(struct logmgr *m);

/* Parse topic configs over the defaults into *out. The keys and their
 * ranges are common/topic_config.h's (segment.bytes, retention.ms,
 * cleanup.policy, ...); min.insync.replicas is accepted (1: these logs
 * are one replica) and left to the cluster.
 * Errors: WEIR_EINVALID_CONFIG naming the key and value. */
WEIR_MUST_CHECK int
logmgr_parse_topic_config(const struct plog_config *defaults,
                          const struct logmgr_kv *kv,
                          uint32_t n,
                          struct plog_config *out,
                          struct err_detail *ed);

/* Create a topic with `partitions` partitions (1..LOGMGR_MAX_PARTITIONS).
 * validate_only: check everything, create nothing.
 * Errors: WEIR_EINVALID_TOPIC, WEIR_ETOPIC_EXISTS, WEIR_EINVALID_PARTITIONS,
 * WEIR_EINVALID_REPLICATION_FACTOR, WEIR_EINVALID_CONFIG, WEIR_EIO. */
WEIR_MUST_CHECK int logmgr_create_topic(struct logmgr *m,
                                        const char *name,
                                        int32_t partitions,
                                        int32_t replication_factor,
                                        const struct logmgr_kv *configs,
                                        uint32_t n_configs,
                                        bool validate_only,
                                        int64_t wall_ms,
                                        struct err_detail *ed);
/* Errors: WEIR_EUNKNOWN_TOPIC_OR_PARTITION, WEIR_EINVALID_TOPIC, WEIR_EIO. */
WEIR_MUST_CHECK int logmgr_delete_topic(struct logmgr *m,
                                        const char *name,
                                        int64_t wall_ms,
                                        struct err_detail *ed);

/* Remember the cluster's id of a topic (cluster mode: a topic deleted and
 * created again under the same name gets a new id, and its old logs must
 * go). Written to the manifest. Errors: WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
 * WEIR_EIO. */
WEIR_MUST_CHECK int logmgr_set_topic_id(struct logmgr *m,
                                        const char *name,
                                        int64_t topic_id,
                                        struct err_detail *ed);

/* The log of a partition, or NULL. */
struct plog *
logmgr_partition(struct logmgr *m, const char *topic, int32_t partition);
/* Topic lookup; false when unknown. */
bool logmgr_topic(const struct logmgr *m,
                  const char *name,
                  struct logmgr_topic *out);
uint32_t logmgr_topic_count(const struct logmgr *m);
/* i-th topic in name order. */
void logmgr_topic_at(const struct logmgr *m,
                     uint32_t i,
                     struct logmgr_topic *out);

/* Call fn for every partition log (flush timers, retention). */
typedef void (*logmgr_each_fn)(void *arg,
                               const char *topic,
                               int32_t partition,
                               struct plog *log);
void logmgr_each(struct logmgr *m, logmgr_each_fn fn, void *arg);

/* Where retention and compaction must stop for a partition: its high
 * watermark (no segment holding an offset at or above it is deleted or
 * cleaned, and no record at or above it decides what compaction keeps). */
typedef int64_t (*logmgr_keep_fn)(void *arg,
                                  const char *topic,
                                  int32_t partition,
                                  const struct plog *log);

/* Retention and age-based rolls over every partition that is online,
 * then compaction of at most one partition that needs it (round robin;
 * trace event=log_compacted). keep (NULL: the log end) bounds both.
 * Returns the first failure; the others go on. */
WEIR_MUST_CHECK int logmgr_housekeep(struct logmgr *m,
                                     int64_t wall_ms,
                                     logmgr_keep_fn keep,
                                     void *keep_arg,
                                     struct err_detail *ed);

/* logmgr_health.c. The hook every partition log gets (plog_offline_fn),
 * now and when opened later. */
void logmgr_set_offline_hook(struct logmgr *m, plog_offline_fn fn, void *arg);
/* A partition log was opened after the manager was (a topic created):
 * it has bytes no one verified yet, so a stopped scrub should start. */
typedef void (*logmgr_opened_fn)(void *arg);
void logmgr_set_opened_hook(struct logmgr *m, logmgr_opened_fn fn, void *arg);
/* Verify up to about budget bytes not yet verified, over the partitions
 * round robin, one log to its end before the next (plog_scrub). A corrupt
 * log goes offline (traced); that is not an error here. *checked: bytes
 * read. *more: some online log is still not verified (false: the scrub
 * may stop until a log is opened or brought back online). Walks the
 * partitions directly, each at most once per call.
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int logmgr_scrub(struct logmgr *m,
                                 uint64_t budget,
                                 uint64_t *checked,
                                 bool *more,
                                 struct err_detail *ed);
/* Free bytes on the file system of the data directory.
 * Errors: WEIR_EIO. */
WEIR_MUST_CHECK int
logmgr_free_bytes(struct logmgr *m, uint64_t *out, struct err_detail *ed);
/* Topic and partition of a log this manager holds; false when it is not
 * one of them. */
bool logmgr_find_log(const struct logmgr *m,
                     const struct plog *log,
                     const char **topic,
                     int32_t *partition);

#endif /* BROKER_STORAGE_LOGMGR_H */
