/* SPDX-License-Identifier: Apache-2.0 */
/* Replica placement for new topics. Brokers that can serve are put in a
 * ring, sorted by id, or, when any broker has a rack, rack-alternated (the
 * first broker of each rack, then the second of each, ...; Kafka's
 * getRackAlternatedBrokerList). Partition p starts at ring position
 * start + p, so preferred leaders (first replicas) go round the ring evenly;
 * the other replicas are the next brokers along the ring, skipping brokers
 * on a rack the partition already uses while some rack is still unused.
 * start is the topic id modulo the ring size, which spreads the leaders of
 * many small topics without needing randomness.
 * Locality: the controller loop thread; pure. */
#ifndef CONTROLLER_ELECT_CTL_PLACE_H
#define CONTROLLER_ELECT_CTL_PLACE_H

#include <stdint.h>

#include "common/err.h"
#include "controller/meta/meta_image.h"

struct ctl_place {
    int32_t *ring;     /* broker ids in placement order; owned */
    uint32_t *rack_of; /* rack index of ring[i]; owned */
    uint32_t n;        /* ring size */
    uint32_t n_racks;  /* distinct racks (1 when nobody has one) */
    uint32_t start;
    int32_t rf;
};

/* Brokers of img that are registered and unfenced. */
uint32_t ctl_place_live_count(const struct meta_image *img);

/* Build the ring of img's unfenced brokers for a topic with this id and
 * replication factor (1..live count, checked by the caller).
 * Errors: WEIR_ENOMEM (pl is then empty). */
WEIR_MUST_CHECK int ctl_place_init(struct ctl_place *pl,
                                   const struct meta_image *img,
                                   int64_t topic_id,
                                   int32_t rf);
void ctl_place_fini(struct ctl_place *pl);

/* Replicas of partition p, preferred leader first. */
void ctl_place_partition(const struct ctl_place *pl,
                         int32_t p,
                         struct meta_ids *out);

#endif /* CONTROLLER_ELECT_CTL_PLACE_H */
