/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata image: each record's apply rules, refusals that leave the image
 * untouched (also when an allocation fails), lookups, and determinism: the
 * same records give equal images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "controller/meta/meta_image.h"
#include "controller/meta/meta_snapshot.h"

#define STR(s) ((struct meta_str){(s), strlen(s)})

static struct meta_ids ids_of(uint32_t n, const int32_t *v)
{
    struct meta_ids ids;

    memset(&ids, 0, sizeof(ids));
    ids.n = n;
    memcpy(ids.ids, v, n * sizeof(v[0]));
    return ids;
}

#define IDS(...)                                                               \
    ids_of(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t),                 \
           (int32_t[]){__VA_ARGS__})

static struct meta_record r_reg(int32_t id, int64_t epoch, const char *host)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REGISTER_BROKER;
    r.u.reg.id = id;
    r.u.reg.epoch = epoch;
    r.u.reg.host = STR(host);
    r.u.reg.port = 9092;
    r.u.reg.rack = STR("");
    return r;
}

static struct meta_record r_fence(int32_t id, int64_t epoch, bool fence)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = fence ? META_RECORD_FENCE_BROKER : META_RECORD_UNFENCE_BROKER;
    r.u.fence.id = id;
    r.u.fence.epoch = epoch;
    return r;
}

static struct meta_record r_topic(int64_t id, const char *name)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_CREATE_TOPIC;
    r.u.topic.topic_id = id;
    r.u.topic.name = STR(name);
    return r;
}

static struct meta_record r_config(int64_t id, const char *k, const char *v)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_TOPIC_CONFIG;
    r.u.config.topic_id = id;
    r.u.config.key = STR(k);
    r.u.config.value = STR(v);
    return r;
}

static struct meta_record r_part(int64_t tid,
                                 int32_t p,
                                 struct meta_ids reps,
                                 struct meta_ids isr,
                                 int32_t leader)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION;
    r.u.part.topic_id = tid;
    r.u.part.partition = p;
    r.u.part.replicas = reps;
    r.u.part.isr = isr;
    r.u.part.leader = leader;
    return r;
}

static struct meta_record r_change(int64_t tid,
                                   int32_t p,
                                   struct meta_ids isr,
                                   int32_t leader,
                                   int32_t le,
                                   int32_t pe)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION_CHANGE;
    r.u.change.topic_id = tid;
    r.u.change.partition = p;
    r.u.change.isr = isr;
    r.u.change.leader = leader;
    r.u.change.leader_epoch = le;
    r.u.change.partition_epoch = pe;
    return r;
}

static struct meta_record r_simple(enum meta_record_type type, int64_t v)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = type;
    if (type == META_RECORD_REMOVE_TOPIC) {
        r.u.remove_topic_id = v;
    } else {
        r.u.next_producer_id = v;
    }
    return r;
}

static void apply_ok(struct meta_image *img, struct meta_record r)
{
    struct err_detail ed;

    if (meta_image_apply(img, &r, &ed) != 0) {
        fail_msg("apply: %s", ed.msg);
    }
    if (meta_image_check(img, &ed) != 0) {
        fail_msg("check: %s", ed.msg);
    }
}

/* Three unfenced brokers 0..2 (epochs 0..2), topic "t" id 6 with
 * partitions 0 (replicas 0 1 2, leader 0) and 1 (replicas 1 2 0, ISR 1 2,
 * leader 1), a config, producer ids: 13 records. */
