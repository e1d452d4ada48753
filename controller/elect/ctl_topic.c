/* SPDX-License-Identifier: Apache-2.0 */
/* Topic creation and deletion. A topic's records go out as one batch:
 * CREATE_TOPIC (its id is that record's offset, so ids are never reused),
 * its TOPIC_CONFIGs, then one PARTITION per partition, each led by its
 * preferred replica with every replica in the ISR (the logs are empty).
 * min.insync.replicas is always written, defaulted if absent, so a later
 * change of the controller default leaves existing topics alone. */
#include <stdio.h>
#include <string.h>

#include "common/names.h"
#include "common/topic_config.h"
#include "controller/elect/ctl_core_int.h"
#include "controller/elect/ctl_place.h"

#define CTL_TOPIC_MIN_ISR "min.insync.replicas"

static bool ctl_topic_check_kv(const struct ctl_kv *kv,
                               int32_t rf,
                               int32_t *min_isr,
                               struct ctl_actions *out)
{
    struct topic_config_value v;
    struct meta_record rec;
    struct err_detail why;

    if (kv->key == NULL || kv->value == NULL) {
        ctl_core_refuse(out, WEIR_EINVALID_CONFIG, "config without a %s",
                        kv->key == NULL ? "key" : "value");
        return false;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_TOPIC_CONFIG;
    rec.u.config.key.ptr = kv->key;
    rec.u.config.key.len = strlen(kv->key);
    rec.u.config.value.ptr = kv->value;
    rec.u.config.value.len = strlen(kv->value);
    if (meta_record_check(&rec, &why) != 0 ||
        topic_config_parse(kv->key, kv->value, rf, &v, &why) != 0) {
        ctl_core_refuse(out, WEIR_EINVALID_CONFIG, "%s", why.msg);
        return false;
    }
    if (v.key == TOPIC_CONFIG_MIN_INSYNC_REPLICAS) {
        *min_isr = (int32_t)v.i;
    }
    return true;
}

/* Every key is checked for form (record limits) and meaning against the
 * table every broker applies (common/topic_config.h: known key, valid
 * value, min.insync.replicas within the replication factor), so a config
 * is refused here rather than skipped by the brokers. */
static bool ctl_topic_check_configs(const struct ctl_event *ev,
                                    int32_t rf,
                                    int32_t *min_isr,
                                    struct ctl_actions *out)
{
    const struct ctl_kv *kv = ev->u.create.configs;
    uint32_t n = ev->u.create.n_configs;
    uint32_t i;
    uint32_t j;

    *min_isr = 0;
    if (n > META_MAX_CONFIGS - 1 || (n > 0 && kv == NULL)) {
        ctl_core_refuse(out, WEIR_EINVALID_CONFIG, "%u configs, at most %d", n,
                        META_MAX_CONFIGS - 1);
        return false;
    }
    for (i = 0; i < n; i++) {
        if (!ctl_topic_check_kv(&kv[i], rf, min_isr, out)) {
            return false;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(kv[i].key, kv[j].key) == 0) {
                ctl_core_refuse(out, WEIR_EINVALID_CONFIG,
                                "config %s given twice", kv[i].key);
                return false;
            }
        }
    }
    return true;
}

/* The replication factor, default applied, against the brokers. The
 * default is capped at the brokers *registered* (a one-broker cluster
 * still works), never at the brokers *in service*: a topic made while
 * brokers are down would keep the smaller factor for ever. So a factor
 * above the registered brokers (or 16) is INVALID_REPLICATION_FACTOR,
 * and one that the brokers in service cannot hold yet is
 * NOT_ENOUGH_REPLICAS: retriable and definite (nothing was written), the
 * code every client already retries, and the message names both counts.
 * (__consumer_offsets creation turns it into COORDINATOR_NOT_AVAILABLE.) */
static bool ctl_topic_check_rf(const struct ctl_core *core,
                               const struct ctl_event *ev,
                               int32_t *rf,
                               struct ctl_actions *out)
{
    int32_t registered = (int32_t)meta_image_broker_count(core->img);
    int32_t live = (int32_t)ctl_place_live_count(core->img);

    *rf = ev->u.create.replication_factor;
    if (*rf == 0) {
        *rf = core->cfg.default_replication_factor < registered
                  ? core->cfg.default_replication_factor
                  : registered;
    }
    if (registered == 0) {
        ctl_core_refuse(out, WEIR_ENOT_ENOUGH_REPLICAS,
                        "no broker has registered yet: try again later");
        return false;
    }
    if (*rf < 1 || *rf > META_MAX_REPLICAS || *rf > registered) {
        ctl_core_refuse(out, WEIR_EINVALID_REPLICATION_FACTOR,
                        "replication factor %d with %d registered brokers (at "
                        "most %d replicas)",
                        (int)*rf, (int)registered, META_MAX_REPLICAS);
        return false;
    }
    if (*rf > live) {
        ctl_core_refuse(out, WEIR_ENOT_ENOUGH_REPLICAS,
                        "replication factor %d needs %d brokers in service, "
                        "%d of %d are: try again when more are up",
                        (int)*rf, (int)*rf, (int)live, (int)registered);
        return false;
    }
    return true;
}

