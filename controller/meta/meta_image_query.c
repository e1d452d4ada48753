/* SPDX-License-Identifier: Apache-2.0 */
/* Read-only side of the image: lookups, equality and the invariant check
 * that tests run after every change (libevent's evbuffer_validate_). */
#include <stdlib.h>
#include <string.h>

#include "controller/meta/meta_image_int.h"

int64_t meta_image_end_offset(const struct meta_image *img)
{
    return img->end_offset;
}

int64_t meta_image_next_producer_id(const struct meta_image *img)
{
    return img->next_producer_id;
}

uint32_t meta_image_broker_count(const struct meta_image *img)
{
    return img->n_brokers;
}

const struct meta_broker *meta_image_broker_at(const struct meta_image *img,
                                               uint32_t i)
{
    return i < img->n_brokers ? &img->brokers[i] : NULL;
}

const struct meta_broker *meta_image_broker(const struct meta_image *img,
                                            int32_t id)
{
    bool found;
    uint32_t i = meta_image_broker_pos(img, id, &found);

    return found ? &img->brokers[i] : NULL;
}

uint32_t meta_image_topic_count(const struct meta_image *img)
{
    return img->n_topics;
}

const struct meta_topic *meta_image_topic_at(const struct meta_image *img,
                                             uint32_t i)
{
    return i < img->n_topics ? &img->topics[i].pub : NULL;
}

const struct meta_topic *meta_image_topic(const struct meta_image *img,
                                          int64_t topic_id)
{
    /* the lookup does not change the image */
    struct meta_topic_slot *slot =
        meta_image_topic_mut((struct meta_image *)img, topic_id);

    return slot != NULL ? &slot->pub : NULL;
}

const struct meta_topic *meta_image_topic_by_name(const struct meta_image *img,
                                                  const char *name,
                                                  size_t len)
{
    struct meta_topic_slot *slot = meta_image_names_find(img, name, len);

    return slot != NULL ? &slot->pub : NULL;
}

const struct meta_partition *meta_image_partition(const struct meta_image *img,
                                                  int64_t topic_id,
                                                  int32_t partition)
{
    const struct meta_topic *t = meta_image_topic(img, topic_id);

    if (t == NULL || partition < 0 || (uint32_t)partition >= t->n_partitions) {
        return NULL;
    }
    return &t->partitions[partition];
}

const char *meta_topic_config(const struct meta_topic *t, const char *key)
{
    uint32_t i;

    for (i = 0; i < t->n_configs; i++) {
        if (strcmp(t->configs[i].key, key) == 0) {
            return t->configs[i].value;
        }
    }
    return NULL;
}

uint32_t meta_topic_min_isr(const struct meta_topic *t)
{
    const char *v = meta_topic_config(t, "min.insync.replicas");
    long n = v != NULL ? strtol(v, NULL, 10) : 1;

    return n >= 1 && n <= META_MAX_REPLICAS ? (uint32_t)n : 1;
}

static bool meta_image_ids_equal(const struct meta_ids *a,
                                 const struct meta_ids *b)
{
    return a->n == b->n &&
           memcmp(a->ids, b->ids, (size_t)a->n * sizeof(a->ids[0])) == 0;
}

static bool meta_image_broker_equal(const struct meta_broker *a,
                                    const struct meta_broker *b)
{
    return a->id == b->id && a->epoch == b->epoch &&
           strcmp(a->host, b->host) == 0 && a->port == b->port &&
           strcmp(a->rack, b->rack) == 0 &&
           strcmp(a->directory_id, b->directory_id) == 0 &&
           a->fenced == b->fenced && a->tls_port == b->tls_port &&
           (a->tls_port == 0 || strcmp(a->tls_host, b->tls_host) == 0) &&
           a->n_led == b->n_led;
}

static bool meta_image_partition_equal(const struct meta_partition *a,
                                       const struct meta_partition *b)
{
    return meta_image_ids_equal(&a->replicas, &b->replicas) &&
           meta_image_ids_equal(&a->isr, &b->isr) &&
           meta_image_ids_equal(&a->elr, &b->elr) && a->leader == b->leader &&
           a->leader_epoch == b->leader_epoch &&
           a->partition_epoch == b->partition_epoch && a->flags == b->flags &&
           a->empty == b->empty;
}

bool meta_partition_replica_empty(const struct meta_partition *p, int32_t id)
{
    uint32_t r;

    for (r = 0; r < p->replicas.n; r++) {
        if (p->replicas.ids[r] == id) {
            return (p->empty & (1u << r)) != 0;
        }
    }
    return false;
}

static bool meta_image_topic_equal(const struct meta_topic *a,
                                   const struct meta_topic *b)
{
    uint32_t i;

    if (a->id != b->id || strcmp(a->name, b->name) != 0 ||
        a->n_partitions != b->n_partitions || a->n_configs != b->n_configs) {
        return false;
    }
    for (i = 0; i < a->n_configs; i++) {
        if (strcmp(a->configs[i].key, b->configs[i].key) != 0 ||
            strcmp(a->configs[i].value, b->configs[i].value) != 0) {
            return false;
        }
    }
    for (i = 0; i < a->n_partitions; i++) {
        if (!meta_image_partition_equal(&a->partitions[i], &b->partitions[i])) {
            return false;
        }
    }
    return true;
}

