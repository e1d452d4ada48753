/* SPDX-License-Identifier: Apache-2.0 */
/* Applying PARTITION and PARTITION_CHANGE. These carry the values that
 * elections and ISR changes decided, and apply checks they are consistent
 * with the image rather than recomputing them: the decision lives in one
 * place (the controller core), and a log that a bug made inconsistent is
 * refused on replay instead of being silently repaired. */
#include <string.h>

#include "common/mem.h"
#include "controller/meta/meta_image_int.h"

/* ISR (or ELR) members in the order they appear in the replica list. */
static int meta_image_check_order(const struct meta_ids *replicas,
                                  const struct meta_ids *ids,
                                  const char *what,
                                  struct err_detail *ed)
{
    uint32_t r = 0;
    uint32_t i;

    for (i = 0; i < ids->n; i++) {
        while (r < replicas->n && replicas->ids[r] != ids->ids[i]) {
            r++;
        }
        if (r == replicas->n) {
            return err_set(ed, WEIR_ECORRUPT,
                           "%s member %d is not a replica or out of replica "
                           "order",
                           what, (int)ids->ids[i]);
        }
        r++;
    }
    return 0;
}

static int meta_image_check_isr(const struct meta_ids *replicas,
                                const struct meta_ids *isr,
                                const struct meta_ids *elr,
                                struct err_detail *ed)
{
    if (meta_image_check_order(replicas, isr, "ISR", ed) != 0) {
        return WEIR_ECORRUPT;
    }
    return meta_image_check_order(replicas, elr, "ELR", ed);
}

/* The bits (replica positions) of the ids in p's replica list. */
static uint16_t meta_image_empty_bits(const struct meta_partition *p,
                                      const struct meta_ids *ids)
{
    uint16_t bits = 0;
    uint32_t r;

    for (r = 0; r < p->replicas.n; r++) {
        if (meta_ids_has(ids, p->replicas.ids[r])) {
            bits |= (uint16_t)(1u << r);
        }
    }
    return bits;
}

static int meta_image_check_leader(const struct meta_image *img,
                                   int32_t leader,
                                   struct err_detail *ed)
{
    const struct meta_broker *b;

    if (leader == -1) {
        return 0;
    }
    b = meta_image_broker(img, leader);
    if (b == NULL || b->fenced) {
        return err_set(ed, WEIR_ECORRUPT, "leader %d is %s", (int)leader,
                       b == NULL ? "not registered" : "fenced");
    }
    return 0;
}

static int meta_image_check_new_part(const struct meta_image *img,
                                     const struct meta_topic_slot *slot,
                                     const struct meta_partition_rec *rec,
                                     struct err_detail *ed)
{
    uint32_t i;

    if (slot == NULL) {
        return err_set(ed, WEIR_ECORRUPT, "partition of unknown topic id %lld",
                       (long long)rec->topic_id);
    }
    if ((uint32_t)rec->partition != slot->pub.n_partitions) {
        return err_set(
            ed, WEIR_ECORRUPT, "topic %s: partition %d where %u is next",
            slot->pub.name, (int)rec->partition, slot->pub.n_partitions);
    }
    for (i = 0; i < rec->replicas.n; i++) {
        if (meta_image_broker(img, rec->replicas.ids[i]) == NULL) {
            return err_set(ed, WEIR_ECORRUPT, "replica %d is not registered",
                           (int)rec->replicas.ids[i]);
        }
    }
    if (meta_image_check_isr(&rec->replicas, &rec->isr, &rec->elr, ed) != 0) {
        return WEIR_ECORRUPT;
    }
    return meta_image_check_leader(img, rec->leader, ed);
}

int meta_image_apply_partition(struct meta_image *img,
                               const struct meta_partition_rec *rec,
                               struct err_detail *ed)
{
    struct meta_topic_slot *slot = meta_image_topic_mut(img, rec->topic_id);
    struct meta_partition *p;
    int rv;

    rv = meta_image_check_new_part(img, slot, rec, ed);
    if (rv != 0) {
        return rv;
    }
    if (mem_grow((void **)&slot->pub.partitions, &slot->cap_partitions,
                 slot->pub.n_partitions + 1,
                 sizeof(slot->pub.partitions[0])) != 0) {
        return err_set(ed, WEIR_ENOMEM, "adding a partition");
    }
    p = &slot->pub.partitions[slot->pub.n_partitions++];
    memset(p, 0, sizeof(*p));
    p->replicas = rec->replicas;
    p->isr = rec->isr;
    p->elr = rec->elr;
    p->leader = rec->leader;
    p->leader_epoch = rec->leader_epoch;
    p->partition_epoch = rec->partition_epoch;
    p->flags = rec->flags;
    if (p->leader != -1) {
        meta_image_broker_mut(img, p->leader)->n_led++;
    }
    return 0;
}

