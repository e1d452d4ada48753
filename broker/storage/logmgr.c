/* SPDX-License-Identifier: Apache-2.0 */
/* Log manager: topics (manifest) and their partition logs. Ordering rules
 * that keep a crash harmless:
 *   create: manifest first, then directories (a crash in between leaves a
 *           known topic whose missing partitions are created at open);
 *   delete: rename to *.delete, manifest, then remove (a crash leaves
 *           *.delete directories, removed at open).
 * Paths are only built from names that passed names_topic_check. */
#include "broker/storage/logmgr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/logmgr_int.h"
#include "common/clock.h"
#include "common/decimal.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/trace.h"

int logmgr_rec_new(const char *name,
                   int32_t partitions,
                   int32_t replication_factor,
                   const struct logmgr_kv *configs,
                   uint32_t n_configs,
                   const struct plog_config *cfg,
                   struct logmgr_rec **out)
{
    struct logmgr_rec *r;
    uint32_t i;

    *out = NULL;
    r = mem_calloc(1, sizeof(*r));
    if (r == NULL) {
        return WEIR_ENOMEM;
    }
    r->partitions = partitions;
    r->replication_factor = replication_factor;
    r->topic_id = -1;
    r->cfg = *cfg;
    r->name = mem_strdup(name);
    r->logs = mem_calloc((size_t)partitions, sizeof(*r->logs));
    r->configs = mem_calloc(n_configs, sizeof(*r->configs));
    if (r->name == NULL || r->logs == NULL || r->configs == NULL) {
        logmgr_rec_free(r);
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n_configs; i++) {
        r->configs[i].key = mem_strdup(configs[i].key);
        r->configs[i].value = mem_strdup(configs[i].value);
        r->n_configs++;
        if (r->configs[i].key == NULL || r->configs[i].value == NULL) {
            logmgr_rec_free(r);
            return WEIR_ENOMEM;
        }
    }
    *out = r;
    return 0;
}

void logmgr_rec_free(struct logmgr_rec *r)
{
    uint32_t i;
    int32_t p;

    if (r == NULL) {
        return;
    }
    for (p = 0; r->logs != NULL && p < r->partitions; p++) {
        plog_free(r->logs[p]);
    }
    for (i = 0; i < r->n_configs; i++) {
        mem_free((void *)r->configs[i].key);
        mem_free((void *)r->configs[i].value);
    }
    mem_free(r->configs);
    mem_free(r->logs);
    mem_free(r->name);
    mem_free(r);
}

int64_t logmgr_find(const struct logmgr *m, const char *name, uint32_t *at)
{
    uint32_t lo = 0;
    uint32_t hi = m->n_topics;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->topics[mid]->name, name);
        if (c == 0) {
            *at = mid;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *at = lo;
    return -1;
}

int logmgr_insert(struct logmgr *m, struct logmgr_rec *r)
{
    uint32_t at;

    if (m->n_topics == m->cap_topics) {
        uint32_t ncap = m->cap_topics == 0 ? 8 : m->cap_topics * 2;
        struct logmgr_rec **p = mem_realloc(m->topics, ncap * sizeof(*p));
        if (p == NULL) {
            return WEIR_ENOMEM;
        }
        m->topics = p;
        m->cap_topics = ncap;
    }
    (void)logmgr_find(m, r->name, &at);
    memmove(&m->topics[at + 1], &m->topics[at],
            (m->n_topics - at) * sizeof(*m->topics));
    m->topics[at] = r;
    m->n_topics++;
    return 0;
}

struct logmgr_rec *logmgr_remove_at(struct logmgr *m, uint32_t i)
{
    struct logmgr_rec *r = m->topics[i];

    memmove(&m->topics[i], &m->topics[i + 1],
            (m->n_topics - i - 1) * sizeof(*m->topics));
    m->n_topics--;
    return r;
}

static int logmgr_part_path(const struct logmgr *m,
                            const char *topic,
                            int32_t p,
                            const char *suffix,
                            char *out,
                            struct err_detail *ed)
{
    int n = snprintf(out, STORAGE_PATH_MAX, "%s/%s-%d%s", m->data_dir, topic, p,
                     suffix);

