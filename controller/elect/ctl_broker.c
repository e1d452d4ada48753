/* SPDX-License-Identifier: Apache-2.0 */
/* Broker lifecycle: registration, heartbeats, fencing and unfencing,
 * controlled shutdown. A broker serves (leads, joins ISRs) only while
 * unfenced. It registers fenced, with the offset of its REGISTER_BROKER
 * record as its epoch, and is unfenced once it reports having applied the
 * metadata log up to that record: before that it cannot know what it
 * leads. It is fenced again when its session expires, when it shuts down
 * and when it registers anew; the partitions it led move first, in the same
 * batch, so no fenced broker ever leads. */
#include <string.h>

#include "common/mem.h"
#include "controller/elect/ctl_core_int.h"

/* Heard from: a new full session, and a closed connection is forgotten
 * (it spoke again, so it is alive). */
static void ctl_broker_seen(const struct ctl_core *core, struct ctl_live *l)
{
    if (l != NULL) {
        l->last_seen_ms = core->now_ms;
        l->cut_at_ms = 0;
    }
}

static struct meta_str ctl_broker_str(const char *s)
{
    struct meta_str out = {s != NULL ? s : "", s != NULL ? strlen(s) : 0};
    return out;
}

/* Room for a new broker's liveness, made before any record is emitted. */
static int ctl_broker_add_live(struct ctl_core *core, int32_t id)
{
    struct ctl_live *l;
    uint32_t pos = 0;

    if (ctl_core_live(core, id) != NULL) {
        return 0;
    }
    if (mem_grow((void **)&core->live, &core->cap_live, core->n_live + 1,
                 sizeof(core->live[0])) != 0) {
        return WEIR_ENOMEM;
    }
    while (pos < core->n_live && core->live[pos].id < id) {
        pos++;
    }
    memmove(&core->live[pos + 1], &core->live[pos],
            (size_t)(core->n_live - pos) * sizeof(core->live[0]));
    core->n_live++;
    l = &core->live[pos];
    memset(l, 0, sizeof(*l));
    l->id = id;
    l->clean_prev_epoch = -1;
    return 0;
}

static int ctl_broker_fence_rec(struct ctl_core *core,
                                struct ctl_actions *out,
                                const struct meta_broker *b,
                                bool fence)
{
    struct meta_record rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = fence ? META_RECORD_FENCE_BROKER : META_RECORD_UNFENCE_BROKER;
    rec.u.fence.id = b->id;
    rec.u.fence.epoch = b->epoch;
    out->n_fenced += fence;
    return ctl_core_emit(core, out, &rec);
}

/* What a registration says about the data the broker had, compared with
 * its previous registration. Without a directory id, nothing: the broker
 * sends neither that nor its previous epoch. A directory id other than
 * the one registered before means a new data dir (the disk was lost or
 * wiped). Else a previous epoch other than the one it was registered with
 * (-1 after a kill, a crash or a power loss) means an unclean stop, after
 * which it may lack records it had not flushed; except the epoch its last
 * registration was judged clean with: the same registration sent again
 * because its answer was lost (the registration it repeats was applied,
 * so the epoch moved on). A process that crashed in between sends -1, so
 * the exception cannot hide an unclean stop. */
static void ctl_broker_data_check(const struct meta_broker *b,
                                  const struct ctl_live *live,
                                  const struct ctl_event *ev,
                                  bool *wiped,
                                  bool *unclean)
{
    const char *dir = ev->u.reg.directory_id;
    int64_t prev = ev->u.reg.previous_broker_epoch;

    *wiped = *unclean = false;
    if (b == NULL || dir == NULL || dir[0] == '\0') {
        return;
    }
    if (b->directory_id[0] != '\0' && strcmp(b->directory_id, dir) != 0) {
        *wiped = true;
        return;
    }
    *unclean = prev != b->epoch &&
               !(live != NULL && prev >= 0 && prev == live->clean_prev_epoch);
}

/* Before the new registration record: the old incarnation's leaderships
 * and ISR seats go (it lost whatever it had not written to disk), and
 * what the new one says about its data takes it out of the ELRs (unclean
 * stop, unless it is the last member) or out of everything (new data
 * dir). */
static int ctl_broker_reregister(struct ctl_core *core,
                                 const struct ctl_event *ev,
                                 const struct meta_broker *b,
                                 struct ctl_actions *out)
{
    struct ctl_excl ex;
    bool wiped;
    bool unclean;

    memset(&ex, 0, sizeof(ex));
    ctl_broker_data_check(b, ctl_core_live(core, ev->u.reg.broker_id), ev,
                          &wiped, &unclean);
    out->data_lost = wiped;
    out->unclean_stop = unclean;
    ex.unclean_flush_ack = ev->u.reg.default_flush_policy != NULL &&
                           strcmp(ev->u.reg.default_flush_policy, "ack") == 0;
    if (!b->fenced) {
        ex.ids = &ev->u.reg.broker_id;
        ex.n = 1;
        out->n_fenced++;
    }
    ex.unclean = unclean ? &ev->u.reg.broker_id : NULL;
    ex.wiped = wiped ? &ev->u.reg.broker_id : NULL;
    if (ex.n == 0 && !wiped && !unclean) {
        return 0;
    }
    return ctl_elect_evacuate(core, out, &ex);
}

