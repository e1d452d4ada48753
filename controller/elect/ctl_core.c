/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core: lifecycle, the step loop, and the one way records are
 * made (ctl_core_emit: append to the batch, then apply at once, so later
 * decisions in the same step see earlier ones). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "controller/elect/ctl_core_int.h"
#include "controller/meta/meta_image.h"

void ctl_config_init(struct ctl_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->session_timeout_ms = 3000;
    cfg->disconnect_timeout_ms = 1000;
    cfg->first_contact_timeout_ms = 1500;
    cfg->rebalance_interval_ms = 300000;
    cfg->default_partitions = 1;
    cfg->default_replication_factor = 3;
    cfg->default_min_insync_replicas = 2;
    cfg->unclean_leader_election = false;
    cfg->producer_id_block = 1000;
}

void ctl_actions_init(struct ctl_actions *out)
{
    memset(out, 0, sizeof(*out));
    out->next_tick_ms = UINT64_MAX;
}

static void ctl_actions_reset(struct ctl_actions *out)
{
    struct meta_record *records = out->records;
    uint32_t cap_records = out->cap_records;
    char **strs = out->strs;
    uint32_t cap_strs = out->cap_strs;
    uint32_t i;

    for (i = 0; i < out->n_strs; i++) {
        mem_free(strs[i]);
    }
    ctl_actions_init(out);
    out->records = records;
    out->cap_records = cap_records;
    out->strs = strs;
    out->cap_strs = cap_strs;
    out->broker_epoch = -1;
    out->topic_id = -1;
    out->producer_id = -1;
    out->leader_epoch = -1;
    out->partition_epoch = -1;
}

void ctl_actions_fini(struct ctl_actions *out)
{
    ctl_actions_reset(out);
    mem_free(out->records);
    mem_free(out->strs);
    ctl_actions_init(out);
}

void ctl_core_refuse(struct ctl_actions *out, int code, const char *fmt, ...)
{
    va_list ap;

    out->result = code;
    out->detail.code = code;
    out->detail.sys_errno = 0;
    va_start(ap, fmt);
    (void)vsnprintf(out->detail.msg, sizeof(out->detail.msg), fmt, ap);
    va_end(ap);
}

static int ctl_core_check_config(const struct ctl_config *cfg)
{
    if (cfg->session_timeout_ms == 0 ||
        cfg->session_timeout_ms > CTL_MAX_INTERVAL_MS ||
        cfg->disconnect_timeout_ms > CTL_MAX_INTERVAL_MS ||
        cfg->first_contact_timeout_ms > CTL_MAX_INTERVAL_MS ||
        cfg->rebalance_interval_ms > CTL_MAX_INTERVAL_MS ||
        cfg->default_partitions < 1 ||
        cfg->default_partitions > META_MAX_PARTITIONS ||
        cfg->default_replication_factor < 1 ||
        cfg->default_replication_factor > META_MAX_REPLICAS ||
        cfg->default_min_insync_replicas < 1 || cfg->producer_id_block < 1 ||
        cfg->producer_id_block > CTL_MAX_PRODUCER_IDS) {
        return WEIR_EINVALID_ARGUMENT;
    }
    return 0;
}

int ctl_core_new(const struct ctl_config *cfg,
                 struct meta_image *img,
                 struct ctl_core **out)
{
    struct ctl_core *core;
    uint32_t i;
    uint32_t n;

    *out = NULL;
    if (ctl_core_check_config(cfg) != 0) {
        meta_image_free(img);
        return WEIR_EINVALID_ARGUMENT;
    }
    if (img == NULL && meta_image_new(&img) != 0) {
        return WEIR_ENOMEM;
    }
    core = mem_calloc(1, sizeof(*core));
    n = meta_image_broker_count(img);
    if (core == NULL || (n > 0 && (core->live = mem_calloc(
                                       n, sizeof(core->live[0]))) == NULL)) {
        mem_free(core);
        meta_image_free(img);
        return WEIR_ENOMEM;
    }
    core->cfg = *cfg;
    core->img = img;
    core->n_live = core->cap_live = n;
    for (i = 0; i < n; i++) {
        core->live[i].id = meta_image_broker_at(img, i)->id;
        core->live[i].clean_prev_epoch = -1;
    }
    /* the rest of a block reserved before the restart is skipped: ids stay
     * unique without persisting every id handed out */
    core->pid_next = core->pid_end = meta_image_next_producer_id(img);
    *out = core;
    return 0;
}

