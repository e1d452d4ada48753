/* SPDX-License-Identifier: Apache-2.0 */
/* Partition assignors of the consumer group protocol, run by the group's
 * leader member: range, roundrobin and sticky (Kafka's eager
 * StickyAssignor: balanced, and moving as few partitions as it can from
 * their previous owners). Pure: no I/O, no clock; deterministic for a
 * given input (members are taken in member id order, topics in name
 * order). Every partition of a topic some member subscribes to goes to
 * exactly one member that subscribes to it; a member subscribing to
 * nothing that exists gets nothing.
 * Also the codec of the consumer protocol's bytes (ConsumerSubscription,
 * ConsumerAssignment in proto/weir.proto).
 * Locality: any thread; no shared state. */
#ifndef CLIENT_ASSIGNOR_H
#define CLIENT_ASSIGNOR_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/* A (topic, partition) pair; topic is borrowed from the input. */
struct asg_tp {
    const char *topic;
    int32_t partition;
};

/* One member as the leader sees it in JoinGroup. */
struct asg_member {
    const char *member_id;
    const char *const *topics; /* subscription */
    size_t n_topics;
    const struct asg_tp *owned; /* sticky: held in `generation`; may be 0 */
    size_t n_owned;
    int32_t generation; /* of `owned`, -1 none */
};

/* A topic that exists, with its partition count. */
struct asg_topic {
    const char *name;
    int32_t partitions;
};

/* Output: per member (same order as the input), its partitions, sorted by
 * topic then partition. */
struct asg_result {
    struct asg_tp *tps; /* owned by the result */
    size_t n;
};

enum asg_kind {
    ASG_RANGE,
    ASG_ROUNDROBIN,
    ASG_STICKY,
};

/* "range", "roundrobin", "sticky"; -1 for anything else. */
int asg_kind_from_name(const char *name);
const char *asg_kind_name(enum asg_kind k);

/* Assign. out must hold n_members results; on success each is filled and
 * must be released with asg_results_free. Errors: WEIR_ENOMEM,
 * WEIR_EINVALID_ARGUMENT (duplicate member ids, negative partitions). */
WEIR_MUST_CHECK int asg_assign(enum asg_kind kind,
                               const struct asg_member *members,
                               size_t n_members,
                               const struct asg_topic *topics,
                               size_t n_topics,
                               struct asg_result *out);
void asg_results_free(struct asg_result *r, size_t n);

/* The consumer protocol's bytes. Decoders bound every count by the input
 * and return WEIR_EMALFORMED on bad bytes; decoded objects are protobuf-c
 * messages freed with the matching free function.
 * Encoders append to *out. Owned partitions or assignments are grouped by
 * topic (any input order). Errors: WEIR_ENOMEM, WEIR_EINVALID_ARGUMENT (a
 * NULL or empty or over-long topic name, a negative partition, the same
 * partition twice, counts beyond the ASG_MAX_* bounds below). */
WEIR_MUST_CHECK int asg_encode_subscription(const char *const *topics,
                                            size_t n_topics,
                                            const struct asg_tp *owned,
                                            size_t n_owned,
                                            int32_t generation,
                                            struct weir_buf *out);
WEIR_MUST_CHECK int
asg_encode_assignment(const struct asg_tp *tps, size_t n, struct weir_buf *out);

/* Bounds the decoders enforce (beyond them the bytes are malformed). */
#define ASG_MAX_TOPICS         10000  /* subscribed topics, or owned topics */
#define ASG_MAX_PARTITIONS     100000 /* owned or assigned partitions */
#define ASG_MAX_TOPIC_NAME_LEN 249    /* Kafka's topic name limit */

/* A decoded ConsumerSubscription, owned by the caller. Its strings live in
 * the object: pointers taken from it (asg_subscription_member too) stay
 * valid until asg_subscription_free. */
struct asg_subscription {
    const char *const *topics; /* n_topics names, non-empty, as sent */
    size_t n_topics;
    struct asg_tp *owned; /* sorted by topic then partition, no repeats */
    size_t n_owned;
    int32_t generation;          /* of `owned`, -1 none */
    struct weir_slice user_data; /* opaque, possibly empty */
    void *msg;                   /* private: the unpacked message */
};

/* A decoded ConsumerAssignment; same ownership as asg_subscription. */
struct asg_assignment {
    struct asg_tp *tps; /* sorted by topic then partition, no repeats */
    size_t n;
    struct weir_slice user_data;
    void *msg; /* private */
};

/* Decode the bytes of GroupProtocol.metadata. Success: *out is the
 * caller's (asg_subscription_free). Failure: *out is NULL. Checks: every
 * topic name 1..ASG_MAX_TOPIC_NAME_LEN bytes, partitions >= 0, no owned
 * partition twice, generation >= -1, counts within the bounds above.
 * Errors: WEIR_EMALFORMED, WEIR_ENOMEM. */
WEIR_MUST_CHECK int asg_decode_subscription(const uint8_t *p,
                                            size_t len,
                                            struct asg_subscription **out);
/* NULL is a no-op. */
void asg_subscription_free(struct asg_subscription *s);
/* Fill *m with a view of s for asg_assign (borrowed from s and member_id). */
void asg_subscription_member(const struct asg_subscription *s,
                             const char *member_id,
                             struct asg_member *m);

/* Decode an assignment's bytes, with the same checks and errors. */
WEIR_MUST_CHECK int asg_decode_assignment(const uint8_t *p,
                                          size_t len,
                                          struct asg_assignment **out);
void asg_assignment_free(struct asg_assignment *a);

#endif /* CLIENT_ASSIGNOR_H */