    if (n < 0 || n >= STORAGE_PATH_MAX) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "partition path for %s-%d under %s is too long", topic,
                       p, m->data_dir);
    }
    return 0;
}

static int logmgr_open_partition(struct logmgr *m,
                                 struct logmgr_rec *r,
                                 int32_t p,
                                 int64_t wall_ms,
                                 struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    int rv;

    rv = logmgr_part_path(m, r->name, p, "", path, ed);
    if (rv != 0) {
        return rv;
    }
    rv = plog_open(m->ops, path, &r->cfg, wall_ms, &r->logs[p], ed);
    if (rv != 0) {
        err_wrap(ed, "partition directory %s", path);
        return rv;
    }
    plog_set_offline_hook(r->logs[p], m->offline_fn, m->offline_arg);
    if (m->opened_fn != NULL) {
        m->opened_fn(m->opened_arg);
    }
    return 0;
}

/* Leftover *.delete directories of an interrupted delete, and a warning
 * for anything else the manifest does not explain. */
struct logmgr_sweep {
    struct logmgr *m;
    bool remove_deleted; /* first pass: remove; second: warn */
};

static bool logmgr_known_dir(const struct logmgr *m, const char *name)
{
    const char *dash = strrchr(name, '-');
    char topic[NAMES_TOPIC_MAX + 1];
    uint32_t at;
    int64_t i;
    int64_t p;

    if (dash == NULL || dash == name ||
        (size_t)(dash - name) > NAMES_TOPIC_MAX || dash[1] < '0' ||
        dash[1] > '9') {
        return false;
    }
    memcpy(topic, name, (size_t)(dash - name));
    topic[dash - name] = '\0';
    if (decimal_parse_cstr(dash + 1, DECIMAL_UNSIGNED, &p, NULL) != 0) {
        return false;
    }
    i = logmgr_find(m, topic, &at);
    return i >= 0 && p < m->topics[i]->partitions;
}

/* Files of the data dir that other modules own: producer-id-block
 * (broker/idem, idem_pid.h) and the identity files (broker_ident.h). */
static bool logmgr_foreign_file(const char *name)
{
    static const char *const owned[] = {"producer-id-block", "meta.properties",
                                        "clean-shutdown-epoch",
                                        "metadata-offset"};
    size_t n = strlen(name);
    size_t i;

    if (n > 4 && strcmp(name + n - 4, ".tmp") == 0) {
        n -= 4;
    }
    for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        if (strlen(owned[i]) == n && strncmp(name, owned[i], n) == 0) {
            return true;
        }
    }
    return false;
}

static int logmgr_sweep_entry(void *arg, const char *name)
{
    struct logmgr_sweep *sw = arg;
    size_t len = strlen(name);
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    bool deleted = len > 7 && strcmp(name + len - 7, ".delete") == 0;

    if (storage_join(path, sizeof(path), sw->m->data_dir, name, &ed) != 0) {
        return 0;
    }
    if (sw->remove_deleted) {
        if (deleted && storage_remove_dir(sw->m->ops, path, &ed) != 0) {
            trace_warn("storage",
                       "event=delete_leftover_failed path=%s "
                       "reason=\"%s\"",
                       path, ed.msg);
        }
        return 0;
    }
    /* dot files belong to the process (the data-dir lock), not to us */
    if (!deleted && name[0] != '.' && strcmp(name, LOGMGR_MANIFEST) != 0 &&
        strcmp(name, LOGMGR_MANIFEST ".tmp") != 0 &&
        !logmgr_foreign_file(name) && !logmgr_known_dir(sw->m, name)) {
        trace_warn("storage", "event=unknown_entry path=%s action=left_alone",
                   path);
    }
    return 0;
}

static int
logmgr_sweep(struct logmgr *m, bool remove_deleted, struct err_detail *ed)
{
    struct logmgr_sweep sw = {m, remove_deleted};

    return m->ops->list(m->ops->ctx, m->data_dir, logmgr_sweep_entry, &sw, ed);
}

