/* SPDX-License-Identifier: Apache-2.0 */
/* Leadership, ISR and ELR changes the controller makes on its own: when
 * brokers leave service (fenced, re-registered, shutting down), when a
 * replica goes offline or comes back, when a leaderless partition can get
 * a leader again, and the preferred-leader rebalance.
 * Safety rests on two sets (Kafka's KIP-966). Every ISR member holds every
 * committed record. The ELR (eligible leader replicas) holds replicas that
 * left the ISR while it was, or by leaving made it, smaller than
 * min.insync.replicas: brokers do not move the high watermark while the
 * ISR is that small, so nothing was committed without them and they hold
 * every committed record too. A clean election picks a serving ISR member,
 * else a serving ELR member (whose ISR is then just itself), never another
 * replica: a broker back with an empty or shorter log is not in either set.
 * The ISR may become empty: its last member leaves for the ELR and the
 * partition waits without a leader for an ELR member to come back. */
#include <string.h>

#include "controller/elect/ctl_core_int.h"

/* One partition being planned. */
struct ctl_plan {
    const struct ctl_core *core;
    const struct ctl_excl *ex;
    int64_t topic_id;
    int32_t partition;
    const struct meta_partition *p;
    uint32_t min_isr;
    bool flush_ack; /* the topic's flush policy (for ex->unclean) is ack */
};

static bool ctl_plan_is(const int32_t *who, int32_t id)
{
    return who != NULL && *who == id;
}

/* Can lead and be in the ISR now. */
static bool ctl_plan_ok(const struct ctl_plan *pl, int32_t id)
{
    return ctl_core_replica_ok(pl->core, id, pl->topic_id, pl->partition,
                               pl->ex);
}

/* May have lost records it once had (offline log, unclean stop): kept in
 * the ELR only when nobody else holds the committed records. An unclean
 * stop under flush policy ack loses nothing acknowledged: a replica
 * counts toward the high watermark only with what it has fsynced, so it
 * still holds every committed record and is not weak. */
static bool ctl_plan_weak(const struct ctl_plan *pl, int32_t id)
{
    return (ctl_plan_is(pl->ex->unclean, id) && !pl->flush_ack) ||
           ctl_core_replica_offline(pl->core, id, pl->topic_id, pl->partition);
}

static void ctl_plan_add(struct meta_ids *ids, int32_t id)
{
    ids->ids[ids->n++] = id;
}

/* The ISR and ELR once ex applies, before any election: members that can
 * no longer serve leave the ISR; while the ISR is below min ISR they (and
 * the ELR members) form the ELR, else the ELR empties; weak members stay
 * only when there would be nobody else; a wiped broker leaves both. */
static void ctl_plan_members(const struct ctl_plan *pl,
                             struct meta_partition_change *ch)
{
    const struct meta_partition *p = pl->p;
    struct meta_ids weak;
    uint32_t i;

    ch->isr.n = ch->elr.n = weak.n = 0;
    for (i = 0; i < p->replicas.n; i++) {
        int32_t id = p->replicas.ids[i];
        bool in_isr = meta_ids_has(&p->isr, id);
        if ((!in_isr && !meta_ids_has(&p->elr, id)) ||
            ctl_plan_is(pl->ex->wiped, id)) {
            continue;
        }
        if (in_isr && ctl_plan_ok(pl, id)) {
            ctl_plan_add(&ch->isr, id);
        } else if (ctl_plan_weak(pl, id)) {
            ctl_plan_add(&weak, id);
        } else {
            ctl_plan_add(&ch->elr, id);
        }
    }
    if (ch->isr.n >= pl->min_isr) {
        ch->elr.n = 0;
    } else if (ch->isr.n == 0 && ch->elr.n == 0) {
        ch->elr = weak;
    }
}

/* First replica, in replica order, that is in ids (NULL: any) and can
 * serve. -1 if none. */
static int32_t ctl_plan_first(const struct ctl_plan *pl,
                              const struct meta_ids *ids)
{
    uint32_t i;

    for (i = 0; i < pl->p->replicas.n; i++) {
        int32_t id = pl->p->replicas.ids[i];
        if ((ids == NULL || meta_ids_has(ids, id)) && ctl_plan_ok(pl, id)) {
            return id;
        }
    }
    return -1;
}