bool meta_image_equal(const struct meta_image *a, const struct meta_image *b)
{
    uint32_t i;

    if (a->end_offset != b->end_offset ||
        a->next_producer_id != b->next_producer_id ||
        a->n_brokers != b->n_brokers || a->n_topics != b->n_topics) {
        return false;
    }
    for (i = 0; i < a->n_brokers; i++) {
        if (!meta_image_broker_equal(&a->brokers[i], &b->brokers[i])) {
            return false;
        }
    }
    for (i = 0; i < a->n_topics; i++) {
        if (!meta_image_topic_equal(&a->topics[i].pub, &b->topics[i].pub)) {
            return false;
        }
    }
    return meta_image_tombs_equal(a, b) && meta_image_auth_equal(a, b);
}

/* ids are distinct replicas in replica order. */
static bool meta_image_check_order(const struct meta_partition *p,
                                   const struct meta_ids *ids)
{
    uint32_t i;
    uint32_t r = 0;

    if (ids->n > p->replicas.n) {
        return false;
    }
    for (i = 0; i < ids->n; i++, r++) {
        while (r < p->replicas.n && p->replicas.ids[r] != ids->ids[i]) {
            r++;
        }
        if (r == p->replicas.n) {
            return false;
        }
    }
    return true;
}

static int meta_image_check_ids(const struct meta_image *img,
                                const struct meta_topic *t,
                                uint32_t pno,
                                const struct meta_partition *p,
                                struct err_detail *ed)
{
    const struct meta_broker *leader;
    uint32_t i;

    if (p->replicas.n == 0 || p->replicas.n > META_MAX_REPLICAS) {
        return err_set(ed, WEIR_ECORRUPT, "%s/%u: bad replica count", t->name,
                       pno);
    }
    for (i = 0; i < p->replicas.n; i++) {
        if (meta_image_broker(img, p->replicas.ids[i]) == NULL) {
            return err_set(ed, WEIR_ECORRUPT, "%s/%u: replica %d unknown",
                           t->name, pno, (int)p->replicas.ids[i]);
        }
    }
    if (!meta_image_check_order(p, &p->isr) ||
        !meta_image_check_order(p, &p->elr)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "%s/%u: ISR or ELR not a subset of the replicas in "
                       "order",
                       t->name, pno);
    }
    for (i = 0; i < p->elr.n; i++) {
        if (meta_ids_has(&p->isr, p->elr.ids[i])) {
            return err_set(ed, WEIR_ECORRUPT, "%s/%u: %d in ISR and ELR",
                           t->name, pno, (int)p->elr.ids[i]);
        }
    }
    leader = p->leader == -1 ? NULL : meta_image_broker(img, p->leader);
    if (p->leader != -1 && (!meta_ids_has(&p->isr, p->leader) ||
                            leader == NULL || leader->fenced)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "%s/%u: leader %d not an unfenced ISR member", t->name,
                       pno, (int)p->leader);
    }
    return 0;
}

/* Empty replicas are replicas, and in neither the ISR nor the ELR. */
static int meta_image_check_empty(const struct meta_topic *t,
                                  uint32_t j,
                                  const struct meta_partition *p,
                                  struct err_detail *ed)
{
    uint32_t r;

    for (r = 0; r < META_MAX_REPLICAS; r++) {
        if ((p->empty & (1u << r)) == 0) {
            continue;
        }
        if (r >= p->replicas.n || meta_ids_has(&p->isr, p->replicas.ids[r]) ||
            meta_ids_has(&p->elr, p->replicas.ids[r])) {
            return err_set(ed, WEIR_ECORRUPT,
                           "%s/%u: empty replica bit %u is not a replica "
                           "outside the ISR and ELR",
                           t->name, j, r);
        }
    }
    return 0;
}

static int meta_image_check_topics(const struct meta_image *img,
                                   uint32_t *led,
                                   struct err_detail *ed)
{
    uint32_t i;
    uint32_t j;
    int rv;

    for (i = 0; i < img->n_topics; i++) {
        const struct meta_topic *t = &img->topics[i].pub;
        if (i > 0 && t->id <= img->topics[i - 1].pub.id) {
            return err_set(ed, WEIR_ECORRUPT, "topic ids out of order");
        }
        if (meta_image_topic_by_name(img, t->name, strlen(t->name)) != t) {
            return err_set(ed, WEIR_ECORRUPT, "topic name %s twice", t->name);
        }
        for (j = 0; j < t->n_partitions; j++) {
            const struct meta_partition *p = &t->partitions[j];
            bool found;
            rv = meta_image_check_ids(img, t, j, p, ed);
            if (rv == 0) {
                rv = meta_image_check_empty(t, j, p, ed);
            }
            if (rv != 0) {
                return rv;
            }
            if (p->leader != -1) {
                led[meta_image_broker_pos(img, p->leader, &found)]++;
            }
        }
    }
    return 0;
}

int meta_image_check(const struct meta_image *img, struct err_detail *ed)
{
    uint32_t led[META_MAX_BROKERS] = {0};
    uint32_t i;
    int rv;

    for (i = 1; i < img->n_brokers; i++) {
        if (img->brokers[i - 1].id >= img->brokers[i].id) {
            return err_set(ed, WEIR_ECORRUPT, "broker ids out of order");
        }
    }
    rv = meta_image_check_topics(img, led, ed);
    if (rv == 0) {
        rv = meta_image_check_tombs(img, ed);
    }
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < img->n_brokers; i++) {
        if (led[i] != img->brokers[i].n_led) {
            return err_set(
                ed, WEIR_ECORRUPT, "broker %d leads %u partitions, counted %u",
                (int)img->brokers[i].id, led[i], img->brokers[i].n_led);
        }
    }
    return meta_image_check_auth(img, ed);
}
