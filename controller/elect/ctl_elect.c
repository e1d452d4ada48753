/* SPDX-License-Identifier: Apache-2.0 */
/* Leadership and ISR changes the controller makes on its own: when brokers
 * leave service (fenced, re-registered, shutting down), when a leaderless
 * partition can get a leader again, and the preferred-leader rebalance.
 * Safety rests on the ISR: every member holds every committed record, so a
 * clean election picks only ISR members, and the ISR never becomes empty:
 * when its last serving member goes, the members stay and the partition
 * waits without a leader for one of them (Kafka's KIP-841). */
#include <string.h>

#include "controller/elect/ctl_core_int.h"

/* The ISR without brokers that cannot serve; unchanged if that would
 * leave nobody. */
static void ctl_elect_isr(const struct ctl_core *core,
                          const struct meta_partition *p,
                          const struct ctl_excl *ex,
                          struct meta_ids *isr)
{
    uint32_t i;

    isr->n = 0;
    for (i = 0; i < p->isr.n; i++) {
        if (ctl_core_can_serve(core, p->isr.ids[i], ex)) {
            isr->ids[isr->n++] = p->isr.ids[i];
        }
    }
    if (isr->n == 0) {
        *isr = p->isr;
    }
}

/* First replica, in replica order, that can serve and (for a clean
 * election) is in isr. -1 if none. */
static int32_t ctl_elect_first(const struct ctl_core *core,
                               const struct meta_partition *p,
                               const struct ctl_excl *ex,
                               const struct meta_ids *isr)
{
    uint32_t i;

    for (i = 0; i < p->replicas.n; i++) {
        int32_t id = p->replicas.ids[i];
        if ((isr == NULL || meta_ids_has(isr, id)) &&
            ctl_core_can_serve(core, id, ex)) {
            return id;
        }
    }
    return -1;
}

static bool ctl_elect_ids_equal(const struct meta_ids *a,
                                const struct meta_ids *b)
{
    return a->n == b->n &&
           memcmp(a->ids, b->ids, (size_t)a->n * sizeof(a->ids[0])) == 0;
}

/* Plan the change that brokers in ex leaving service (and brokers already
 * fenced) make to p: keep a leader that can still serve, else elect the
 * first serving ISR member in replica order, else (unclean election on)
 * the first serving replica, which becomes the whole ISR. False if p
 * stays as it is. */
static bool ctl_elect_plan(const struct ctl_core *core,
                           int64_t topic_id,
                           int32_t partition,
                           const struct meta_partition *p,
                           const struct ctl_excl *ex,
                           struct meta_partition_change *ch)
{
    if (p->leader_epoch == INT32_MAX || p->partition_epoch == INT32_MAX) {
        return false; /* epochs exhausted: leave it be rather than wrap */
    }
    memset(ch, 0, sizeof(*ch));
    ch->topic_id = topic_id;
    ch->partition = partition;
    ctl_elect_isr(core, p, ex, &ch->isr);
    ch->leader = p->leader;
    if (p->leader == -1 || !ctl_core_can_serve(core, p->leader, ex)) {
        ch->leader = ctl_elect_first(core, p, ex, &ch->isr);
    }
    if (ch->leader == -1 && core->cfg.unclean_leader_election) {
        ch->leader = ctl_elect_first(core, p, ex, NULL);
        if (ch->leader != -1) {
            ch->isr.n = 1;
            ch->isr.ids[0] = ch->leader;
            ch->flags = META_PART_UNCLEAN;
        }
    }
    if (ch->leader == p->leader && ctl_elect_ids_equal(&ch->isr, &p->isr)) {
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

static bool ctl_elect_touches(const struct meta_partition *p,
                              const struct ctl_excl *ex)
{
    uint32_t i;

    for (i = 0; i < ex->n; i++) {
        if (meta_ids_has(&p->isr, ex->ids[i])) {
            return true;
        }
    }
    return false;
}

/* Which partitions a walk changes. */
enum ctl_elect_scope {
    CTL_ELECT_EXCLUDED,   /* those with an excluded broker in the ISR */
    CTL_ELECT_LEADERLESS, /* those without a leader */
};

static int ctl_elect_walk(struct ctl_core *core,
                          struct ctl_actions *out,
                          const struct ctl_excl *ex,
                          enum ctl_elect_scope scope)
{
    struct meta_partition_change ch;
    uint32_t t;
    uint32_t i;
    int rv;

    /* each change is applied before the next is planned; partitions are
     * independent, so the order only fixes the order of the records */
    for (t = 0; t < meta_image_topic_count(core->img); t++) {
        const struct meta_topic *topic = meta_image_topic_at(core->img, t);
        for (i = 0; i < topic->n_partitions; i++) {
            const struct meta_partition *p = &topic->partitions[i];
            bool in_scope = scope == CTL_ELECT_EXCLUDED
                                ? ctl_elect_touches(p, ex)
                                : p->leader == -1;
            if (!in_scope ||
                !ctl_elect_plan(core, topic->id, (int32_t)i, p, ex, &ch)) {
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
    return ctl_elect_walk(core, out, ex, CTL_ELECT_EXCLUDED);
}

int ctl_elect_leaderless(struct ctl_core *core, struct ctl_actions *out)
{
    return ctl_elect_walk(core, out, NULL, CTL_ELECT_LEADERLESS);
}

/* Leadership goes back to the first replica wherever that one is in the
 * ISR and can serve, so leaders stay spread as placement spread them. The
 * ISR does not change, so this is always a clean election. */
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
                !ctl_core_can_serve(core, pref, NULL) ||
                p->leader_epoch == INT32_MAX ||
                p->partition_epoch == INT32_MAX) {
                continue;
            }
            memset(&ch, 0, sizeof(ch));
            ch.topic_id = topic->id;
            ch.partition = (int32_t)i;
            ch.isr = p->isr;
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
