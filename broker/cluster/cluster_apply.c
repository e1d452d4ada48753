/* SPDX-License-Identifier: Apache-2.0 */
/* Applying the metadata log on a broker: records (or a snapshot) into the
 * local image, then, once caught up with the controller, the partition
 * logs this broker hosts and the role of each. Logs and roles follow the
 * image only when it is complete: a half-fetched log would look like
 * deleted topics. */
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_int.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/topic_config.h"
#include "common/trace.h"
#include "controller/meta/meta_chain.h"
#include "controller/meta/meta_snapshot.h"

/* The history just applied reached the stored offset: is its chain value
 * the stored one? (The controller checks this too, before it answers;
 * this is the broker's own check of what it was actually sent.) */
static int cluster_apply_check_point(const struct cluster *c,
                                     int64_t end,
                                     int64_t chain,
                                     struct err_detail *ed)
{
    const struct broker_ident *id = &c->b->ident;

    if (end != id->applied_end || id->applied_chain < 0 || chain < 0 ||
        chain == id->applied_chain) {
        return 0;
    }
    return err_set(ed, WEIR_EMETADATA_DIVERGED,
                   "applying the controller's metadata, the chain value at "
                   "offset %lld is %lld; this broker's data dir %s stored "
                   "%lld there",
                   (long long)end, (long long)chain, c->b->cfg.data_dir,
                   (long long)id->applied_chain);
}

/* Records: u32be length | record, applied in order to img; *chain (the
 * value at img's end, -1 unknown) follows them. */
static int cluster_apply_records(const struct cluster *cl,
                                 struct meta_image *img,
                                 const uint8_t *p,
                                 uint32_t len,
                                 uint32_t count,
                                 int64_t *chain,
                                 struct err_detail *ed)
{
    struct weir_cursor c;
    uint32_t i;
    int rv;

    cur_init(&c, p, len);
    for (i = 0; i < count; i++) {
        struct meta_record rec;
        struct weir_slice rb;
        struct weir_cursor rc;
        uint32_t rlen;
        if (!cur_u32be(&c, &rlen) || !cur_bytes(&c, rlen, &rb)) {
            return err_set(ed, WEIR_ECORRUPT, "metadata record %u truncated",
                           i);
        }
        cur_init(&rc, rb.p, rb.len);
        rv = meta_record_decode(&rc, &rec, ed);
        if (rv == 0) {
            rv = meta_image_apply(img, &rec, ed);
        }
        if (rv != 0) {
            err_wrap(ed, "metadata record at offset %lld",
                     (long long)meta_image_end_offset(img));
            return rv;
        }
        if (*chain >= 0) {
            *chain = meta_chain_fold(*chain, rb.p, rb.len);
        }
        rv = cluster_apply_check_point(cl, meta_image_end_offset(img), *chain,
                                       ed);
        if (rv != 0) {
            return rv;
        }
    }
    return cur_remaining(&c) == 0
               ? 0
               : err_set(ed, WEIR_ECORRUPT, "bytes after the last record");
}

static bool cluster_hosts(const struct meta_topic *t, int32_t id)
{
    uint32_t p;

    for (p = 0; p < t->n_partitions; p++) {
        if (meta_ids_has(&t->partitions[p].replicas, id)) {
            return true;
        }
    }
    return false;
}

/* Topic configs the partition logs apply: min.insync.replicas is the
 * cluster's business, not the log's. The controller checks every config
 * against the same table (common/topic_config.h) before it writes it, so
 * an invalid one here was written by a controller from before that check:
 * say so and leave the log at the broker default. */
static uint32_t cluster_log_configs(const struct meta_topic *t,
                                    struct logmgr_kv *kv)
{
    struct topic_config_value v;
    struct err_detail ed;
    uint32_t n = 0;
    uint32_t i;

    for (i = 0; i < t->n_configs; i++) {
        if (topic_config_parse(t->configs[i].key, t->configs[i].value, 0, &v,
                               &ed) != 0) {
            trace_warn("cluster",
                       "event=topic_config_ignored topic=%s msg=\"%s\"",
                       t->name, ed.msg);
            continue;
        }
        if (topic_config_is_log_key(v.key)) {
            kv[n].key = t->configs[i].key;
            kv[n].value = t->configs[i].value;
            n++;
        }
    }
    return n;
}

/* Delete a local topic's logs (its id was removed explicitly); nothing
 * may keep pointing at them. */