static size_t cluster_records(struct meta_record *out)
{
    size_t n = 0;

    out[n++] = r_reg(0, 0, "b0");
    out[n++] = r_reg(1, 1, "b1");
    out[n++] = r_reg(2, 2, "b2");
    out[n++] = r_fence(0, 0, false);
    out[n++] = r_fence(1, 1, false);
    out[n++] = r_fence(2, 2, false);
    out[n++] = r_topic(6, "t");
    out[n++] = r_config(6, "retention.ms", "1000");
    out[n++] = r_part(6, 0, IDS(0, 1, 2), IDS(0, 1, 2), 0);
    out[n++] = r_part(6, 1, IDS(1, 2, 0), IDS(1, 2), 1);
    out[n++] = r_config(6, "min.insync.replicas", "2");
    out[n++] = r_simple(META_RECORD_PRODUCER_IDS, 1000);
    out[n++] = r_change(6, 1, IDS(1, 2, 0), 1, 0, 1);
    return n;
}

static struct meta_image *cluster(void)
{
    struct meta_record recs[32];
    size_t n = cluster_records(recs);
    struct meta_image *img;
    size_t i;

    assert_int_equal(meta_image_new(&img), 0);
    for (i = 0; i < n; i++) {
        apply_ok(img, recs[i]);
    }
    return img;
}

/* The record is refused with ECORRUPT and nothing changes (compared with
 * a copy made through a snapshot). */
static void refuse(struct meta_image *img, struct meta_record r)
{
    struct meta_image *before;
    struct err_detail ed;
    struct weir_buf b;
    char where[64];

    buf_init(&b);
    assert_int_equal(meta_snapshot_encode(img, &b, NULL), 0);
    assert_int_equal(meta_snapshot_decode(b.data, b.len, &before, NULL), 0);
    assert_true(meta_image_equal(img, before));
    assert_int_equal(meta_image_apply(img, &r, &ed), WEIR_ECORRUPT);
    assert_int_equal(ed.code, WEIR_ECORRUPT);
    (void)snprintf(where, sizeof(where), "at offset %lld",
                   (long long)meta_image_end_offset(img));
    assert_non_null(strstr(ed.msg, where));
    assert_true(meta_image_equal(img, before));
    meta_image_free(before);
    buf_fini(&b);
}

static void test_cluster_lookups(void **state)
{
    struct meta_image *img = cluster();
    const struct meta_topic *t;
    const struct meta_partition *p;
    const struct meta_broker *b;

    (void)state;
    assert_int_equal(meta_image_end_offset(img), 13);
    assert_int_equal(meta_image_next_producer_id(img), 1000);
    assert_int_equal(meta_image_broker_count(img), 3);
    b = meta_image_broker(img, 1);
    assert_non_null(b);
    assert_string_equal(b->host, "b1");
    assert_string_equal(b->rack, "");
    assert_false(b->fenced);
    assert_int_equal(b->n_led, 1);
    assert_int_equal(meta_image_broker(img, 0)->n_led, 1);
    assert_null(meta_image_broker(img, 3));
    assert_ptr_equal(meta_image_broker_at(img, 2), meta_image_broker(img, 2));
    assert_null(meta_image_broker_at(img, 3));
    t = meta_image_topic_by_name(img, "t", 1);
    assert_non_null(t);
    assert_ptr_equal(t, meta_image_topic(img, 6));
    assert_ptr_equal(t, meta_image_topic_at(img, 0));
    assert_null(meta_image_topic(img, 7));
    assert_null(meta_image_topic_by_name(img, "tt", 2));
    assert_int_equal(t->n_partitions, 2);
    assert_int_equal(t->n_configs, 2);
    /* configs sorted by key */
    assert_string_equal(t->configs[0].key, "min.insync.replicas");
    assert_string_equal(meta_topic_config(t, "retention.ms"), "1000");
    assert_null(meta_topic_config(t, "segment.ms"));
    p = meta_image_partition(img, 6, 1);
    assert_non_null(p);
    assert_int_equal(p->isr.n, 3);
    assert_int_equal(p->partition_epoch, 1);
    assert_null(meta_image_partition(img, 6, 2));
    assert_null(meta_image_partition(img, 6, -1));
    meta_image_free(img);
}

