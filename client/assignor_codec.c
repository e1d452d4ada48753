/* SPDX-License-Identifier: Apache-2.0 */
/* The consumer protocol's bytes: ConsumerSubscription and
 * ConsumerAssignment (proto/weir.proto). Partitions travel grouped by
 * topic; in memory they are flat (topic, partition) lists sorted by topic
 * then partition, which is what the assignors take and give. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/assignor.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "proto/weir.pb-c.h"

static int asg_tp_cmp(const void *a, const void *b)
{
    const struct asg_tp *x = a;
    const struct asg_tp *y = b;
    int c = strcmp(x->topic, y->topic);

    if (c != 0) {
        return c;
    }
    return x->partition < y->partition ? -1
                                       : (x->partition > y->partition ? 1 : 0);
}

static bool asg_topic_name_ok(const char *name)
{
    size_t len;

    if (name == NULL) {
        return false;
    }
    len = strnlen(name, ASG_MAX_TOPIC_NAME_LEN + 1);
    return len > 0 && len <= ASG_MAX_TOPIC_NAME_LEN;
}

/* Sort tps in place; false if a partition appears twice. */
static bool asg_tps_sort_unique(struct asg_tp *tps, size_t n)
{
    size_t i;

    if (n > 1) {
        qsort(tps, n, sizeof(*tps), asg_tp_cmp);
    }
    for (i = 1; i < n; i++) {
        if (asg_tp_cmp(&tps[i - 1], &tps[i]) == 0) {
            return false;
        }
    }
    return true;
}

/* Grouped form of a flat list: groups[] point into parts[] and tps. */
struct asg_groups {
    struct asg_tp *sorted;
    int32_t *parts;
    Weir__TopicPartitions *groups;
    Weir__TopicPartitions **ptrs;
    size_t n_groups;
};

static void asg_groups_fini(struct asg_groups *g)
{
    mem_free(g->sorted);
    mem_free(g->parts);
    mem_free(g->groups);
    mem_free(g->ptrs);
}