void ctl_core_free(struct ctl_core *core)
{
    uint32_t i;

    if (core == NULL) {
        return;
    }
    for (i = 0; i < core->n_live; i++) {
        mem_free(core->live[i].offline);
    }
    meta_image_free(core->img);
    mem_free(core->live);
    mem_free(core);
}

const struct meta_image *ctl_core_image(const struct ctl_core *core)
{
    return core->img;
}

bool ctl_core_failed(const struct ctl_core *core)
{
    return core->failed;
}

struct ctl_live *ctl_core_live(struct ctl_core *core, int32_t id)
{
    uint32_t lo = 0;
    uint32_t hi = core->n_live;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (core->live[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < core->n_live && core->live[lo].id == id ? &core->live[lo]
                                                        : NULL;
}

bool ctl_core_broker_liveness(const struct ctl_core *core,
                              int32_t id,
                              uint64_t *last_seen_ms,
                              bool *shutting_down)
{
    /* the lookup does not change the core */
    const struct ctl_live *l = ctl_core_live((struct ctl_core *)core, id);

    if (l == NULL) {
        return false;
    }
    *last_seen_ms = l->last_seen_ms;
    *shutting_down = l->shutting_down;
    return true;
}

bool ctl_core_can_serve(const struct ctl_core *core,
                        int32_t id,
                        const struct ctl_excl *ex)
{
    const struct meta_broker *b = meta_image_broker(core->img, id);
    uint32_t i;

    if (b == NULL || b->fenced) {
        return false;
    }
    for (i = 0; ex != NULL && i < ex->n; i++) {
        if (ex->ids[i] == id) {
            return false;
        }
    }
    return true;
}

const struct meta_broker *ctl_core_broker(struct ctl_core *core,
                                          struct ctl_actions *out,
                                          int32_t id,
                                          int64_t epoch)
{
    const struct meta_broker *b = meta_image_broker(core->img, id);

    if (b == NULL || b->epoch != epoch) {
        ctl_core_refuse(out, WEIR_ENOT_FOUND,
                        "broker %d epoch %lld is not registered%s", (int)id,
                        (long long)epoch,
                        b == NULL ? "" : " (stale epoch): register again");
        return NULL;
    }
    return b;
}

/* Copy len bytes of a record into out (NUL-terminated, for strings), so
 * the batch does not borrow from the event (gone after the step) or the
 * image (changed by later ones). */
static char *
ctl_core_keep_copy(struct ctl_actions *out, const void *p, size_t len)
{
    char *copy;

    if (out->n_strs == out->cap_strs &&
        mem_grow((void **)&out->strs, &out->cap_strs, out->n_strs + 1,
                 sizeof(out->strs[0])) != 0) {
        return NULL;
    }
    copy = mem_malloc(len + 1);
    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, p, len);
    copy[len] = '\0';
    out->strs[out->n_strs++] = copy;
    return copy;
}

static int ctl_core_keep_str(struct ctl_actions *out, struct meta_str *s)
{
    char *copy;

    if (s->len == 0) {
        s->ptr = "";
        return 0;
    }
    copy = ctl_core_keep_copy(out, s->ptr, s->len);
    if (copy == NULL) {
        return WEIR_ENOMEM;
    }
    s->ptr = copy;
    return 0;
}

static int ctl_core_keep_bytes(struct ctl_actions *out, struct meta_bytes *b)
{
    char *copy;

    if (b->len == 0) {
        return 0;
    }
    copy = ctl_core_keep_copy(out, b->ptr, b->len);
    if (copy == NULL) {
        return WEIR_ENOMEM;
    }
    b->ptr = (const uint8_t *)copy;
    return 0;
}

static int ctl_core_keep_user(struct ctl_actions *out,
                              struct meta_user_scram *u)
{
    if (ctl_core_keep_str(out, &u->name) != 0 ||
        ctl_core_keep_bytes(out, &u->salt) != 0 ||
        ctl_core_keep_bytes(out, &u->stored_key) != 0) {
        return WEIR_ENOMEM;
    }
    return ctl_core_keep_bytes(out, &u->server_key);
}

static int ctl_core_keep(struct ctl_actions *out, struct meta_record *rec)
{
    switch (rec->type) {
    case META_RECORD_USER_SCRAM:
        return ctl_core_keep_user(out, &rec->u.user);
    case META_RECORD_REMOVE_USER_SCRAM:
        return ctl_core_keep_str(out, &rec->u.user_ref.name);
    case META_RECORD_ACL:
    case META_RECORD_REMOVE_ACL:
        if (ctl_core_keep_str(out, &rec->u.acl.principal) != 0) {
            return WEIR_ENOMEM;
        }
        return ctl_core_keep_str(out, &rec->u.acl.name);
    case META_RECORD_REGISTER_BROKER:
        if (ctl_core_keep_str(out, &rec->u.reg.host) != 0 ||
            ctl_core_keep_str(out, &rec->u.reg.directory_id) != 0) {
            return WEIR_ENOMEM;
        }
        return ctl_core_keep_str(out, &rec->u.reg.rack);
    case META_RECORD_CREATE_TOPIC:
        return ctl_core_keep_str(out, &rec->u.topic.name);
    case META_RECORD_TOPIC_CONFIG:
        if (ctl_core_keep_str(out, &rec->u.config.key) != 0) {
            return WEIR_ENOMEM;
        }
        return ctl_core_keep_str(out, &rec->u.config.value);
    default:
        return 0;
    }
}

int ctl_core_emit(struct ctl_core *core,
                  struct ctl_actions *out,
                  const struct meta_record *rec)
{
    struct meta_record *slot = NULL;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = mem_grow((void **)&out->records, &out->cap_records, out->n_records + 1,
                  sizeof(out->records[0]));
    if (rv == 0) {
        slot = &out->records[out->n_records];
        *slot = *rec;
        rv = ctl_core_keep(out, slot);
    }
    if (rv == 0) {
        rv = meta_image_apply(core->img, slot, &ed);
    }
    if (rv == 0) {
        out->n_records++;
        return 0;
    }
    /* records applied before this one cannot be taken back */
    core->failed = core->failed || out->n_records > 0;
    if (rv != WEIR_ENOMEM) {
        core->failed = true;
        return err_set(&out->detail, WEIR_EUNKNOWN,
                       "controller made a record its image refuses: %s",
                       ed.msg);
    }
    return err_set(&out->detail, WEIR_ENOMEM, "out of memory in a step");
}

/* Every broker known from the image gets a full session from the first
 * event after a (re)start or a failover: the old controller's view of when
 * it was last heard from is gone, and fencing on a guess would move
 * leaders for no reason. But a live broker finds the new controller
 * within a few hundred milliseconds (it looks as soon as its controller
 * goes away, cluster_follow.c), and one that does not by the first-contact
 * timeout is most likely dead: the case of a broker killed together with
 * the active controller, which nobody saw close its connection. It is
 * fenced then, like a broker whose connection closed (cut_at_ms), instead
 * of a whole session later. */
static void ctl_core_start(struct ctl_core *core)
{
    uint64_t first = core->cfg.first_contact_timeout_ms;
    uint32_t i;

    for (i = 0; i < core->n_live; i++) {
        core->live[i].last_seen_ms = core->now_ms;
        core->live[i].cut_at_ms = 0;
        if (first > 0 && first < core->cfg.session_timeout_ms) {
            core->live[i].cut_at_ms = core->now_ms + first;
        }
    }
    if (core->cfg.rebalance_interval_ms > 0) {
        core->next_rebalance_ms =
            core->now_ms + core->cfg.rebalance_interval_ms;
    }
    core->started = true;
}

static int ctl_core_tick(struct ctl_core *core, struct ctl_actions *out)
{
    int rv = ctl_broker_expire(core, out);

    if (rv == 0 && !core->start_elected) {
        /* after a (re)start, whatever can get a leader now gets one at
         * once (a restart that turned unclean election on, say), not at
         * the next rebalance check */
        core->start_elected = true;
        rv = ctl_elect_leaderless(core, out);
    }
    if (rv != 0 || core->cfg.rebalance_interval_ms == 0 ||
        core->now_ms < core->next_rebalance_ms) {
        return rv;
    }
    core->next_rebalance_ms = core->now_ms + core->cfg.rebalance_interval_ms;
    rv = ctl_elect_leaderless(core, out);
    if (rv == 0) {
        rv = ctl_elect_preferred(core, out);
    }
    return rv;
}

static int ctl_core_pids(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out)
{
    int64_t count = ev->u.pids.count;
    struct meta_record rec;
    int64_t grab;
    int rv;

    if (ctl_core_broker(core, out, ev->u.pids.broker_id,
                        ev->u.pids.broker_epoch) == NULL) {
        return 0;
    }
    if (count < 1 || count > CTL_MAX_PRODUCER_IDS) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                        "%lld producer ids asked for, 1..%d allowed",
                        (long long)count, CTL_MAX_PRODUCER_IDS);
        return 0;
    }
    if (core->pid_end - core->pid_next < count) {
        grab = count > core->cfg.producer_id_block
                   ? count
                   : core->cfg.producer_id_block;
        if (core->pid_next > INT64_MAX - grab) {
            ctl_core_refuse(out, WEIR_EPOLICY_VIOLATION,
                            "producer ids exhausted");
            return 0;
        }
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_PRODUCER_IDS;
        rec.u.next_producer_id = core->pid_next + grab;
        rv = ctl_core_emit(core, out, &rec);
        if (rv != 0) {
            return rv;
        }
        core->pid_end = rec.u.next_producer_id;
    }
    out->producer_id = core->pid_next;
    out->producer_id_count = count;
    core->pid_next += count;
    return 0;
}