static void test_broker_rules(void **state)
{
    struct meta_image *img = cluster();
    const struct meta_broker *b;
    struct meta_record tls;

    (void)state;
    memset(&tls, 0, sizeof(tls));
    refuse(img, r_reg(1, 1, "b1"));     /* epoch not above */
    refuse(img, r_reg(1, 0, "b1"));     /* epoch below */
    refuse(img, r_reg(0, 20, "b0"));    /* leads a partition */
    refuse(img, r_fence(0, 0, true));   /* leads a partition */
    refuse(img, r_fence(2, 1, true));   /* not its epoch */
    refuse(img, r_fence(7, 1, true));   /* not registered */
    refuse(img, r_fence(2, 2, false));  /* already unfenced */
    apply_ok(img, r_fence(2, 2, true)); /* leads nothing: fine */
    refuse(img, (struct meta_record){.type = (enum meta_record_type)0});
    apply_ok(img, r_reg(2, 14, "b2-new"));
    b = meta_image_broker(img, 2);
    assert_int_equal(b->epoch, 14);
    assert_string_equal(b->host, "b2-new");
    assert_true(b->fenced);
    apply_ok(img, r_reg(9, 15, "b9")); /* new brokers are fenced */
    assert_true(meta_image_broker(img, 9)->fenced);
    assert_int_equal(meta_image_broker_count(img), 4);
    /* a TLS listener belongs to one registration, and goes with it */
    tls.type = META_RECORD_BROKER_TLS;
    tls.u.tls.id = 9;
    tls.u.tls.epoch = 14; /* not broker 9's */
    tls.u.tls.host = STR("b9.example");
    tls.u.tls.port = 9093;
    refuse(img, tls);
    tls.u.tls.id = 8; /* not registered */
    refuse(img, tls);
    tls.u.tls.id = 9;
    tls.u.tls.epoch = 15;
    apply_ok(img, tls);
    b = meta_image_broker(img, 9);
    assert_string_equal(b->tls_host, "b9.example");
    assert_int_equal(b->tls_port, 9093);
    apply_ok(img, r_reg(9, 17, "b9"));
    assert_null(meta_image_broker(img, 9)->tls_host);
    assert_int_equal(meta_image_broker(img, 9)->tls_port, 0);
    meta_image_free(img);
}

static void test_topic_rules(void **state)
{
    struct meta_image *img = cluster();
    const struct meta_topic *t;

    (void)state;
    refuse(img, r_topic(20, "t"));      /* name taken */
    refuse(img, r_topic(6, "u"));       /* id not above */
    refuse(img, r_topic(2, "u"));       /* id below */
    refuse(img, r_config(7, "k", "v")); /* unknown topic */
    refuse(img, r_simple(META_RECORD_REMOVE_TOPIC, 5));
    refuse(img, r_simple(META_RECORD_PRODUCER_IDS, 1000));
    refuse(img, r_simple(META_RECORD_PRODUCER_IDS, 10));
    apply_ok(img, r_config(6, "retention.ms", "2000")); /* replaces */
    t = meta_image_topic(img, 6);
    assert_int_equal(t->n_configs, 2);
    assert_string_equal(meta_topic_config(t, "retention.ms"), "2000");
    apply_ok(img, r_config(6, "a.first", ""));
    assert_string_equal(meta_image_topic(img, 6)->configs[0].key, "a.first");
    refuse(img, r_topic(meta_image_end_offset(img) + 1, "u")); /* not here */
    apply_ok(img, r_topic(meta_image_end_offset(img), "u"));
    apply_ok(img, r_simple(META_RECORD_REMOVE_TOPIC, 6));
    assert_int_equal(meta_image_topic_count(img), 1);
    assert_null(meta_image_topic_by_name(img, "t", 1));
    /* leaderships went with the topic */
    assert_int_equal(meta_image_broker(img, 0)->n_led, 0);
    assert_int_equal(meta_image_broker(img, 1)->n_led, 0);
    /* the removal is remembered, id and name */
    assert_int_equal(meta_image_tombstone_count(img), 1);
    assert_string_equal(meta_image_tombstone(img, 6)->name, "t");
    /* the name is free again, under a new id */
    apply_ok(img, r_topic(meta_image_end_offset(img), "t"));
    assert_non_null(meta_image_tombstone(img, 6));
    meta_image_free(img);
}