static void ctl_broker_reg_records(const struct ctl_event *ev,
                                   struct meta_record *rec,
                                   struct meta_record *tls)
{
    memset(rec, 0, sizeof(*rec));
    rec->type = META_RECORD_REGISTER_BROKER;
    rec->u.reg.id = ev->u.reg.broker_id;
    rec->u.reg.host = ctl_broker_str(ev->u.reg.host);
    rec->u.reg.port = ev->u.reg.port;
    rec->u.reg.rack = ctl_broker_str(ev->u.reg.rack);
    rec->u.reg.directory_id = ctl_broker_str(ev->u.reg.directory_id);
    memset(tls, 0, sizeof(*tls));
    tls->type = META_RECORD_BROKER_TLS;
    tls->u.tls.id = rec->u.reg.id;
    tls->u.tls.host = ctl_broker_str(ev->u.reg.tls_host);
    tls->u.tls.port = ev->u.reg.tls_port;
}

int ctl_broker_register(struct ctl_core *core,
                        const struct ctl_event *ev,
                        struct ctl_actions *out)
{
    const struct meta_broker *b =
        meta_image_broker(core->img, ev->u.reg.broker_id);
    struct meta_record rec;
    struct meta_record tls;
    struct err_detail why;
    bool added;
    bool removed;
    int rv;

    ctl_broker_reg_records(ev, &rec, &tls);
    if (meta_record_check(&rec, &why) != 0 ||
        (tls.u.tls.port != 0 && meta_record_check(&tls, &why) != 0)) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST, "registration: %s",
                        why.msg);
        return 0;
    }
    if (ev->u.reg.n_offline > CTL_MAX_OFFLINE) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                        "registration lists %u offline replicas, at most %d",
                        ev->u.reg.n_offline, CTL_MAX_OFFLINE);
        return 0;
    }
    /* soft state first (it may fail for memory before any record is
     * made); the walk below already treats its offline replicas as such */
    rv = ctl_broker_add_live(core, rec.u.reg.id);
    if (rv == 0) {
        rv = ctl_core_set_offline(core, rec.u.reg.id, ev->u.reg.offline,
                                  ev->u.reg.n_offline, &added, &removed);
    }
    if (rv != 0) {
        return err_set(&out->detail, rv, "registering broker %d",
                       (int)rec.u.reg.id);
    }
    if (b != NULL) {
        rv = ctl_broker_reregister(core, ev, b, out);
    }
    if (rv != 0) {
        return rv;
    }
    rec.u.reg.epoch = meta_image_end_offset(core->img);
    rv = ctl_core_emit(core, out, &rec);
    if (rv == 0 && tls.u.tls.port != 0) {
        tls.u.tls.epoch = rec.u.reg.epoch;
        rv = ctl_core_emit(core, out, &tls);
    }
    if (rv != 0) {
        return rv;
    }
    ctl_broker_seen(core, ctl_core_live(core, rec.u.reg.id));
    ctl_core_live(core, rec.u.reg.id)->shutting_down = false;
    ctl_core_live(core, rec.u.reg.id)->clean_prev_epoch =
        b != NULL && !out->data_lost && !out->unclean_stop &&
                ev->u.reg.directory_id != NULL &&
                ev->u.reg.directory_id[0] != '\0'
            ? ev->u.reg.previous_broker_epoch
            : -1;
    out->broker_epoch = rec.u.reg.epoch;
    out->broker_fenced = true;
    out->offline_changed = added || removed;
    out->n_offline = ctl_core_live(core, rec.u.reg.id)->n_offline;
    return 0;
}

/* Leaderships and ISR seats move to other brokers, then the fence. From
 * then on heartbeats from this incarnation do not unfence it. */
static int
ctl_broker_stop(struct ctl_core *core, struct ctl_actions *out, int32_t id)
{
    const struct meta_broker *b = meta_image_broker(core->img, id);
    struct ctl_excl ex = {&id, 1, NULL, NULL, false};
    int rv = 0;

    if (!b->fenced) {
        rv = ctl_elect_evacuate(core, out, &ex);
        if (rv == 0) {
            rv = ctl_broker_fence_rec(core, out,
                                      meta_image_broker(core->img, id), true);
        }
    }
    if (rv == 0) {
        ctl_core_live(core, id)->shutting_down = true;
        out->shutdown_ok = true;
        out->broker_fenced = true;
    }
    return rv;
}