static int ctl_core_dispatch(struct ctl_core *core,
                             const struct ctl_event *ev,
                             struct ctl_actions *out)
{
    switch (ev->type) {
    case CTL_EV_TICK:
        return ctl_core_tick(core, out);
    case CTL_EV_BROKER_REGISTER:
        return ctl_broker_register(core, ev, out);
    case CTL_EV_BROKER_HEARTBEAT:
    case CTL_EV_BROKER_CAUGHT_UP:
        return ctl_broker_heartbeat(core, ev, out);
    case CTL_EV_CONTROLLED_SHUTDOWN:
        return ctl_broker_shutdown(core, ev, out);
    case CTL_EV_CREATE_TOPIC:
        return ctl_topic_create(core, ev, out);
    case CTL_EV_DELETE_TOPIC:
        return ctl_topic_delete(core, ev, out);
    case CTL_EV_ALTER_ISR:
        return ctl_isr_alter(core, ev, out);
    case CTL_EV_ALLOCATE_PRODUCER_IDS:
        return ctl_core_pids(core, ev, out);
    case CTL_EV_BROKER_DISCONNECTED:
        return ctl_broker_disconnected(core, ev);
    case CTL_EV_UPSERT_USER:
        return ctl_auth_upsert_user(core, ev, out);
    case CTL_EV_DELETE_USER:
        return ctl_auth_delete_user(core, ev, out);
    case CTL_EV_ADD_ACL:
    case CTL_EV_REMOVE_ACL:
        return ctl_auth_acl(core, ev, out);
    }
    ctl_core_refuse(out, WEIR_EINVALID_REQUEST, "unknown event type %d",
                    (int)ev->type);
    return 0;
}