static void test_partition_rules(void **state)
{
    struct meta_image *img = cluster();

    (void)state;
    refuse(img, r_part(7, 0, IDS(0), IDS(0), 0));    /* unknown topic */
    refuse(img, r_part(6, 3, IDS(0), IDS(0), 0));    /* not the next number */
    refuse(img, r_part(6, 1, IDS(0), IDS(0), 0));    /* exists */
    refuse(img, r_part(6, 2, IDS(0, 5), IDS(0), 0)); /* replica unknown */
    refuse(img, r_part(6, 2, IDS(0, 1), IDS(1, 0), 0)); /* ISR order */
    apply_ok(img, r_fence(2, 2, true));
    refuse(img, r_part(6, 2, IDS(2, 1), IDS(2), 2)); /* fenced leader */
    meta_image_free(img);
    img = cluster();
    apply_ok(img, r_part(6, 2, IDS(2, 1), IDS(2), -1)); /* no leader: fine */
    meta_image_free(img);
}

static void test_change_rules(void **state)
{
    struct meta_image *img = cluster();
    const struct meta_partition *p;

    (void)state;
    /* partition 0: leader 0, epochs 0/0, ISR 0 1 2 */
    refuse(img, r_change(6, 0, IDS(0, 1), 0, 0, 0)); /* pe not bumped */
    refuse(img, r_change(6, 0, IDS(0, 1), 0, 0, 2)); /* pe bumped twice */
    refuse(img,
           r_change(6, 0, IDS(0, 1), 0, 1, 1)); /* le bumped, same leader */
    refuse(img, r_change(6, 0, IDS(1, 2), 1, 0, 1)); /* new leader, same le */
    refuse(img, r_change(6, 0, IDS(1, 2), 1, 2, 1)); /* le bumped twice */
    refuse(img, r_change(6, 0, IDS(1, 0), 1, 1, 1)); /* ISR order */
    refuse(img, r_change(6, 0, IDS(0, 7), 0, 0, 1)); /* not a replica */
    refuse(img, r_change(6, 2, IDS(0), 0, 0, 1));    /* no such partition */
    refuse(img, r_change(8, 0, IDS(0), 0, 0, 1));    /* no such topic */
    apply_ok(img, r_change(6, 0, IDS(0, 1), 0, 0, 1));
    apply_ok(img, r_change(6, 0, IDS(1), 1, 1, 2));
    p = meta_image_partition(img, 6, 0);
    assert_int_equal(p->leader, 1);
    assert_int_equal(meta_image_broker(img, 0)->n_led, 0);
    assert_int_equal(meta_image_broker(img, 1)->n_led, 2);
    apply_ok(img, r_change(6, 0, IDS(1), -1, 2, 3));
    assert_int_equal(meta_image_broker(img, 1)->n_led, 1);
    apply_ok(img, r_fence(0, 0, true));
    refuse(img, r_change(6, 0, IDS(0, 1), 0, 3, 4));    /* fenced leader */
    apply_ok(img, r_change(6, 0, IDS(0, 1), -1, 2, 4)); /* fenced in ISR */
    meta_image_free(img);
}