static void
cluster_drop_logs(struct cluster *c, const char *name, const char *why)
{
    struct broker *b = c->b;
    struct err_detail ed;

    broker_flush_dirty(b);
    idem_io_drop_topic(b->idem, name);
    repl_io_drop_topic(b->repl, name);
    if (logmgr_delete_topic(b->logs, name, clock_wall_ms(b->clock), &ed) != 0) {
        trace_error("cluster",
                    "event=partition_logs_delete_failed topic=%s msg=\"%s\"",
                    name, ed.msg);
        return;
    }
    trace_info("cluster", "event=partition_logs_deleted topic=%s reason=%s",
               name, why);
    broker_readable(b);
}

/* May local logs of this topic go? Only on an explicit removal of their
 * id (REMOVE_TOPIC applied here, or its tombstone in a snapshot), with
 * the same name: never because the metadata lacks the topic, since an
 * empty or wrong controller lacks every topic. */
static bool cluster_removed(const struct cluster *c,
                            const struct logmgr_topic *lt)
{
    const struct meta_tombstone *t;

    if (lt->topic_id < 0) {
        return false;
    }
    t = meta_image_tombstone(c->img, lt->topic_id);
    return t != NULL && strcmp(t->name, lt->name) == 0;
}

bool cluster_logs_usable(const struct cluster *c, const struct meta_topic *t)
{
    struct logmgr_topic lt;

    return !logmgr_topic(c->b->logs, t->name, &lt) || lt.topic_id < 0 ||
           lt.topic_id == t->id;
}

/* A topic with a replica here gets its logs (or adopts logs from before
 * ids were kept). Logs under its name with another id go only when that
 * id was removed; else they stay, and block the topic here. */
static void cluster_sync_hosted(struct cluster *c, const struct meta_topic *t)
{
    struct broker *b = c->b;
    struct logmgr_kv kv[META_MAX_CONFIGS];
    struct logmgr_topic lt;
    struct err_detail ed;

    if (logmgr_topic(b->logs, t->name, &lt)) {
        if (lt.topic_id == t->id) {
            return;
        }
        if (lt.topic_id < 0) {
            /* logs from before ids were kept: take them as this one */
            if (logmgr_set_topic_id(b->logs, t->name, t->id, &ed) != 0) {
                trace_error("cluster",
                            "event=topic_id_not_saved topic=%s msg=\"%s\"",
                            t->name, ed.msg);
            }
            return;
        }
        if (!cluster_removed(c, &lt)) {
            cluster_ident_stray(c, lt.name, lt.topic_id,
                                "name_taken_by_another_topic_id");
            return;
        }
        cluster_drop_logs(c, t->name, "removed_and_created_again");
        if (logmgr_topic(b->logs, t->name, &lt)) {
            return; /* could not delete: keep the old logs */
        }
    }
    if (logmgr_create_topic(b->logs, t->name, (int32_t)t->n_partitions, 0, kv,
                            cluster_log_configs(t, kv), false,
                            clock_wall_ms(b->clock), &ed) != 0 ||
        logmgr_set_topic_id(b->logs, t->name, t->id, &ed) != 0) {
        trace_error("cluster",
                    "event=partition_logs_failed topic=%s msg=\"%s\"", t->name,
                    ed.msg);
        return;
    }
    trace_info("cluster",
               "event=partition_logs_created topic=%s topic_id=%lld "
               "partitions=%u",
               t->name, (long long)t->id, t->n_partitions);
}

/* Partition logs follow the image, with deletion only for explicitly
 * removed topic ids: local logs the metadata does not know (a controller
 * that lost its data, a data dir moved between clusters) are kept, not
 * served, and reported. */
static void cluster_sync_logs(struct cluster *c)
{
    struct broker *b = c->b;
    struct logmgr_topic lt;
    uint32_t i;

    for (i = 0; i < meta_image_topic_count(c->img); i++) {
        const struct meta_topic *t = meta_image_topic_at(c->img, i);
        if (cluster_hosts(t, c->id)) {
            cluster_sync_hosted(c, t);
        }
    }
    i = 0;
    while (i < logmgr_topic_count(b->logs)) {
        const struct meta_topic *t;
        char name[NAMES_TOPIC_MAX + 1];
        uint32_t before = logmgr_topic_count(b->logs);
        logmgr_topic_at(b->logs, i, &lt);
        t = meta_image_topic_by_name(c->img, lt.name, strlen(lt.name));
        if (t != NULL && cluster_hosts(t, c->id) &&
            (lt.topic_id == t->id || lt.topic_id < 0)) {
            i++; /* in the metadata (or adopted above) */
            continue;
        }
        if (!cluster_removed(c, &lt)) {
            cluster_ident_stray(c, lt.name, lt.topic_id,
                                t == NULL ? "unknown_to_the_metadata"
                                : cluster_hosts(t, c->id)
                                    ? "name_taken_by_another_topic_id"
                                    : "not_a_replica_here");
            i++;
            continue;
        }
        (void)snprintf(name, sizeof(name), "%s", lt.name);
        cluster_drop_logs(c, name, "removed");
        if (logmgr_topic_count(b->logs) == before) {
            i++; /* could not delete: go on with the next */
        }
    }
}