static int
logmgr_open_all(struct logmgr *m, int64_t wall_ms, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    uint32_t i;
    int32_t p;
    int rv;

    for (i = 0; i < m->n_topics; i++) {
        struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            rv = logmgr_part_path(m, r->name, p, "", path, ed);
            if (rv != 0) {
                return rv;
            }
            if (!m->ops->exists(m->ops->ctx, path)) {
                trace_warn("storage",
                           "event=partition_missing path=%s "
                           "action=create_empty",
                           path);
            }
            rv = logmgr_open_partition(m, r, p, wall_ms, ed);
            if (rv != 0) {
                return rv;
            }
        }
    }
    return 0;
}

int logmgr_open(const struct storage_ops *ops,
                const char *data_dir,
                const struct plog_config *defaults,
                int64_t wall_ms,
                struct logmgr **out,
                struct err_detail *ed)
{
    struct logmgr *m;
    int rv;

    *out = NULL;
    m = mem_calloc(1, sizeof(*m));
    if (m == NULL || (m->data_dir = mem_strdup(data_dir)) == NULL) {
        mem_free(m);
        return err_set(ed, WEIR_ENOMEM, "opening %s: out of memory", data_dir);
    }
    m->ops = ops;
    m->defaults = *defaults;
    rv = storage_mkdirs(m->ops, m->data_dir, ed);
    if (rv == 0) {
        rv = logmgr_sweep(m, true, ed);
    }
    if (rv == 0) {
        rv = logmgr_manifest_read(m, ed);
    }
    if (rv == 0) {
        rv = logmgr_open_all(m, wall_ms, ed);
    }
    if (rv == 0) {
        rv = logmgr_sweep(m, false, ed);
    }
    if (rv != 0) {
        logmgr_close(m);
        return rv;
    }
    *out = m;
    return 0;
}

uint32_t logmgr_close(struct logmgr *m)
{
    uint32_t unclean = 0;
    uint32_t i;
    int32_t p;

    if (m == NULL) {
        return 0;
    }
    for (i = 0; i < m->n_topics; i++) {
        struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            unclean += plog_close(r->logs[p]) ? 0 : 1;
            r->logs[p] = NULL;
        }
        logmgr_rec_free(r);
    }
    mem_free(m->topics);
    mem_free(m->data_dir);
    mem_free(m);
    return unclean;
}

static int logmgr_check_create(const struct logmgr *m,
                               const char *name,
                               int32_t partitions,
                               int32_t rf,
                               const struct logmgr_kv *configs,
                               uint32_t n,
                               struct plog_config *cfg,
                               struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    uint32_t at;
    int32_t p;
    int rv;

    rv = names_topic_check(name, strlen(name), ed);
    if (rv != 0) {
        return rv;
    }
    if (partitions < 1 || partitions > LOGMGR_MAX_PARTITIONS) {
        return err_set(ed, WEIR_EINVALID_PARTITIONS,
                       "partition count %d is outside 1..%d", partitions,
                       LOGMGR_MAX_PARTITIONS);
    }
    if (rf != 0 && rf != 1) {
        return err_set(ed, WEIR_EINVALID_REPLICATION_FACTOR,
                       "replication factor %d: only 1 broker in this build",
                       rf);
    }
    rv = logmgr_parse_topic_config(&m->defaults, configs, n, cfg, ed);
    if (rv != 0) {
        return rv;
    }
    if (logmgr_find(m, name, &at) >= 0) {
        return err_set(ed, WEIR_ETOPIC_EXISTS, "topic %s already exists", name);
    }
    for (p = 0; p < partitions; p++) {
        /* the longest path this topic will need: its delete rename */
        rv = logmgr_part_path(m, name, p, ".-9223372036854775808.delete", path,
                              ed);
        if (rv == 0) {
            rv = logmgr_part_path(m, name, p, "", path, ed);
        }
        if (rv != 0) {
            return rv;
        }
        if (m->ops->exists(m->ops->ctx, path)) {
            return err_set(ed, WEIR_ETOPIC_EXISTS,
                           "directory %s exists but is not in the topic "
                           "manifest; move it away first",
                           path);
        }
    }
    return 0;
}