/* Same records, same image; a different record, a different image. */
static void test_apply_is_deterministic(void **state)
{
    struct meta_image *a = cluster();
    struct meta_image *b = cluster();

    (void)state;
    assert_true(meta_image_equal(a, b));
    apply_ok(a, r_config(6, "k", "v"));
    assert_false(meta_image_equal(a, b));
    apply_ok(b, r_config(6, "k", "w"));
    assert_false(meta_image_equal(a, b));
    meta_image_free(b);
    b = cluster();
    apply_ok(b, r_config(6, "k", "v"));
    assert_true(meta_image_equal(a, b));
    apply_ok(a, r_change(6, 0, IDS(0, 1), 0, 0, 1));
    apply_ok(b, r_change(6, 0, IDS(0, 2), 0, 0, 1));
    assert_false(meta_image_equal(a, b));
    meta_image_free(a);
    meta_image_free(b);
}

/* Fail each allocation in turn: the apply reports ENOMEM and changes
 * nothing, until it has all it needs and succeeds. */
static void test_failed_allocation_changes_nothing(void **state)
{
    struct meta_record recs[32];
    size_t n = cluster_records(recs);
    struct meta_image *img;
    struct meta_image *ref;
    size_t i;
    unsigned long k;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    assert_int_equal(meta_image_new(&ref), 0);
    for (i = 0; i < n; i++) {
        for (k = 1;; k++) {
            int rv;
            mem_fault_set(k, 0);
            rv = meta_image_apply(img, &recs[i], NULL);
            mem_fault_set(0, 0);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            assert_true(meta_image_equal(img, ref));
        }
        apply_ok(ref, recs[i]);
        assert_true(meta_image_equal(img, ref));
    }
    meta_image_free(img);
    meta_image_free(ref);
    mem_fault_set(1, 0);
    assert_int_equal(meta_image_new(&img), WEIR_ENOMEM);
    mem_fault_set(0, 0);
}

/* The name index through growth, deletions (tombstones) and reuse. */
/* Apply without the full check after each record (many records). */
static void apply_fast(struct meta_image *img, struct meta_record r)
{
    assert_int_equal(meta_image_apply(img, &r, NULL), 0);
}

static void test_many_topics_by_name(void **state)
{
    struct meta_image *img = cluster();
    char name[32];
    int64_t ids[3000];
    int i;

    (void)state;
    for (i = 0; i < 3000; i++) {
        (void)snprintf(name, sizeof(name), "topic-%d", i);
        ids[i] = meta_image_end_offset(img);
        apply_fast(img, r_topic(ids[i], name));
    }
    for (i = 0; i < 3000; i += 2) {
        apply_fast(img, r_simple(META_RECORD_REMOVE_TOPIC, ids[i]));
    }
    for (i = 0; i < 3000; i += 4) { /* half the deleted names come back */
        (void)snprintf(name, sizeof(name), "topic-%d", i);
        ids[i] = meta_image_end_offset(img);
        apply_fast(img, r_topic(ids[i], name));
    }
    for (i = 0; i < 3000; i++) {
        const struct meta_topic *t;
        (void)snprintf(name, sizeof(name), "topic-%d", i);
        t = meta_image_topic_by_name(img, name, strlen(name));
        if (i % 4 == 2) {
            assert_null(t);
        } else {
            assert_non_null(t);
            assert_int_equal(t->id, ids[i]);
        }
    }
    assert_non_null(meta_image_topic_by_name(img, "t", 1));
    assert_int_equal(meta_image_topic_count(img), 1 + 1500 + 750);
    assert_int_equal(meta_image_check(img, NULL), 0);
    meta_image_free(img);
}

static const uint8_t key_a[64] = {0xaa, 1, 2};
static const uint8_t key_b[64] = {0xbb, 3, 4};

static struct meta_record
r_user(const char *name, enum scram_mech mech, uint32_t iterations)
{
    struct meta_record r;
    size_t key_len = mech == SCRAM_SHA_512 ? 64 : 32;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_USER_SCRAM;
    r.u.user.name = STR(name);
    r.u.user.mechanism = (uint8_t)mech;
    r.u.user.iterations = iterations;
    r.u.user.salt = (struct meta_bytes){(const uint8_t *)"pepper", 6};
    r.u.user.stored_key = (struct meta_bytes){key_a, key_len};
    r.u.user.server_key = (struct meta_bytes){key_b, key_len};
    return r;
}