static bool cluster_role_same(const struct cluster_role_entry *a,
                              const struct cluster_role_entry *b)
{
    return a->role == b->role && a->leader == b->leader &&
           a->leader_epoch == b->leader_epoch &&
           a->partition_epoch == b->partition_epoch && a->isr.n == b->isr.n &&
           memcmp(a->isr.ids, b->isr.ids, a->isr.n * sizeof(int32_t)) == 0;
}

static const struct cluster_role_entry *
cluster_role_find(const struct cluster *c, int64_t topic_id, int32_t p)
{
    uint32_t i;

    /* linear: role changes are rare and partitions per broker few */
    for (i = 0; i < c->n_roles; i++) {
        if (c->roles[i].topic_id == topic_id && c->roles[i].partition == p) {
            return &c->roles[i];
        }
    }
    return NULL;
}

bool cluster_incarnation_applied(const struct cluster *c)
{
    const struct meta_broker *self = meta_image_broker(c->img, c->id);

    return c->broker_epoch >= 0 && self != NULL &&
           self->epoch == c->broker_epoch;
}

uint32_t cluster_leading_count(const struct cluster *c)
{
    uint32_t n = 0;
    uint32_t i;

    for (i = 0; i < c->n_roles; i++) {
        n += c->roles[i].role == CLUSTER_ROLE_LEADER;
    }
    return n;
}

static uint32_t cluster_role_count(const struct cluster *c)
{
    uint32_t n = 0;
    uint32_t i;
    uint32_t p;

    for (i = 0; i < meta_image_topic_count(c->img); i++) {
        const struct meta_topic *t = meta_image_topic_at(c->img, i);
        for (p = 0; p < t->n_partitions; p++) {
            n += meta_ids_has(&t->partitions[p].replicas, c->id);
        }
    }
    return n;
}

static void cluster_role_fire(struct cluster *c,
                              const struct cluster_role_entry *e,
                              const char *topic,
                              const struct meta_ids *replicas)
{
    struct cluster_partition_state st;

    st.topic = topic;
    st.topic_id = e->topic_id;
    st.partition = e->partition;
    st.role = e->role;
    st.leader = e->leader;
    st.leader_epoch = e->leader_epoch;
    st.partition_epoch = e->partition_epoch;
    st.replicas = replicas;
    st.isr = &e->isr;
    c->hook(c->hook_arg, &st);
}

/* New role table from the image; the hook hears of every entry that is
 * new or changed, and of every one that went away (role NONE). */
static int cluster_sync_roles(struct cluster *c)
{
    static const struct meta_ids none = {0, {0}};
    uint32_t n = cluster_role_count(c);
    struct cluster_role_entry *next = mem_calloc(n + 1, sizeof(*next));
    bool may_lead = cluster_incarnation_applied(c);
    uint32_t k = 0;
    uint32_t i;
    uint32_t p;

    if (next == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < meta_image_topic_count(c->img); i++) {
        const struct meta_topic *t = meta_image_topic_at(c->img, i);
        if (!cluster_logs_usable(c, t)) {
            continue; /* stray logs hold the name: no role here */
        }
        for (p = 0; p < t->n_partitions; p++) {
            const struct meta_partition *mp = &t->partitions[p];
            const struct cluster_role_entry *old;
            struct cluster_role_entry *e = &next[k];
            if (!meta_ids_has(&mp->replicas, c->id)) {
                continue;
            }
            e->topic_id = t->id;
            e->partition = (int32_t)p;
            e->role = mp->leader == c->id ? CLUSTER_ROLE_LEADER
                                          : CLUSTER_ROLE_FOLLOWER;
            e->leader = mp->leader;
            if (e->role == CLUSTER_ROLE_LEADER && !may_lead) {
                /* the image may still name this broker as leader from an
                 * earlier incarnation: lead only once this incarnation's
                 * registration is applied (which ends that leadership) */
                e->role = CLUSTER_ROLE_FOLLOWER;
                e->leader = -1;
            }
            e->leader_epoch = mp->leader_epoch;
            e->partition_epoch = mp->partition_epoch;
            e->isr = mp->isr;
            k++;
            old = cluster_role_find(c, e->topic_id, e->partition);
            if (old == NULL || !cluster_role_same(old, e)) {
                cluster_role_fire(c, e, t->name, &mp->replicas);
            }
        }
    }
    for (i = 0; i < c->n_roles; i++) {
        struct cluster_role_entry gone = c->roles[i];
        const struct meta_topic *t = meta_image_topic(c->img, gone.topic_id);
        if (t != NULL && gone.partition < (int32_t)t->n_partitions &&
            meta_ids_has(&t->partitions[gone.partition].replicas, c->id) &&
            cluster_logs_usable(c, t)) {
            continue;
        }
        gone.role = CLUSTER_ROLE_NONE;
        gone.leader = -1;
        cluster_role_fire(c, &gone, t != NULL ? t->name : "", &none);
    }
    mem_free(c->roles);
    c->roles = next;
    c->n_roles = k;
    return 0;
}