/* partition_epoch moves by exactly one; leader_epoch by one exactly when
 * the leader changes, so a broker can tell "new leader" from "new ISR". */
static int meta_image_check_epochs(const struct meta_partition *p,
                                   const struct meta_partition_change *rec,
                                   struct err_detail *ed)
{
    int64_t want_le = (int64_t)p->leader_epoch + (rec->leader != p->leader);

    if ((int64_t)rec->partition_epoch != (int64_t)p->partition_epoch + 1) {
        return err_set(ed, WEIR_ECORRUPT,
                       "partition epoch %d does not follow %d",
                       (int)rec->partition_epoch, (int)p->partition_epoch);
    }
    if ((int64_t)rec->leader_epoch != want_le) {
        return err_set(ed, WEIR_ECORRUPT,
                       "leader epoch %d, expected %lld (leader %d -> %d)",
                       (int)rec->leader_epoch, (long long)want_le,
                       (int)p->leader, (int)rec->leader);
    }
    return 0;
}

int meta_image_apply_change(struct meta_image *img,
                            const struct meta_partition_change *rec,
                            struct err_detail *ed)
{
    struct meta_topic_slot *slot = meta_image_topic_mut(img, rec->topic_id);
    struct meta_partition *p;

    if (slot == NULL || (uint32_t)rec->partition >= slot->pub.n_partitions) {
        return err_set(ed, WEIR_ECORRUPT, "change to unknown partition %lld/%d",
                       (long long)rec->topic_id, (int)rec->partition);
    }
    p = &slot->pub.partitions[rec->partition];
    if (meta_image_check_isr(&p->replicas, &rec->isr, &rec->elr, ed) != 0 ||
        meta_image_check_leader(img, rec->leader, ed) != 0 ||
        meta_image_check_epochs(p, rec, ed) != 0) {
        return WEIR_ECORRUPT;
    }
    if (p->leader != -1) {
        meta_image_broker_mut(img, p->leader)->n_led--;
    }
    if (rec->leader != -1) {
        meta_image_broker_mut(img, rec->leader)->n_led++;
    }
    p->isr = rec->isr;
    p->elr = rec->elr;
    p->leader = rec->leader;
    p->leader_epoch = rec->leader_epoch;
    p->partition_epoch = rec->partition_epoch;
    p->flags = rec->flags;
    /* back in the ISR: it holds every committed record again */
    p->empty &= (uint16_t) ~(meta_image_empty_bits(p, &p->isr) |
                             meta_image_empty_bits(p, &p->elr));
    return 0;
}

void meta_image_mark_empty(struct meta_image *img, int32_t id)
{
    uint32_t t;
    uint32_t i;
    uint32_t r;

    for (t = 0; t < img->n_topics; t++) {
        struct meta_topic *topic = &img->topics[t].pub;
        for (i = 0; i < topic->n_partitions; i++) {
            struct meta_partition *p = &topic->partitions[i];
            for (r = 0; r < p->replicas.n; r++) {
                if (p->replicas.ids[r] == id) {
                    p->empty |= (uint16_t)(1u << r);
                }
            }
        }
    }
}

int meta_image_apply_empty(struct meta_image *img,
                           const struct meta_replicas_empty *rec,
                           struct err_detail *ed)
{
    struct meta_topic_slot *slot = meta_image_topic_mut(img, rec->topic_id);
    struct meta_partition *p;
    uint16_t bits;

    if (!img->loading) {
        return err_set(ed, WEIR_ECORRUPT,
                       "REPLICAS_EMPTY outside a snapshot (a log implies it)");
    }
    if (slot == NULL || (uint32_t)rec->partition >= slot->pub.n_partitions) {
        return err_set(ed, WEIR_ECORRUPT,
                       "empty replicas of unknown partition %lld/%d",
                       (long long)rec->topic_id, (int)rec->partition);
    }
    p = &slot->pub.partitions[rec->partition];
    if (meta_image_check_order(&p->replicas, &rec->ids, "empty replica", ed) !=
        0) {
        return WEIR_ECORRUPT;
    }
    bits = meta_image_empty_bits(p, &rec->ids);
    if ((bits & (meta_image_empty_bits(p, &p->isr) |
                 meta_image_empty_bits(p, &p->elr))) != 0) {
        return err_set(ed, WEIR_ECORRUPT,
                       "an empty replica of %lld/%d is in its ISR or ELR",
                       (long long)rec->topic_id, (int)rec->partition);
    }
    p->empty |= bits;
    return 0;
}