static struct meta_record r_user_del(const char *name, enum scram_mech mech)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REMOVE_USER_SCRAM;
    r.u.user_ref.name = STR(name);
    r.u.user_ref.mechanism = (uint8_t)mech;
    return r;
}

static struct meta_record r_acl(bool add,
                                const char *principal,
                                enum acl_resource res,
                                const char *name,
                                enum acl_op op,
                                enum acl_perm perm)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = add ? META_RECORD_ACL : META_RECORD_REMOVE_ACL;
    r.u.acl.principal = STR(principal);
    r.u.acl.resource = (uint8_t)res;
    r.u.acl.pattern = ACL_LITERAL;
    r.u.acl.name = STR(name);
    r.u.acl.op = (uint8_t)op;
    r.u.acl.perm = (uint8_t)perm;
    return r;
}

static const char *user_name_at(const struct meta_image *img, uint32_t i)
{
    const struct meta_user *u = meta_image_user_at(img, i);

    assert_non_null(u);
    return u->name;
}

static void test_users_upsert_replace_remove(void **state)
{
    struct meta_image *img;
    const struct meta_user *u;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    apply_ok(img, r_user("alice", SCRAM_SHA_256, 4096));
    apply_ok(img, r_user("bob", SCRAM_SHA_512, 4096));
    apply_ok(img, r_user("alice", SCRAM_SHA_512, 5000));
    apply_ok(img, r_user("Alice", SCRAM_SHA_256, 4096));
    apply_ok(img, r_user("al", SCRAM_SHA_512, 4096));
    /* sorted by name bytes (shorter first on a common prefix), then mech */
    assert_int_equal(meta_image_user_count(img), 5);
    assert_string_equal(user_name_at(img, 0), "Alice");
    assert_string_equal(user_name_at(img, 1), "al");
    assert_string_equal(user_name_at(img, 2), "alice");
    assert_int_equal(meta_image_user_at(img, 2)->cred.mech, SCRAM_SHA_256);
    assert_string_equal(user_name_at(img, 3), "alice");
    assert_int_equal(meta_image_user_at(img, 3)->cred.mech, SCRAM_SHA_512);
    assert_string_equal(user_name_at(img, 4), "bob");
    assert_null(meta_image_user_at(img, 5));
    assert_null(meta_image_user(img, "bob", SCRAM_SHA_256));
    assert_null(meta_image_user(img, "ali", SCRAM_SHA_256));
    assert_null(meta_image_user(img, "alicea", SCRAM_SHA_256));
    u = meta_image_user(img, "alice", SCRAM_SHA_512);
    assert_non_null(u);
    assert_int_equal(u->cred.iterations, 5000);
    assert_int_equal(u->cred.salt_len, 6);
    assert_memory_equal(u->cred.salt, "pepper", 6);
    assert_memory_equal(u->cred.stored_key, key_a, 64);
    assert_memory_equal(u->cred.server_key, key_b, 64);
    /* replace: same key, new credential, nothing added */
    apply_ok(img, r_user("alice", SCRAM_SHA_512, 20000));
    assert_int_equal(meta_image_user_count(img), 5);
    assert_int_equal(
        meta_image_user(img, "alice", SCRAM_SHA_512)->cred.iterations, 20000);
    assert_int_equal(
        meta_image_user(img, "alice", SCRAM_SHA_256)->cred.iterations, 4096);
    /* remove one mechanism; the other stays */
    apply_ok(img, r_user_del("alice", SCRAM_SHA_256));
    assert_null(meta_image_user(img, "alice", SCRAM_SHA_256));
    assert_non_null(meta_image_user(img, "alice", SCRAM_SHA_512));
    assert_int_equal(meta_image_user_count(img), 4);
    refuse(img, r_user_del("alice", SCRAM_SHA_256));
    refuse(img, r_user_del("bob", SCRAM_SHA_256));
    refuse(img, r_user_del("nobody", SCRAM_SHA_512));
    refuse(img, r_user("c,d", SCRAM_SHA_256, 4096)); /* record rules too */
    apply_ok(img, r_user_del("bob", SCRAM_SHA_512));
    assert_int_equal(meta_image_user_count(img), 3);
    assert_string_equal(user_name_at(img, 2), "alice");
    meta_image_free(img);
}