void cluster_role_trace(void *arg, const struct cluster_partition_state *st)
{
    struct cluster *c = arg;
    const struct cluster_role_entry *old =
        cluster_role_find(c, st->topic_id, st->partition);
    static const char *const names[] = {"none", "leader", "follower"};

    if (old != NULL && old->leader == st->leader &&
        old->leader_epoch == st->leader_epoch && old->role == st->role) {
        trace_debug("cluster",
                    "event=isr_change topic=%s partition=%d isr_count=%u "
                    "partition_epoch=%d",
                    st->topic, (int)st->partition, st->isr->n,
                    (int)st->partition_epoch);
        return;
    }
    trace_info("cluster",
               "event=leader_change topic=%s partition=%d leader=%d "
               "epoch=%d role=%s",
               st->topic, (int)st->partition, (int)st->leader,
               (int)st->leader_epoch, names[st->role]);
}

int cluster_apply(struct cluster *c,
                  const Weir__FetchMetadataResponse *m,
                  const uint8_t *payload,
                  uint32_t len,
                  struct err_detail *ed)
{
    struct meta_image *img = NULL;
    int64_t chain = m->chain_known ? m->first_chain : META_CHAIN_UNKNOWN;
    int rv;

    if (m->snapshot) {
        rv = meta_snapshot_decode(payload, len, &img, ed);
        if (rv == 0) {
            rv = cluster_apply_check_point(c, meta_image_end_offset(img), chain,
                                           ed);
        }
        if (rv != 0) {
            meta_image_free(img);
            return rv;
        }
        meta_image_free(c->img);
        c->img = img;
        c->chain = chain;
        trace_info("cluster", "event=metadata_snapshot_loaded end_offset=%lld",
                   (long long)meta_image_end_offset(c->img));
    } else if (m->record_count > 0) {
        if (m->first_offset != meta_image_end_offset(c->img)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "metadata from offset %lld, expected %lld",
                           (long long)m->first_offset,
                           (long long)meta_image_end_offset(c->img));
        }
        if (chain >= 0 && c->chain >= 0 && chain != c->chain) {
            /* the records do not continue the history in the image */
            return err_set(ed, WEIR_EMETADATA_DIVERGED,
                           "the controller's chain value at offset %lld is "
                           "%lld, the metadata applied here has %lld",
                           (long long)m->first_offset, (long long)chain,
                           (long long)c->chain);
        }
        rv = cluster_apply_records(c, c->img, payload, len, m->record_count,
                                   &chain, ed);
        if (rv != 0) {
            /* the image took part of the batch: start again from scratch */
            meta_image_free(c->img);
            c->img = NULL;
            c->chain = META_CHAIN_ZERO;
            if (meta_image_new(&c->img) != 0) {
                return err_set(ed, WEIR_ENOMEM, "out of memory");
            }
            c->caught_up = false;
            return rv;
        }
        c->chain = chain;
    }
    c->caught_up = meta_image_end_offset(c->img) >= m->end_offset;
    if (c->caught_up &&
        (m->snapshot || m->record_count > 0 || c->n_roles == 0)) {
        cluster_sync_logs(c);
        if (cluster_sync_roles(c) != 0) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
    }
    return 0;
}

void cluster_resync(struct cluster *c)
{
    if (!c->caught_up) {
        return;
    }
    if (cluster_sync_roles(c) != 0) {
        trace_error("cluster",
                    "event=roles_not_synced broker=%d "
                    "msg=\"out of memory\"",
                    (int)c->id);
    }
}