/* The earliest session that can expire, or the next rebalance. */
static uint64_t ctl_core_next_tick(const struct ctl_core *core)
{
    uint64_t next = UINT64_MAX;
    uint32_t i;

    for (i = 0; i < core->n_live; i++) {
        const struct meta_broker *b =
            meta_image_broker(core->img, core->live[i].id);
        uint64_t due =
            core->live[i].last_seen_ms + core->cfg.session_timeout_ms + 1;
        if (core->live[i].cut_at_ms != 0 && core->live[i].cut_at_ms < due) {
            due = core->live[i].cut_at_ms;
        }
        if (b != NULL && !b->fenced && due < next) {
            next = due;
        }
    }
    if (core->cfg.rebalance_interval_ms > 0 && core->next_rebalance_ms < next) {
        next = core->next_rebalance_ms;
    }
    return next;
}

int ctl_core_step(struct ctl_core *core,
                  const struct ctl_event *ev,
                  struct ctl_actions *out)
{
    int rv;

    ctl_actions_reset(out);
    if (core->failed) {
        out->result = WEIR_EUNKNOWN;
        return err_set(&out->detail, WEIR_EUNKNOWN,
                       "controller core failed in an earlier step: rebuild "
                       "it from the metadata log");
    }
    if (ev->now_ms > core->now_ms) {
        core->now_ms = ev->now_ms;
    }
    if (!core->started) {
        ctl_core_start(core);
    }
    out->first_offset = meta_image_end_offset(core->img);
    rv = ctl_core_dispatch(core, ev, out);
    out->end_offset = meta_image_end_offset(core->img);
    out->next_tick_ms = ctl_core_next_tick(core);
    if (rv != 0) {
        /* nothing of a failed step may reach the log */
        out->n_records = 0;
        out->result = rv;
    }
    return rv;
}