static void ctl_plan_remove(struct meta_ids *ids, int32_t id)
{
    uint32_t i;
    uint32_t k = 0;

    for (i = 0; i < ids->n; i++) {
        if (ids->ids[i] != id) {
            ids->ids[k++] = ids->ids[i];
        }
    }
    ids->n = k;
}

/* The first serving replica whose data is not known to be gone (its
 * broker came back with a new data dir and it has not been in the ISR
 * since): an unclean election loses what the others lack, but it must
 * not pick an empty log over a replica that holds records. -1 if none. */
static int32_t ctl_plan_first_unclean(const struct ctl_plan *pl)
{
    uint32_t i;

    for (i = 0; i < pl->p->replicas.n; i++) {
        int32_t id = pl->p->replicas.ids[i];
        if (ctl_plan_ok(pl, id) && !ctl_plan_is(pl->ex->wiped, id) &&
            !meta_partition_replica_empty(pl->p, id)) {
            return id;
        }
    }
    return -1;
}

/* Keep a leader that is still in the ISR, else the first ISR member (all
 * can serve), else the first serving ELR member with an ISR of itself,
 * else (unclean election on, and no ELR member left even among those not
 * serving now: they hold every committed record and may come back) the
 * first serving replica that is not known empty, which becomes the whole
 * ISR. */
static void ctl_plan_leader(const struct ctl_plan *pl,
                            struct meta_partition_change *ch)
{
    ch->leader = pl->p->leader;
    if (ch->leader != -1 && meta_ids_has(&ch->isr, ch->leader)) {
        return;
    }
    ch->leader = ch->isr.n > 0 ? ch->isr.ids[0] : -1;
    if (ch->leader != -1) {
        return;
    }
    ch->leader = ctl_plan_first(pl, &ch->elr);
    if (ch->leader != -1) {
        ctl_plan_remove(&ch->elr, ch->leader);
        ch->isr.n = 0;
        ctl_plan_add(&ch->isr, ch->leader);
        if (ch->isr.n >= pl->min_isr) {
            ch->elr.n = 0;
        }
        return;
    }
    if (pl->core->cfg.unclean_leader_election && ch->elr.n == 0) {
        ch->leader = ctl_plan_first_unclean(pl);
        if (ch->leader != -1) {
            ch->isr.n = ch->elr.n = 0;
            ctl_plan_add(&ch->isr, ch->leader);
            ch->flags = META_PART_UNCLEAN;
        }
    }
}

static bool ctl_elect_ids_equal(const struct meta_ids *a,
                                const struct meta_ids *b)
{
    return a->n == b->n &&
           memcmp(a->ids, b->ids, (size_t)a->n * sizeof(a->ids[0])) == 0;
}

/* The change pl's partition needs, if any: false if it stays as it is. */
static bool ctl_elect_plan(const struct ctl_plan *pl,
                           struct meta_partition_change *ch)
{
    const struct meta_partition *p = pl->p;

    if (p->leader_epoch == INT32_MAX || p->partition_epoch == INT32_MAX) {
        return false; /* epochs exhausted: leave it be rather than wrap */
    }
    memset(ch, 0, sizeof(*ch));
    ch->topic_id = pl->topic_id;
    ch->partition = pl->partition;
    ctl_plan_members(pl, ch);
    ctl_plan_leader(pl, ch);
    if (ch->leader == p->leader && ctl_elect_ids_equal(&ch->isr, &p->isr) &&
        ctl_elect_ids_equal(&ch->elr, &p->elr)) {
        return false;
    }
    ch->leader_epoch = p->leader_epoch + (ch->leader != p->leader);
    ch->partition_epoch = p->partition_epoch + 1;
    return true;
}

static int ctl_elect_emit(struct ctl_core *core,
                          struct ctl_actions *out,
                          const struct meta_partition_change *ch)
{
    struct meta_record rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_PARTITION_CHANGE;
    rec.u.change = *ch;
    out->n_unclean += (ch->flags & META_PART_UNCLEAN) != 0;
    return ctl_core_emit(core, out, &rec);
}

