/* SPDX-License-Identifier: Apache-2.0 */
/* ISR changes proposed by partition leaders, accepted by compare-and-set:
 * the proposal names the leader epoch and partition epoch it was computed
 * from, and is refused unless both are still current and the proposer
 * still leads. So a deposed leader, or one that missed a change the
 * controller made (a follower fenced), cannot overwrite newer state; in
 * particular it cannot shrink the ISR to itself and go on acknowledging.
 * Answers (out->result):
 *   UNKNOWN_TOPIC_OR_PARTITION  no such partition
 *   NOT_FOUND                   proposer (id, broker epoch) not registered
 *   FENCED_LEADER_EPOCH         leader epoch or partition epoch is stale
 *   UNKNOWN_LEADER_EPOCH        leader epoch is newer than the controller's
 *   NOT_LEADER                  epochs match but the proposer does not lead
 *   INVALID_REQUEST             ISR empty, with duplicates, outside the
 *                               replicas, without the leader, adding a
 *                               broker that is fenced or whose replica
 *                               is offline, or a newer partition epoch
 *                               than the controller's
 * An accepted change also sets the ELR (ctl_elect_elr_after): members that
 * leave while the ISR is below min.insync.replicas join it, members that
 * join leave it, and it empties once the ISR reaches min.insync.replicas.
 * On any answer out->leader_epoch, partition_epoch and isr hold the
 * partition's current state when it exists. */
#include <string.h>

#include "controller/elect/ctl_core_int.h"

/* Epochs and proposer: is the proposal based on the current state? */
static bool ctl_isr_check_cas(const struct meta_partition *p,
                              const struct ctl_event *ev,
                              struct ctl_actions *out)
{
    int32_t le = ev->u.alter_isr.leader_epoch;
    int32_t pe = ev->u.alter_isr.partition_epoch;

    if (le != p->leader_epoch) {
        ctl_core_refuse(out,
                        le < p->leader_epoch ? WEIR_EFENCED_LEADER_EPOCH
                                             : WEIR_EUNKNOWN_LEADER_EPOCH,
                        "leader epoch %d, current %d", (int)le,
                        (int)p->leader_epoch);
        return false;
    }
    if (ev->u.alter_isr.broker_id != p->leader) {
        ctl_core_refuse(out, WEIR_ENOT_LEADER,
                        "broker %d does not lead (%d does)",
                        (int)ev->u.alter_isr.broker_id, (int)p->leader);
        return false;
    }
    if (pe != p->partition_epoch) {
        ctl_core_refuse(out,
                        pe < p->partition_epoch ? WEIR_EFENCED_LEADER_EPOCH
                                                : WEIR_EINVALID_REQUEST,
                        "partition epoch %d, current %d", (int)pe,
                        (int)p->partition_epoch);
        return false;
    }
    return true;
}

/* The proposed ISR in replica order, or false after refusing it. */
static bool ctl_isr_order(const struct ctl_core *core,
                          const struct meta_partition *p,
                          const struct ctl_event *ev,
                          struct meta_ids *isr,
                          struct ctl_actions *out)
{
    const struct meta_ids *want = &ev->u.alter_isr.isr;
    uint32_t i;
    uint32_t j;

    if (want->n == 0 || want->n > META_MAX_REPLICAS) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST, "ISR of %u members",
                        want->n);
        return false;
    }
    for (i = 0; i < want->n; i++) {
        for (j = 0; j < i; j++) {
            if (want->ids[j] == want->ids[i]) {
                ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                                "broker %d twice in the ISR",
                                (int)want->ids[i]);
                return false;
            }
        }
        if (!meta_ids_has(&p->replicas, want->ids[i])) {
            ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                            "broker %d is not a replica", (int)want->ids[i]);
            return false;
        }
        /* joining needs a broker that is up and caught up on metadata,
         * with its log of this partition online */
        if (!meta_ids_has(&p->isr, want->ids[i]) &&
            !ctl_core_replica_ok(core, want->ids[i], ev->u.alter_isr.topic_id,
                                 ev->u.alter_isr.partition, NULL)) {
            ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                            "broker %d cannot join the ISR: %s",
                            (int)want->ids[i],
                            ctl_core_can_serve(core, want->ids[i], NULL)
                                ? "its replica is offline"
                                : "fenced");
            return false;
        }
    }
    if (!meta_ids_has(want, p->leader)) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                        "the ISR must contain the leader %d", (int)p->leader);
        return false;
    }
    isr->n = 0;
    for (i = 0; i < p->replicas.n; i++) {
        if (meta_ids_has(want, p->replicas.ids[i])) {
            isr->ids[isr->n++] = p->replicas.ids[i];
        }
    }
    return true;
}

static void ctl_isr_report(const struct meta_image *img,
                           int64_t topic_id,
                           int32_t partition,
                           struct ctl_actions *out)
{
    const struct meta_partition *p =
        meta_image_partition(img, topic_id, partition);

    if (p != NULL) {
        out->leader_epoch = p->leader_epoch;
        out->partition_epoch = p->partition_epoch;
        out->isr = p->isr;
    }
}

static int ctl_isr_apply(struct ctl_core *core,
                         const struct ctl_event *ev,
                         const struct meta_partition *p,
                         const struct meta_ids *isr,
                         struct ctl_actions *out)
{
    struct meta_record rec;

    if (isr->n == p->isr.n &&
        memcmp(isr->ids, p->isr.ids, isr->n * sizeof(isr->ids[0])) == 0) {
        return 0; /* already so: nothing to write, and not an error */
    }
    if (p->partition_epoch == INT32_MAX) {
        ctl_core_refuse(out, WEIR_EPOLICY_VIOLATION,
                        "partition epochs exhausted");
        return 0;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_PARTITION_CHANGE;
    rec.u.change.topic_id = ev->u.alter_isr.topic_id;
    rec.u.change.partition = ev->u.alter_isr.partition;
    rec.u.change.isr = *isr;
    ctl_elect_elr_after(core, ev->u.alter_isr.topic_id,
                        ev->u.alter_isr.partition, p, isr, &rec.u.change.elr);
    rec.u.change.leader = p->leader;
    rec.u.change.leader_epoch = p->leader_epoch;
    rec.u.change.partition_epoch = p->partition_epoch + 1;
    return ctl_core_emit(core, out, &rec);
}

int ctl_isr_alter(struct ctl_core *core,
                  const struct ctl_event *ev,
                  struct ctl_actions *out)
{
    int64_t topic_id = ev->u.alter_isr.topic_id;
    int32_t partition = ev->u.alter_isr.partition;
    const struct meta_partition *p;
    struct meta_ids isr;
    int rv = 0;

    p = meta_image_partition(core->img, topic_id, partition);
    if (p == NULL) {
        ctl_core_refuse(out, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                        "no partition %d in topic id %lld", (int)partition,
                        (long long)topic_id);
        return 0;
    }
    if (ctl_core_broker(core, out, ev->u.alter_isr.broker_id,
                        ev->u.alter_isr.broker_epoch) != NULL &&
        ctl_isr_check_cas(p, ev, out) &&
        ctl_isr_order(core, p, ev, &isr, out)) {
        rv = ctl_isr_apply(core, ev, p, &isr, out);
    }
    ctl_isr_report(core->img, topic_id, partition, out);
    return rv;
}