static void test_acl_rules(void **state)
{
    struct meta_image *img;
    struct meta_record deny;
    const struct acl_set *acls;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    acls = meta_image_acls(img);
    assert_int_equal(acls->n, 0);
    apply_ok(img, r_acl(true, "User:alice", ACL_TOPIC, "orders", ACL_READ,
                        ACL_ALLOW));
    apply_ok(img, r_acl(true, "User:alice", ACL_TOPIC, "orders", ACL_WRITE,
                        ACL_ALLOW));
    deny = r_acl(true, "*", ACL_TOPIC, "orders", ACL_WRITE, ACL_DENY);
    apply_ok(img, deny);
    apply_ok(img, r_acl(true, "CN=broker 1,O=weir", ACL_CLUSTER, "", ACL_ALL,
                        ACL_ALLOW));
    acls = meta_image_acls(img);
    assert_int_equal(acls->n, 4);
    assert_true(acl_allowed(acls, NULL, 0, "User:alice", ACL_TOPIC, "orders",
                            ACL_READ));
    assert_false(acl_allowed(acls, NULL, 0, "User:alice", ACL_TOPIC, "orders",
                             ACL_WRITE)); /* the deny wins */
    assert_true(acl_allowed(acls, NULL, 0, "CN=broker 1,O=weir", ACL_CLUSTER,
                            "", ACL_CLUSTER_ACTION));
    /* the exact same rule again is refused; one field apart is not */
    refuse(img, deny);
    refuse(img,
           r_acl(true, "User:alice", ACL_TOPIC, "orders", ACL_READ, ACL_ALLOW));
    apply_ok(img, r_acl(true, "*", ACL_GROUP, "orders", ACL_WRITE, ACL_DENY));
    /* removing one that is not there is refused */
    refuse(img,
           r_acl(false, "User:bob", ACL_TOPIC, "orders", ACL_READ, ACL_ALLOW));
    refuse(img, r_acl(false, "*", ACL_TOPIC, "orders", ACL_WRITE, ACL_ALLOW));
    deny.type = META_RECORD_REMOVE_ACL;
    apply_ok(img, deny);
    assert_int_equal(meta_image_acls(img)->n, 4);
    assert_true(acl_allowed(meta_image_acls(img), NULL, 0, "User:alice",
                            ACL_TOPIC, "orders", ACL_WRITE));
    refuse(img, deny);
    meta_image_free(img);
}

/* Fail each allocation in turn for users and rules: ENOMEM and no change
 * until the apply has what it needs. */