/* Undo a create that failed after the manifest was written. */
static void logmgr_undo_create(struct logmgr *m, struct logmgr_rec *r)
{
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    uint32_t at;
    int32_t p;

    if (logmgr_find(m, r->name, &at) >= 0) {
        (void)logmgr_remove_at(m, at);
    }
    if (logmgr_manifest_write(m, &ed) != 0) {
        trace_error("storage",
                    "event=create_undo_failed topic=%s "
                    "reason=\"%s\"",
                    r->name, ed.msg);
    }
    for (p = 0; p < r->partitions; p++) {
        plog_free(r->logs[p]);
        r->logs[p] = NULL;
        if (logmgr_part_path(m, r->name, p, "", path, &ed) == 0 &&
            storage_remove_dir(m->ops, path, &ed) != 0) {
            trace_warn("storage", "event=create_undo_failed path=%s", path);
        }
    }
    logmgr_rec_free(r);
}

int logmgr_create_topic(struct logmgr *m,
                        const char *name,
                        int32_t partitions,
                        int32_t replication_factor,
                        const struct logmgr_kv *configs,
                        uint32_t n_configs,
                        bool validate_only,
                        int64_t wall_ms,
                        struct err_detail *ed)
{
    struct plog_config cfg;
    struct logmgr_rec *r;
    int32_t p;
    int rv;

    rv = logmgr_check_create(m, name, partitions, replication_factor, configs,
                             n_configs, &cfg, ed);
    if (rv != 0 || validate_only) {
        return rv;
    }
    rv = logmgr_rec_new(name, partitions, 1, configs, n_configs, &cfg, &r);
    if (rv == 0) {
        rv = logmgr_insert(m, r);
        if (rv != 0) {
            logmgr_rec_free(r);
        }
    }
    if (rv != 0) {
        return err_set(ed, rv, "creating topic %s: out of memory", name);
    }
    rv = logmgr_manifest_write(m, ed);
    if (rv != 0) {
        uint32_t at;
        (void)logmgr_find(m, name, &at);
        logmgr_rec_free(logmgr_remove_at(m, at));
        return rv;
    }
    for (p = 0; p < partitions; p++) {
        rv = logmgr_open_partition(m, r, p, wall_ms, ed);
        if (rv != 0) {
            logmgr_undo_create(m, r);
            return rv;
        }
    }
    trace_info("storage", "event=topic_created topic=%s partitions=%d", name,
               partitions);
    return 0;
}

/* Rename partitions [0, n) of r between their live and *.delete names. */
static int logmgr_rename_parts(struct logmgr *m,
                               const struct logmgr_rec *r,
                               const char *suffix,
                               int32_t n,
                               bool back,
                               struct err_detail *ed)
{
    char live[STORAGE_PATH_MAX];
    char gone[STORAGE_PATH_MAX];
    int32_t p;
    int rv = 0;

    for (p = 0; rv == 0 && p < n; p++) {
        rv = logmgr_part_path(m, r->name, p, "", live, ed);
        if (rv == 0) {
            rv = logmgr_part_path(m, r->name, p, suffix, gone, ed);
        }
        if (rv == 0) {
            rv = back ? m->ops->rename(m->ops->ctx, gone, live, ed)
                      : m->ops->rename(m->ops->ctx, live, gone, ed);
        }
        if (rv != 0 && !back) {
            struct err_detail red;
            if (logmgr_rename_parts(m, r, suffix, p, true, &red) != 0) {
                trace_error("storage",
                            "event=delete_undo_failed topic=%s "
                            "reason=\"%s\"",
                            r->name, red.msg);
            }
        }
    }
    return rv;
}

static void logmgr_sync_data_dir(struct logmgr *m)
{
    struct err_detail ed;

    if (m->ops->fsync_dir(m->ops->ctx, m->data_dir, &ed) != 0) {
        trace_warn("storage", "event=dir_fsync_failed reason=\"%s\"", ed.msg);
    }
}

int logmgr_delete_topic(struct logmgr *m,
                        const char *name,
                        int64_t wall_ms,
                        struct err_detail *ed)
{
    char suffix[48];
    char path[STORAGE_PATH_MAX];
    struct err_detail ded;
    struct logmgr_rec *r;
    uint32_t at;
    int32_t p;
    int rv;

