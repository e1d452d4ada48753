/* SPDX-License-Identifier: Apache-2.0 */
/* Records of the internal topic __consumer_offsets: keys and values are
 * protobuf (proto/weir.proto: GroupRecordKeyEnvelope, OffsetRecordValue,
 * GroupRecordValue), so compaction keeps the last record per key - one
 * committed offset per (group, topic, partition) and one metadata record
 * per group. A null value is a tombstone. Pure: builds and reads record
 * batches, no I/O.
 * Locality: any thread. */
#ifndef BROKER_GROUP_GROUP_RECORDS_H
#define BROKER_GROUP_GROUP_RECORDS_H

#include <stdint.h>

#include "broker/group/group_core.h"
#include "common/batch.h"
#include "common/names.h"
#include "proto/weir.pb-c.h"

#define GROUP_OFFSETS_TOPIC NAMES_OFFSETS_TOPIC
#define GROUP_MAX_ID_BYTES  255  /* group ids */
#define GROUP_MAX_METADATA  4096 /* offset metadata strings */

/* The offsets partition of a group: FNV-1a of its id, mod n (n > 0). */
int32_t grec_partition_for(const char *group, int32_t n);

struct grec_offset {
    int64_t offset;
    int32_t leader_epoch;
    const char *metadata;
    int64_t commit_timestamp;
};

/* Append an offset record (v NULL: tombstone). Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int grec_add_offset(struct batch_builder *bb,
                                    int64_t ts,
                                    const char *group,
                                    const char *topic,
                                    int32_t partition,
                                    const struct grec_offset *v);
/* Append a group metadata record from a view (v NULL: tombstone).
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int grec_add_group(struct batch_builder *bb,
                                   int64_t ts,
                                   const char *group,
                                   const struct group_view *v);

/* One decoded record; the messages are owned (grec_fini). */
struct grec {
    Weir__GroupRecordKeyEnvelope *key;
    Weir__OffsetRecordValue *offset; /* offset record with a value */
    Weir__GroupRecordValue *group;   /* group record with a value */
};

/* Errors: WEIR_EMALFORMED (not a record of this topic: bad key or value
 * bytes), WEIR_ENOMEM. */
WEIR_MUST_CHECK int grec_decode(const struct batch_record *rec,
                                struct grec *out);
void grec_fini(struct grec *r);

/* A view over a decoded group value, for group_core_restore; members is
 * allocated (mem_free) and points into v. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int grec_group_view(const Weir__GroupRecordValue *v,
                                    struct group_view *out,
                                    struct group_member_view **members);

#endif /* BROKER_GROUP_GROUP_RECORDS_H */