static void test_auth_failed_allocation_changes_nothing(void **state)
{
    static const char *const topics[] = {
        "t0", "t1",  "t2",  "t3",  "t4",  "t5",  "t6",  "t7",  "t8",
        "t9", "t10", "t11", "t12", "t13", "t14", "t15", "t16", "t17"};
    struct meta_record recs[32];
    struct meta_image *img;
    struct meta_image *ref;
    size_t n = 0;
    size_t i;
    unsigned long k;

    (void)state;
    recs[n++] = r_user("bob", SCRAM_SHA_256, 4096);
    recs[n++] = r_user("alice", SCRAM_SHA_256, 4096);
    recs[n++] = r_user("alice", SCRAM_SHA_256, 8000);
    recs[n++] = r_user_del("bob", SCRAM_SHA_256);
    for (i = 0; i < 18; i++) { /* past the set's first capacity (16) */
        recs[n++] = r_acl(true, "*", ACL_TOPIC, topics[i], ACL_READ, ACL_ALLOW);
    }
    recs[n++] = r_acl(false, "*", ACL_TOPIC, "t3", ACL_READ, ACL_ALLOW);
    assert_int_equal(meta_image_new(&img), 0);
    assert_int_equal(meta_image_new(&ref), 0);
    for (i = 0; i < n; i++) {
        for (k = 1;; k++) {
            int rv;
            mem_fault_set(k, 0);
            rv = meta_image_apply(img, &recs[i], NULL);
            mem_fault_set(0, 0);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            assert_true(meta_image_equal(img, ref));
        }
        apply_ok(ref, recs[i]);
        assert_true(meta_image_equal(img, ref));
    }
    meta_image_free(img);
    meta_image_free(ref);
}

static void test_user_count_is_bounded(void **state)
{
    struct meta_record extra = r_user("v", SCRAM_SHA_256, 4096);
    struct meta_image *img;
    struct err_detail ed;
    char name[16];
    int i;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    for (i = 0; i < META_MAX_USERS; i++) {
        (void)snprintf(name, sizeof(name), "u%06d", i);
        apply_fast(img, r_user(name, SCRAM_SHA_256, 4096));
    }
    assert_int_equal(meta_image_apply(img, &extra, &ed), WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, "more than"));
    assert_int_equal(meta_image_user_count(img), META_MAX_USERS);
    /* replacing one that exists still works at the limit */
    apply_fast(img, r_user("u000007", SCRAM_SHA_256, 5000));
    assert_int_equal(meta_image_user_count(img), META_MAX_USERS);
    assert_int_equal(meta_image_check(img, NULL), 0);
    meta_image_free(img);
}

/* Past META_MAX_TOMBSTONES removals the oldest are forgotten. */
static void test_tombstones_are_bounded(void **state)
{
    struct meta_image *img;
    char name[16];
    int64_t first_id = -1;
    int i;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    for (i = 0; i < META_MAX_TOMBSTONES + 2; i++) {
        int64_t id = meta_image_end_offset(img);
        (void)snprintf(name, sizeof(name), "t%d", i);
        apply_fast(img, r_topic(id, name));
        apply_fast(img, r_simple(META_RECORD_REMOVE_TOPIC, id));
        if (i == 0) {
            first_id = id;
        }
    }
    assert_int_equal(meta_image_tombstone_count(img), META_MAX_TOMBSTONES);
    assert_null(meta_image_tombstone(img, first_id));
    assert_null(meta_image_tombstone(img, first_id + 2));
    assert_string_equal(meta_image_tombstone_at(img, 0)->name, "t2");
    (void)snprintf(name, sizeof(name), "t%d", META_MAX_TOMBSTONES + 1);
    assert_string_equal(
        meta_image_tombstone_at(img, META_MAX_TOMBSTONES - 1)->name, name);
    meta_image_free(img);
}

static void test_free_null_is_noop(void **state)
{
    (void)state;
    meta_image_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_lookups),
        cmocka_unit_test(test_broker_rules),
        cmocka_unit_test(test_topic_rules),
        cmocka_unit_test(test_partition_rules),
        cmocka_unit_test(test_change_rules),
        cmocka_unit_test(test_apply_is_deterministic),
        cmocka_unit_test(test_failed_allocation_changes_nothing),
        cmocka_unit_test(test_many_topics_by_name),
        cmocka_unit_test(test_users_upsert_replace_remove),
        cmocka_unit_test(test_acl_rules),
        cmocka_unit_test(test_auth_failed_allocation_changes_nothing),
        cmocka_unit_test(test_user_count_is_bounded),
        cmocka_unit_test(test_tombstones_are_bounded),
        cmocka_unit_test(test_free_null_is_noop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