    rv = names_topic_check(name, strlen(name), ed);
    if (rv != 0) {
        return rv;
    }
    if (logmgr_find(m, name, &at) < 0) {
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION, "unknown topic %s",
                       name);
    }
    r = m->topics[at];
    (void)snprintf(suffix, sizeof(suffix), ".%lld.delete", (long long)wall_ms);
    rv = logmgr_rename_parts(m, r, suffix, r->partitions, false, ed);
    if (rv != 0) {
        return rv;
    }
    logmgr_sync_data_dir(m);
    (void)logmgr_remove_at(m, at);
    rv = logmgr_manifest_write(m, ed);
    if (rv != 0) {
        if (logmgr_insert(m, r) != 0 ||
            logmgr_rename_parts(m, r, suffix, r->partitions, true, &ded) != 0) {
            trace_error("storage", "event=delete_undo_failed topic=%s", name);
        }
        return rv;
    }
    for (p = 0; p < r->partitions; p++) {
        plog_free(r->logs[p]);
        r->logs[p] = NULL;
        if (logmgr_part_path(m, name, p, suffix, path, &ded) == 0 &&
            storage_remove_dir(m->ops, path, &ded) != 0) {
            /* the next open removes it */
            trace_warn("storage",
                       "event=delete_incomplete path=%s "
                       "reason=\"%s\"",
                       path, ded.msg);
        }
    }
    logmgr_rec_free(r);
    logmgr_sync_data_dir(m);
    trace_info("storage", "event=topic_deleted topic=%s", name);
    return 0;
}

struct plog *
logmgr_partition(struct logmgr *m, const char *topic, int32_t partition)
{
    uint32_t at;

    if (logmgr_find(m, topic, &at) < 0 || partition < 0 ||
        partition >= m->topics[at]->partitions) {
        return NULL;
    }
    return m->topics[at]->logs[partition];
}

static void logmgr_view(const struct logmgr_rec *r, struct logmgr_topic *out)
{
    out->name = r->name;
    out->partitions = r->partitions;
    out->replication_factor = r->replication_factor;
    out->topic_id = r->topic_id;
    out->n_configs = r->n_configs;
    out->configs = r->configs;
    out->log_config = &r->cfg;
}

int logmgr_set_topic_id(struct logmgr *m,
                        const char *name,
                        int64_t topic_id,
                        struct err_detail *ed)
{
    uint32_t at;

    if (logmgr_find(m, name, &at) < 0) {
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION, "unknown topic %s",
                       name);
    }
    if (m->topics[at]->topic_id == topic_id) {
        return 0;
    }
    m->topics[at]->topic_id = topic_id;
    return logmgr_manifest_write(m, ed);
}

bool logmgr_topic(const struct logmgr *m,
                  const char *name,
                  struct logmgr_topic *out)
{
    uint32_t at;

    if (logmgr_find(m, name, &at) < 0) {
        return false;
    }
    logmgr_view(m->topics[at], out);
    return true;
}

uint32_t logmgr_topic_count(const struct logmgr *m)
{
    return m->n_topics;
}

void logmgr_topic_at(const struct logmgr *m,
                     uint32_t i,
                     struct logmgr_topic *out)
{
    logmgr_view(m->topics[i], out);
}

void logmgr_each(struct logmgr *m, logmgr_each_fn fn, void *arg)
{
    uint32_t i;
    int32_t p;

    for (i = 0; i < m->n_topics; i++) {
        struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            fn(arg, r->name, p, r->logs[p]);
        }
    }
}

static void logmgr_compact_one(struct logmgr *m,
                               const struct logmgr_rec *r,
                               int32_t p,
                               int64_t wall_ms,
                               int64_t keep_from,
                               int *first,
                               struct err_detail *ed)
{
    struct plog_compact_stats st;
    struct err_detail led;
    uint64_t t0 = clock_mono_us();
    int rv;

    (void)m;
    rv = plog_compact(r->logs[p], wall_ms, keep_from, &st, &led);
    if (rv != 0) {
        trace_warn("storage",
                   "event=compaction_failed topic=%s partition=%d "
                   "reason=\"%s\"",
                   r->name, p, led.msg);
        if (*first == 0) {
            *first = rv;
            if (ed != NULL) {
                *ed = led;
            }
        }
        return;
    }
    trace_info("storage",
               "event=log_compacted topic=%s partition=%d segments=%u "
               "bytes_before=%llu bytes_after=%llu records_removed=%llu "
               "below=%lld ms=%llu",
               r->name, p, st.segments, (unsigned long long)st.bytes_before,
               (unsigned long long)st.bytes_after,
               (unsigned long long)st.records_removed, (long long)keep_from,
               (unsigned long long)((clock_mono_us() - t0) / 1000));
}