/* Plan every partition and write the changes that are due. Each change is
 * applied before the next is planned; partitions are independent, so the
 * order only fixes the order of the records. */
static int ctl_elect_walk(struct ctl_core *core,
                          struct ctl_actions *out,
                          const struct ctl_excl *ex)
{
    struct meta_partition_change ch;
    struct ctl_plan pl;
    uint32_t t;
    uint32_t i;
    int rv;

    pl.core = core;
    pl.ex = ex;
    for (t = 0; t < meta_image_topic_count(core->img); t++) {
        const struct meta_topic *topic = meta_image_topic_at(core->img, t);
        const char *flush = meta_topic_config(topic, "flush.policy");
        pl.topic_id = topic->id;
        pl.min_isr = meta_topic_min_isr(topic);
        pl.flush_ack =
            flush != NULL ? strcmp(flush, "ack") == 0 : ex->unclean_flush_ack;
        for (i = 0; i < topic->n_partitions; i++) {
            pl.partition = (int32_t)i;
            pl.p = &topic->partitions[i];
            if (!ctl_elect_plan(&pl, &ch)) {
                continue;
            }
            rv = ctl_elect_emit(core, out, &ch);
            if (rv != 0) {
                return rv;
            }
            /* the emit may have moved the topic array */
            topic = meta_image_topic_at(core->img, t);
        }
    }
    return 0;
}

int ctl_elect_evacuate(struct ctl_core *core,
                       struct ctl_actions *out,
                       const struct ctl_excl *ex)
{
    return ctl_elect_walk(core, out, ex);
}

int ctl_elect_leaderless(struct ctl_core *core, struct ctl_actions *out)
{
    static const struct ctl_excl none = {NULL, 0, NULL, NULL, false};

    return ctl_elect_walk(core, out, &none);
}

void ctl_elect_elr_after(const struct ctl_core *core,
                         int64_t topic_id,
                         int32_t partition,
                         const struct meta_partition *p,
                         const struct meta_ids *isr,
                         struct meta_ids *elr)
{
    const struct meta_topic *t = meta_image_topic(core->img, topic_id);
    uint32_t i;

    elr->n = 0;
    if (t == NULL || isr->n >= meta_topic_min_isr(t)) {
        return;
    }
    for (i = 0; i < p->replicas.n; i++) {
        int32_t id = p->replicas.ids[i];
        if ((meta_ids_has(&p->elr, id) || meta_ids_has(&p->isr, id)) &&
            !meta_ids_has(isr, id) &&
            !ctl_core_replica_offline(core, id, topic_id, partition)) {
            ctl_plan_add(elr, id);
        }
    }
}

/* Leadership goes back to the first replica wherever that one is in the
 * ISR and can serve, so leaders stay spread as placement spread them. The
 * ISR and ELR do not change, so this is always a clean election. */
int ctl_elect_preferred(struct ctl_core *core, struct ctl_actions *out)
{
    struct meta_partition_change ch;
    uint32_t t;
    uint32_t i;
    int rv;

    for (t = 0; t < meta_image_topic_count(core->img); t++) {
        const struct meta_topic *topic = meta_image_topic_at(core->img, t);
        for (i = 0; i < topic->n_partitions; i++) {
            const struct meta_partition *p = &topic->partitions[i];
            int32_t pref = p->replicas.ids[0];
            if (p->leader == pref || !meta_ids_has(&p->isr, pref) ||
                !ctl_core_replica_ok(core, pref, topic->id, (int32_t)i, NULL) ||
                p->leader_epoch == INT32_MAX ||
                p->partition_epoch == INT32_MAX) {
                continue;
            }
            memset(&ch, 0, sizeof(ch));
            ch.topic_id = topic->id;
            ch.partition = (int32_t)i;
            ch.isr = p->isr;
            ch.elr = p->elr;
            ch.leader = pref;
            ch.leader_epoch = p->leader_epoch + 1;
            ch.partition_epoch = p->partition_epoch + 1;
            rv = ctl_elect_emit(core, out, &ch);
            if (rv != 0) {
                return rv;
            }
            topic = meta_image_topic_at(core->img, t);
        }
    }
    return 0;
}