/* Partition count and replication factor, defaults applied. */
static bool ctl_topic_check_sizes(const struct ctl_core *core,
                                  const struct ctl_event *ev,
                                  int32_t *parts,
                                  int32_t *rf,
                                  struct ctl_actions *out)
{
    *parts = ev->u.create.partitions;
    if (*parts == 0) {
        *parts = core->cfg.default_partitions;
    }
    if (*parts < 1 || *parts > META_MAX_PARTITIONS) {
        ctl_core_refuse(out, WEIR_EINVALID_PARTITIONS,
                        "%d partitions, expected 1..%d", (int)*parts,
                        META_MAX_PARTITIONS);
        return false;
    }
    return ctl_topic_check_rf(core, ev, rf, out);
}

static bool ctl_topic_check(const struct ctl_core *core,
                            const struct ctl_event *ev,
                            int32_t *parts,
                            int32_t *rf,
                            int32_t *min_isr,
                            struct ctl_actions *out)
{
    const char *name = ev->u.create.name;
    struct err_detail why;

    if (name == NULL || names_topic_check(name, strlen(name), &why) != 0) {
        ctl_core_refuse(out, WEIR_EINVALID_TOPIC, "%s",
                        name == NULL ? "no topic name" : why.msg);
        return false;
    }
    if (meta_image_topic_by_name(core->img, name, strlen(name)) != NULL) {
        ctl_core_refuse(out, WEIR_ETOPIC_EXISTS, "topic %s exists", name);
        return false;
    }
    return ctl_topic_check_sizes(core, ev, parts, rf, out) &&
           ctl_topic_check_configs(ev, *rf, min_isr, out);
}

static int ctl_topic_emit_config(struct ctl_core *core,
                                 struct ctl_actions *out,
                                 int64_t topic_id,
                                 const char *key,
                                 const char *value)
{
    struct meta_record rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_TOPIC_CONFIG;
    rec.u.config.topic_id = topic_id;
    rec.u.config.key.ptr = key;
    rec.u.config.key.len = strlen(key);
    rec.u.config.value.ptr = value;
    rec.u.config.value.len = strlen(value);
    return ctl_core_emit(core, out, &rec);
}

static int ctl_topic_emit_configs(struct ctl_core *core,
                                  const struct ctl_event *ev,
                                  struct ctl_actions *out,
                                  int64_t topic_id,
                                  int32_t rf,
                                  int32_t min_isr)
{
    const struct ctl_kv *kv = ev->u.create.configs;
    char text[16];
    uint32_t i;
    int rv = 0;

    for (i = 0; rv == 0 && i < ev->u.create.n_configs; i++) {
        rv = ctl_topic_emit_config(core, out, topic_id, kv[i].key, kv[i].value);
    }
    if (rv == 0 && min_isr == 0) {
        min_isr = core->cfg.default_min_insync_replicas < rf
                      ? core->cfg.default_min_insync_replicas
                      : rf;
        (void)snprintf(text, sizeof(text), "%d", (int)min_isr);
        rv =
            ctl_topic_emit_config(core, out, topic_id, CTL_TOPIC_MIN_ISR, text);
    }
    return rv;
}

static int ctl_topic_emit_partitions(struct ctl_core *core,
                                     struct ctl_actions *out,
                                     const struct ctl_place *pl,
                                     int64_t topic_id,
                                     int32_t parts)
{
    struct meta_record rec;
    int32_t p;
    int rv = 0;

    for (p = 0; rv == 0 && p < parts; p++) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_PARTITION;
        rec.u.part.topic_id = topic_id;
        rec.u.part.partition = p;
        ctl_place_partition(pl, p, &rec.u.part.replicas);
        rec.u.part.isr = rec.u.part.replicas;
        rec.u.part.leader = rec.u.part.replicas.ids[0];
        rv = ctl_core_emit(core, out, &rec);
    }
    return rv;
}

int ctl_topic_create(struct ctl_core *core,
                     const struct ctl_event *ev,
                     struct ctl_actions *out)
{
    struct ctl_place pl;
    struct meta_record rec;
    int64_t topic_id = meta_image_end_offset(core->img);
    int32_t parts;
    int32_t rf;
    int32_t min_isr;
    int rv;

    if (!ctl_topic_check(core, ev, &parts, &rf, &min_isr, out)) {
        return 0;
    }
    if (ctl_place_init(&pl, core->img, topic_id, rf) != 0) {
        return err_set(&out->detail, WEIR_ENOMEM, "placing replicas");
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_CREATE_TOPIC;
    rec.u.topic.topic_id = topic_id;
    rec.u.topic.name.ptr = ev->u.create.name;
    rec.u.topic.name.len = strlen(ev->u.create.name);
    rv = ctl_core_emit(core, out, &rec);
    if (rv == 0) {
        rv = ctl_topic_emit_configs(core, ev, out, topic_id, rf, min_isr);
    }
    if (rv == 0) {
        rv = ctl_topic_emit_partitions(core, out, &pl, topic_id, parts);
    }
    ctl_place_fini(&pl);
    if (rv == 0) {
        out->topic_id = topic_id;
    }
    return rv;
}

int ctl_topic_delete(struct ctl_core *core,
                     const struct ctl_event *ev,
                     struct ctl_actions *out)
{
    const char *name = ev->u.del.name;
    const struct meta_topic *t;
    struct meta_record rec;
    int64_t topic_id;
    int rv;

    t = name == NULL ? NULL
                     : meta_image_topic_by_name(core->img, name, strlen(name));
    if (t == NULL) {
        ctl_core_refuse(out, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                        "no topic named %s", name == NULL ? "(null)" : name);
        return 0;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_REMOVE_TOPIC;
    rec.u.remove_topic_id = topic_id = t->id; /* t is gone after the emit */
    rv = ctl_core_emit(core, out, &rec);
    if (rv == 0) {
        out->topic_id = topic_id;
    }
    return rv;
}