/* UNFENCE first, so the leaderless partitions it can lead see it. */
static int ctl_broker_unfence(struct ctl_core *core,
                              struct ctl_actions *out,
                              const struct meta_broker *b)
{
    int rv = ctl_broker_fence_rec(core, out, b, false);

    return rv != 0 ? rv : ctl_elect_leaderless(core, out);
}

int ctl_broker_heartbeat(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out)
{
    bool explicit = ev->type == CTL_EV_BROKER_CAUGHT_UP;
    int32_t id = explicit ? ev->u.broker.broker_id : ev->u.heartbeat.broker_id;
    int64_t epoch =
        explicit ? ev->u.broker.broker_epoch : ev->u.heartbeat.broker_epoch;
    const struct meta_broker *b = ctl_core_broker(core, out, id, epoch);
    struct ctl_live *live;
    bool caught_up;
    int rv = 0;

    if (b == NULL) {
        return 0;
    }
    live = ctl_core_live(core, id);
    ctl_broker_seen(core, live);
    out->broker_epoch = epoch;
    if (!explicit && ev->u.heartbeat.want_shutdown) {
        return ctl_broker_stop(core, out, id);
    }
    if (!explicit) {
        rv = ctl_offline_update(core, out, id, ev->u.heartbeat.offline,
                                ev->u.heartbeat.n_offline);
        if (rv != 0 || out->result != 0) {
            return rv;
        }
    }
    /* its own registration is the last record it needs to have applied */
    caught_up = explicit || ev->u.heartbeat.applied_offset >= b->epoch;
    if (b->fenced && caught_up && !live->shutting_down) {
        rv = ctl_broker_unfence(core, out, b);
    }
    out->broker_fenced = meta_image_broker(core->img, id)->fenced;
    out->shutdown_ok = live->shutting_down;
    return rv;
}

int ctl_broker_shutdown(struct ctl_core *core,
                        const struct ctl_event *ev,
                        struct ctl_actions *out)
{
    int32_t id = ev->u.broker.broker_id;

    if (ctl_core_broker(core, out, id, ev->u.broker.broker_epoch) == NULL) {
        return 0;
    }
    ctl_broker_seen(core, ctl_core_live(core, id));
    out->broker_epoch = ev->u.broker.broker_epoch;
    return ctl_broker_stop(core, out, id);
}

static bool ctl_broker_expired(const struct ctl_core *core,
                               const struct ctl_live *l)
{
    const struct meta_broker *b = meta_image_broker(core->img, l->id);

    return b != NULL && !b->fenced &&
           (core->now_ms - l->last_seen_ms > core->cfg.session_timeout_ms ||
            (l->cut_at_ms != 0 && core->now_ms >= l->cut_at_ms));
}

/* A connection of the broker's current epoch was closed by the broker's
 * side. A live broker heartbeats again on a new one within a heartbeat
 * interval or two; a dead one does not, and is fenced after
 * disconnect_timeout_ms instead of the whole session timeout. Nothing is
 * answered, so an unknown broker or an old epoch is simply ignored. */
int ctl_broker_disconnected(struct ctl_core *core, const struct ctl_event *ev)
{
    const struct meta_broker *b =
        meta_image_broker(core->img, ev->u.broker.broker_id);
    struct ctl_live *l = ctl_core_live(core, ev->u.broker.broker_id);
    uint64_t at = core->now_ms + core->cfg.disconnect_timeout_ms;

    if (core->cfg.disconnect_timeout_ms == 0 || b == NULL || l == NULL ||
        b->fenced || b->epoch != ev->u.broker.broker_epoch) {
        return 0;
    }
    if (l->cut_at_ms == 0 || at < l->cut_at_ms) {
        l->cut_at_ms = at == 0 ? 1 : at;
    }
    return 0;
}

/* All brokers whose sessions expired leave service in one batch, planned
 * together, so a partition whose ISR loses two of them is elected once. */
int ctl_broker_expire(struct ctl_core *core, struct ctl_actions *out)
{
    struct ctl_excl ex = {NULL, 0, NULL, NULL, false};
    int32_t *ids;
    uint32_t i;
    int rv;

    for (i = 0; i < core->n_live; i++) {
        ex.n += ctl_broker_expired(core, &core->live[i]);
    }
    if (ex.n == 0) {
        return 0;
    }
    ids = mem_malloc(ex.n * sizeof(ids[0]));
    if (ids == NULL) {
        return err_set(&out->detail, WEIR_ENOMEM, "fencing brokers");
    }
    ex.n = 0;
    for (i = 0; i < core->n_live; i++) {
        if (ctl_broker_expired(core, &core->live[i])) {
            ids[ex.n++] = core->live[i].id;
        }
    }
    ex.ids = ids;
    rv = ctl_elect_evacuate(core, out, &ex);
    for (i = 0; rv == 0 && i < ex.n; i++) {
        rv = ctl_broker_fence_rec(core, out,
                                  meta_image_broker(core->img, ids[i]), true);
    }
    mem_free(ids);
    return rv;
}
