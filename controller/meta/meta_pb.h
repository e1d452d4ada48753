/* SPDX-License-Identifier: Apache-2.0 */
/* A MetadataResponse body built from a metadata image: brokers (with
 * fenced), topics, partitions (leader, leader epoch, replicas, ISR) and,
 * on request, the topic configs the image holds. Used by the controller
 * and by brokers in cluster mode; pure (no I/O).
 * Locality: the thread that owns the image. */
#ifndef CONTROLLER_META_META_PB_H
#define CONTROLLER_META_META_PB_H

#include "common/err.h"
#include "controller/meta/meta_image.h"
#include "proto/weir.pb-c.h"

/* What a built response points to. Embed, zero it, build, then free. The
 * strings and id arrays point into the image: encode the response before
 * the image changes. */
struct meta_pb {
    Weir__BrokerInfo *brokers;
    Weir__BrokerInfo **broker_ptrs;
    Weir__TopicInfo *topics;
    Weir__TopicInfo **topic_ptrs;
    Weir__PartitionInfo *parts;
    Weir__PartitionInfo **part_ptrs;
    Weir__ConfigEntry *cfgs;
    Weir__ConfigEntry **cfg_ptrs;
};

/* Fill body (initialised by the caller) for mr: every topic when
 * mr->all_topics or no topic is named, else the named ones in order
 * (unknown ones with UNKNOWN_TOPIC_OR_PARTITION). log_start_offset and
 * high_watermark are -1: only a partition's replicas know them.
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int meta_pb_build(const struct meta_image *img,
                                  const Weir__MetadataRequest *mr,
                                  Weir__MetadataResponse *body,
                                  struct meta_pb *m);
void meta_pb_free(struct meta_pb *m);

#endif /* CONTROLLER_META_META_PB_H */