uint32_t logmgr_partition_count(const struct logmgr *m)
{
    uint32_t total = 0;
    uint32_t i;

    for (i = 0; i < m->n_topics; i++) {
        total += (uint32_t)m->topics[i]->partitions;
    }
    return total;
}

bool logmgr_flat(const struct logmgr *m,
                 uint32_t k,
                 struct logmgr_rec **r,
                 int32_t *p)
{
    uint32_t i;

    for (i = 0; i < m->n_topics; i++) {
        if (k < (uint32_t)m->topics[i]->partitions) {
            *r = m->topics[i];
            *p = (int32_t)k;
            return true;
        }
        k -= (uint32_t)m->topics[i]->partitions;
    }
    return false;
}

/* Where housekeeping must stop for the partition: keep's answer, or the
 * log end without one (a log alone: what it holds is committed). */
static int64_t logmgr_keep_from(const struct logmgr_rec *r,
                                int32_t p,
                                logmgr_keep_fn keep,
                                void *keep_arg)
{
    return keep != NULL ? keep(keep_arg, r->name, p, r->logs[p])
                        : plog_end_offset(r->logs[p]);
}

/* Compaction of at most one partition per call (round robin), so one
 * housekeeping pass never blocks the loop for more than one log. */
static void logmgr_compact_next(struct logmgr *m,
                                int64_t wall_ms,
                                logmgr_keep_fn keep,
                                void *keep_arg,
                                int *first,
                                struct err_detail *ed)
{
    uint32_t total = logmgr_partition_count(m);
    struct logmgr_rec *r;
    int64_t keep_from;
    int32_t at;
    uint32_t k;

    for (k = 0; k < total; k++) {
        uint32_t flat = (m->compact_next + k) % total;
        if (!logmgr_flat(m, flat, &r, &at) || r->logs[at] == NULL ||
            plog_is_offline(r->logs[at]) ||
            (plog_config(r->logs[at])->cleanup_policy & PLOG_CLEANUP_COMPACT) ==
                0) {
            continue;
        }
        keep_from = logmgr_keep_from(r, at, keep, keep_arg);
        if (plog_compact_needed(r->logs[at], wall_ms, keep_from)) {
            m->compact_next = flat + 1;
            logmgr_compact_one(m, r, at, wall_ms, keep_from, first, ed);
            return;
        }
    }
}

int logmgr_housekeep(struct logmgr *m,
                     int64_t wall_ms,
                     logmgr_keep_fn keep,
                     void *keep_arg,
                     struct err_detail *ed)
{
    struct err_detail led;
    uint32_t deleted;
    int64_t keep_from;
    uint32_t i;
    int32_t p;
    int first = 0;
    int rv;

    /* one failing partition must not stop the others' housekeeping */
    for (i = 0; i < m->n_topics; i++) {
        struct logmgr_rec *r = m->topics[i];
        for (p = 0; p < r->partitions; p++) {
            if (r->logs[p] == NULL || plog_is_offline(r->logs[p])) {
                continue; /* plog_recover comes first */
            }
            keep_from = logmgr_keep_from(r, p, keep, keep_arg);
            rv = plog_enforce_retention(r->logs[p], wall_ms, keep_from,
                                        &deleted, &led);
            if (rv == 0) {
                rv = plog_maybe_roll(r->logs[p], wall_ms, &led);
            }
            if (rv != 0) {
                trace_warn("storage",
                           "event=housekeep_failed topic=%s partition=%d "
                           "reason=\"%s\"",
                           r->name, p, led.msg);
                if (first == 0) {
                    first = rv;
                    if (ed != NULL) {
                        *ed = led;
                    }
                }
            }
        }
    }
    logmgr_compact_next(m, wall_ms, keep, keep_arg, &first, ed);
    return first;
}