static int
asg_groups_init(struct asg_groups *g, const struct asg_tp *tps, size_t n)
{
    size_t nn = n > 0 ? n : 1;
    size_t i;

    memset(g, 0, sizeof(*g));
    if ((n > 0 && tps == NULL) || n > ASG_MAX_PARTITIONS) {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (i = 0; i < n; i++) {
        if (!asg_topic_name_ok(tps[i].topic) || tps[i].partition < 0) {
            return WEIR_EINVALID_ARGUMENT;
        }
    }
    g->sorted = mem_malloc(nn * sizeof(*g->sorted));
    g->parts = mem_malloc(nn * sizeof(*g->parts));
    g->groups = mem_malloc(nn * sizeof(*g->groups));
    g->ptrs = mem_malloc(nn * sizeof(*g->ptrs));
    if (g->sorted == NULL || g->parts == NULL || g->groups == NULL ||
        g->ptrs == NULL) {
        return WEIR_ENOMEM;
    }
    if (n > 0) {
        memcpy(g->sorted, tps, n * sizeof(*tps));
    }
    if (!asg_tps_sort_unique(g->sorted, n)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (i = 0; i < n; i++) {
        g->parts[i] = g->sorted[i].partition;
        if (i == 0 || strcmp(g->sorted[i - 1].topic, g->sorted[i].topic) != 0) {
            Weir__TopicPartitions init = WEIR__TOPIC_PARTITIONS__INIT;

            g->groups[g->n_groups] = init;
            /* protobuf-c's pack does not write through these pointers */
            g->groups[g->n_groups].topic = (char *)g->sorted[i].topic;
            g->groups[g->n_groups].partitions = &g->parts[i];
            g->ptrs[g->n_groups] = &g->groups[g->n_groups];
            g->n_groups++;
        }
        g->groups[g->n_groups - 1].n_partitions++;
    }
    return g->n_groups > ASG_MAX_TOPICS ? WEIR_EINVALID_ARGUMENT : 0;
}

static int asg_pack(const ProtobufCMessage *m, struct weir_buf *out)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    int rv;

    if (n == 0) {
        return 0; /* an empty message; out->data may still be NULL */
    }
    rv = buf_reserve(out, n);
    if (rv != 0) {
        return rv;
    }
    out->len += protobuf_c_message_pack(m, out->data + out->len);
    return 0;
}

int asg_encode_subscription(const char *const *topics,
                            size_t n_topics,
                            const struct asg_tp *owned,
                            size_t n_owned,
                            int32_t generation,
                            struct weir_buf *out)
{
    Weir__ConsumerSubscription msg = WEIR__CONSUMER_SUBSCRIPTION__INIT;
    struct asg_groups g;
    size_t i;
    int rv;

    if ((n_topics > 0 && topics == NULL) || n_topics > ASG_MAX_TOPICS ||
        generation < -1) {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (i = 0; i < n_topics; i++) {
        if (!asg_topic_name_ok(topics[i])) {
            return WEIR_EINVALID_ARGUMENT;
        }
    }
    rv = asg_groups_init(&g, owned, n_owned);
    if (rv == 0) {
        /* protobuf-c's pack does not write through these pointers */
        msg.topics = (char **)(uintptr_t)topics;
        msg.n_topics = n_topics;
        msg.owned = g.ptrs;
        msg.n_owned = g.n_groups;
        msg.generation_id = generation;
        rv = asg_pack(&msg.base, out);
    }
    asg_groups_fini(&g);
    return rv;
}

int asg_encode_assignment(const struct asg_tp *tps,
                          size_t n,
                          struct weir_buf *out)
{
    Weir__ConsumerAssignment msg = WEIR__CONSUMER_ASSIGNMENT__INIT;
    struct asg_groups g;
    int rv;

    rv = asg_groups_init(&g, tps, n);
    if (rv == 0) {
        msg.partitions = g.ptrs;
        msg.n_partitions = g.n_groups;
        rv = asg_pack(&msg.base, out);
    }
    asg_groups_fini(&g);
    return rv;
}

/* Unpack allocations note a failure, so out of memory (retriable) is not
 * reported as malformed bytes. Frees go through rpc_allocator. */
static void *asg_alloc_noting(void *ctx, size_t n)
{
    void *p = mem_malloc(n);

    if (p == NULL) {
        *(bool *)ctx = true;
    }
    return p;
}

static void asg_free_fn(void *ctx, void *p)
{
    (void)ctx;
    mem_free(p);
}

/* protobuf-c keeps an over-long tag with field number 0 as an unknown
 * field; field 0 is invalid in every message (see common/rpc.c). */
static bool asg_has_field_zero(const ProtobufCMessage *m)
{
    size_t i;

    for (i = 0; i < m->n_unknown_fields; i++) {
        if (m->unknown_fields[i].tag == 0) {
            return true;
        }
    }
    return false;
}

/* Check and flatten grouped partitions into a sorted list. */
static int asg_flatten(Weir__TopicPartitions *const *groups,
                       size_t n_groups,
                       struct asg_tp **out,
                       size_t *n_out)
{
    const Weir__TopicPartitions *g;
    struct asg_tp *tps;
    size_t total = 0;
    size_t i;
    size_t k;
    size_t n = 0;

    *out = NULL;
    *n_out = 0;
    if (n_groups > ASG_MAX_TOPICS) {
        return WEIR_EMALFORMED;
    }
    for (i = 0; i < n_groups; i++) {
        g = groups[i];
        if (asg_has_field_zero(&g->base) || !asg_topic_name_ok(g->topic) ||
            g->n_partitions > ASG_MAX_PARTITIONS - total) {
            return WEIR_EMALFORMED;
        }
        total += g->n_partitions;
    }
    tps = mem_malloc((total > 0 ? total : 1) * sizeof(*tps));
    if (tps == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n_groups; i++) {
        g = groups[i];
        for (k = 0; k < g->n_partitions; k++) {
            if (g->partitions[k] < 0) {
                mem_free(tps);
                return WEIR_EMALFORMED;
            }
            tps[n].topic = g->topic;
            tps[n].partition = g->partitions[k];
            n++;
        }
    }
    if (!asg_tps_sort_unique(tps, n)) {
        mem_free(tps);
        return WEIR_EMALFORMED;
    }
    *out = tps;
    *n_out = n;
    return 0;
}

static int asg_check_subscription(const Weir__ConsumerSubscription *msg)
{
    size_t i;

    if (asg_has_field_zero(&msg->base) || msg->n_topics > ASG_MAX_TOPICS ||
        msg->generation_id < -1) {
        return WEIR_EMALFORMED;
    }
    for (i = 0; i < msg->n_topics; i++) {
        if (!asg_topic_name_ok(msg->topics[i])) {
            return WEIR_EMALFORMED;
        }
    }
    return 0;
}

void asg_subscription_free(struct asg_subscription *s)
{
    if (s == NULL) {
        return;
    }
    if (s->msg != NULL) {
        weir__consumer_subscription__free_unpacked(s->msg, &rpc_allocator);
    }
    mem_free(s->owned);
    mem_free(s);
}

int asg_decode_subscription(const uint8_t *p,
                            size_t len,
                            struct asg_subscription **out)
{
    bool oom = false;
    ProtobufCAllocator a = {asg_alloc_noting, asg_free_fn, &oom};
    Weir__ConsumerSubscription *msg;
    struct asg_subscription *s;
    int rv;

    *out = NULL;
    if (p == NULL && len > 0) {
        return WEIR_EMALFORMED;
    }
    msg = weir__consumer_subscription__unpack(&a, len, p);
    if (msg == NULL) {
        return oom ? WEIR_ENOMEM : WEIR_EMALFORMED;
    }
    s = mem_calloc(1, sizeof(*s));
    if (s == NULL) {
        weir__consumer_subscription__free_unpacked(msg, &rpc_allocator);
        return WEIR_ENOMEM;
    }
    s->msg = msg;
    rv = asg_check_subscription(msg);
    if (rv == 0) {
        rv = asg_flatten(msg->owned, msg->n_owned, &s->owned, &s->n_owned);
    }
    if (rv != 0) {
        asg_subscription_free(s);
        return rv;
    }
    s->topics = (const char *const *)msg->topics;
    s->n_topics = msg->n_topics;
    s->generation = msg->generation_id;
    s->user_data.p = msg->user_data.data;
    s->user_data.len = msg->user_data.len;
    *out = s;
    return 0;
}

void asg_subscription_member(const struct asg_subscription *s,
                             const char *member_id,
                             struct asg_member *m)
{
    memset(m, 0, sizeof(*m));
    m->member_id = member_id;
    m->topics = s->topics;
    m->n_topics = s->n_topics;
    m->owned = s->owned;
    m->n_owned = s->n_owned;
    m->generation = s->generation;
}

void asg_assignment_free(struct asg_assignment *a)
{
    if (a == NULL) {
        return;
    }
    if (a->msg != NULL) {
        weir__consumer_assignment__free_unpacked(a->msg, &rpc_allocator);
    }
    mem_free(a->tps);
    mem_free(a);
}

int asg_decode_assignment(const uint8_t *p,
                          size_t len,
                          struct asg_assignment **out)
{
    bool oom = false;
    ProtobufCAllocator al = {asg_alloc_noting, asg_free_fn, &oom};
    Weir__ConsumerAssignment *msg;
    struct asg_assignment *a;
    int rv = WEIR_EMALFORMED;

    *out = NULL;
    if (p == NULL && len > 0) {
        return WEIR_EMALFORMED;
    }
    msg = weir__consumer_assignment__unpack(&al, len, p);
    if (msg == NULL) {
        return oom ? WEIR_ENOMEM : WEIR_EMALFORMED;
    }
    a = mem_calloc(1, sizeof(*a));
    if (a == NULL) {
        weir__consumer_assignment__free_unpacked(msg, &rpc_allocator);
        return WEIR_ENOMEM;
    }
    a->msg = msg;
    if (!asg_has_field_zero(&msg->base)) {
        rv = asg_flatten(msg->partitions, msg->n_partitions, &a->tps, &a->n);
    }
    if (rv != 0) {
        asg_assignment_free(a);
        return rv;
    }
    a->user_data.p = msg->user_data.data;
    a->user_data.len = msg->user_data.len;
    *out = a;
    return 0;
}
