/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata snapshots: the image rebuilt from a snapshot equals the image
 * rebuilt from the full log, at any point of the log and after more
 * records; damaged snapshots are refused with WEIR_ECORRUPT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "common/mem.h"
#include "controller/meta/meta_snapshot.h"

#define STR(s) ((struct meta_str){(s), strlen(s)})

static const uint8_t key_a[64] = {0xa1, 0xa2, 0xa3};
static const uint8_t key_b[64] = {0xb1, 0xb2, 0xb3};

static void sample_user(struct meta_record *r,
                        const char *name,
                        enum scram_mech mech,
                        uint32_t iterations)
{
    size_t key_len = mech == SCRAM_SHA_512 ? 64 : 32;

    r->type = META_RECORD_USER_SCRAM;
    r->u.user.name = STR(name);
    r->u.user.mechanism = (uint8_t)mech;
    r->u.user.iterations = iterations;
    r->u.user.salt = (struct meta_bytes){(const uint8_t *)name, strlen(name)};
    r->u.user.stored_key = (struct meta_bytes){key_a, key_len};
    r->u.user.server_key = (struct meta_bytes){key_b, key_len};
}

static void sample_acl(struct meta_record *r,
                       bool add,
                       const char *principal,
                       enum acl_resource res,
                       enum acl_pattern pattern,
                       const char *name,
                       enum acl_op op,
                       enum acl_perm perm)
{
    r->type = add ? META_RECORD_ACL : META_RECORD_REMOVE_ACL;
    r->u.acl.principal = STR(principal);
    r->u.acl.resource = (uint8_t)res;
    r->u.acl.pattern = (uint8_t)pattern;
    r->u.acl.name = STR(name);
    r->u.acl.op = (uint8_t)op;
    r->u.acl.perm = (uint8_t)perm;
}

/* Users: alice's SHA-256 credential replaced, bob's removed. ACL rules:
 * the first of three removed, which moves the last into its place. */
static size_t sample_auth(struct meta_record *out)
{
    size_t n = 0;

    sample_user(&out[n++], "alice", SCRAM_SHA_256, 4096);
    sample_user(&out[n++], "bob", SCRAM_SHA_256, 4096);
    sample_user(&out[n++], "alice", SCRAM_SHA_512, 10000);
    sample_user(&out[n++], "alice", SCRAM_SHA_256, 8192);
    out[n].type = META_RECORD_REMOVE_USER_SCRAM;
    out[n].u.user_ref.name = STR("bob");
    out[n++].u.user_ref.mechanism = SCRAM_SHA_256;
    sample_acl(&out[n++], true, "User:alice", ACL_TOPIC, ACL_LITERAL, "orders",
               ACL_READ, ACL_ALLOW);
    sample_acl(&out[n++], true, "*", ACL_TOPIC, ACL_PREFIXED, "ord", ACL_WRITE,
               ACL_DENY);
    sample_acl(&out[n++], true, "CN=broker-1,O=weir", ACL_CLUSTER, ACL_LITERAL,
               "", ACL_CLUSTER_ACTION, ACL_ALLOW);
    sample_acl(&out[n++], false, "User:alice", ACL_TOPIC, ACL_LITERAL, "orders",
               ACL_READ, ACL_ALLOW);
    return n;
}

/* A log of n records: brokers 0..3 (rack "r<id % 2>"), broker 3 left
 * fenced, topics with configs and partitions, ISR and leader changes, a
 * removed topic, producer ids, users and ACL rules added, replaced and
 * removed. Written out longhand so every record type appears in a known
 * order. */
static size_t sample_log(struct meta_record *out)
{
    static const char *const racks[] = {"r0", "r1"};
    static const char *const hosts[] = {"b0", "b1", "b2", "b3"};
    size_t n = 0;
    int32_t b;

    memset(out, 0, 40 * sizeof(*out));
    for (b = 0; b < 4; b++) {
        out[n].type = META_RECORD_REGISTER_BROKER;
        out[n].u.reg.id = b;
        out[n].u.reg.epoch = (int64_t)n;
        out[n].u.reg.host = STR(hosts[b]);
        out[n].u.reg.port = (uint16_t)(9000 + b);
        out[n++].u.reg.rack = STR(racks[b % 2]);
    }
    for (b = 0; b < 3; b++) {
        out[n].type = META_RECORD_UNFENCE_BROKER;
        out[n].u.fence.id = b;
        out[n++].u.fence.epoch = b;
    }
    out[n].type = META_RECORD_CREATE_TOPIC; /* offset 7 */
    out[n].u.topic.topic_id = 7;
    out[n++].u.topic.name = STR("gone");
    out[n].type = META_RECORD_CREATE_TOPIC; /* offset 8 */
    out[n].u.topic.topic_id = 8;
    out[n++].u.topic.name = STR("orders");
    out[n].type = META_RECORD_TOPIC_CONFIG;
    out[n].u.config.topic_id = 8;
    out[n].u.config.key = STR("min.insync.replicas");
    out[n++].u.config.value = STR("2");
    for (b = 0; b < 3; b++) {
        struct meta_partition_rec *p = &out[n].u.part;
        out[n++].type = META_RECORD_PARTITION;
        p->topic_id = 8;
        p->partition = b;
        p->replicas.n = 3;
        p->replicas.ids[0] = b;
        p->replicas.ids[1] = (b + 1) % 3;
        p->replicas.ids[2] = (b + 2) % 3;
        p->isr = p->replicas;
        p->leader = b;
    }
    out[n].type = META_RECORD_PARTITION_CHANGE; /* 0 leaves partition 0 */
    out[n].u.change.topic_id = 8;
    out[n].u.change.isr.n = 2;
    out[n].u.change.isr.ids[0] = 1;
    out[n].u.change.isr.ids[1] = 2;
    out[n].u.change.leader = 1;
    out[n].u.change.leader_epoch = 1;
    out[n++].u.change.partition_epoch = 1;
    out[n].type = META_RECORD_PRODUCER_IDS;
    out[n++].u.next_producer_id = 5000;
    out[n].type = META_RECORD_REMOVE_TOPIC;
    out[n++].u.remove_topic_id = 7;
    out[n].type = META_RECORD_FENCE_BROKER;
    out[n].u.fence.id = 0;
    out[n++].u.fence.epoch = 0;
    out[n].type = META_RECORD_PARTITION_CHANGE; /* 2 leads 2, ISR 2 */
    out[n].u.change.topic_id = 8;
    out[n].u.change.partition = 2;
    out[n].u.change.isr.n = 1;
    out[n].u.change.isr.ids[0] = 2;
    out[n].u.change.leader = 2;
    out[n++].u.change.partition_epoch = 1;
    out[n].type = META_RECORD_BROKER_TLS; /* 1 also serves TLS */
    out[n].u.tls.id = 1;
    out[n].u.tls.epoch = 1;
    out[n].u.tls.host = STR("b1");
    out[n++].u.tls.port = 9443;
    n += sample_auth(&out[n]);
    return n;
}

static struct meta_image *replay(const struct meta_record *recs, size_t n)
{
    struct meta_image *img;
    struct err_detail ed;
    size_t i;

    assert_int_equal(meta_image_new(&img), 0);
    for (i = 0; i < n; i++) {
        if (meta_image_apply(img, &recs[i], &ed) != 0) {
            fail_msg("record %zu: %s", i, ed.msg);
        }
    }
    return img;
}

static struct meta_image *through_snapshot(const struct meta_image *img)
{
    struct meta_image *back;
    struct err_detail ed;
    struct weir_buf b;

    buf_init(&b);
    assert_int_equal(meta_snapshot_encode(img, &b, &ed), 0);
    if (meta_snapshot_decode(b.data, b.len, &back, &ed) != 0) {
        fail_msg("decode: %s", ed.msg);
    }
    buf_fini(&b);
    return back;
}

/* At every prefix of the log: snapshot then the rest == the whole log. */
static void test_snapshot_then_rest_equals_full_log(void **state)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *full = replay(recs, n);
    size_t cut;
    size_t i;

    (void)state;
    for (cut = 0; cut <= n; cut++) {
        struct meta_image *head = replay(recs, cut);
        struct meta_image *img = through_snapshot(head);
        assert_true(meta_image_equal(img, head));
        assert_int_equal(meta_image_check(img, NULL), 0);
        for (i = cut; i < n; i++) {
            assert_int_equal(meta_image_apply(img, &recs[i], NULL), 0);
        }
        assert_true(meta_image_equal(img, full));
        meta_image_free(img);
        meta_image_free(head);
    }
    meta_image_free(full);
}

static int count_types(void *ctx, const struct meta_record *rec)
{
    uint32_t *seen = ctx;

    seen[rec->type]++;
    return 0;
}

static int stop_at_third(void *ctx, const struct meta_record *rec)
{
    int *calls = ctx;

    (void)rec;
    return ++*calls == 3 ? 77 : 0;
}

static void test_walk_lists_the_rebuilding_records(void **state)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *img = replay(recs, n);
    uint32_t seen[16] = {0};
    int calls = 0;

    (void)state;
    assert_int_equal(meta_snapshot_walk(img, count_types, seen), 0);
    assert_int_equal(seen[META_RECORD_REGISTER_BROKER], 4);
    assert_int_equal(seen[META_RECORD_UNFENCE_BROKER], 2); /* 0 was fenced */
    assert_int_equal(seen[META_RECORD_FENCE_BROKER], 0);
    assert_int_equal(seen[META_RECORD_CREATE_TOPIC], 1); /* one removed */
    assert_int_equal(seen[META_RECORD_TOPIC_CONFIG], 1);
    assert_int_equal(seen[META_RECORD_PARTITION], 3);
    assert_int_equal(seen[META_RECORD_PARTITION_CHANGE], 0);
    assert_int_equal(seen[META_RECORD_PRODUCER_IDS], 1);
    assert_int_equal(seen[META_RECORD_BROKER_TLS], 1);
    assert_int_equal(seen[META_RECORD_USER_SCRAM], 2); /* alice x2 */
    assert_int_equal(seen[META_RECORD_REMOVE_USER_SCRAM], 0);
    assert_int_equal(seen[META_RECORD_ACL], 2);
    assert_int_equal(seen[META_RECORD_REMOVE_ACL], 0);
    assert_int_equal(seen[META_RECORD_TOPIC_TOMBSTONE], 1); /* "gone" */
    assert_int_equal(meta_snapshot_walk(img, stop_at_third, &calls), 77);
    assert_int_equal(calls, 3);
    meta_image_free(img);
}

static void test_empty_image_round_trips(void **state)
{
    struct meta_image *img;
    struct meta_image *back;

    (void)state;
    assert_int_equal(meta_image_new(&img), 0);
    back = through_snapshot(img);
    assert_true(meta_image_equal(img, back));
    assert_int_equal(meta_image_end_offset(back), 0);
    meta_image_free(img);
    meta_image_free(back);
}

static void fix_crc(struct weir_buf *b)
{
    wire_put_u32be(b->data + b->len - 4, crc32c(b->data, b->len - 4));
}

static int decode_bytes(const uint8_t *p, size_t len)
{
    uint8_t *copy = malloc(len > 0 ? len : 1);
    struct meta_image *img = (struct meta_image *)1;
    struct err_detail ed;
    int rv;

    assert_non_null(copy);
    memcpy(copy, p, len);
    rv = meta_snapshot_decode(copy, len, &img, &ed);
    if (rv == 0) {
        meta_image_free(img);
    } else {
        assert_null(img);
        assert_int_equal(ed.code, rv);
    }
    free(copy);
    return rv;
}

static void encode_sample(struct weir_buf *b)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *img = replay(recs, n);

    buf_init(b);
    assert_int_equal(meta_snapshot_encode(img, b, NULL), 0);
    meta_image_free(img);
}

static void test_damaged_snapshots_are_refused(void **state)
{
    struct weir_buf b;
    size_t len;

    (void)state;
    encode_sample(&b);
    assert_int_equal(decode_bytes(b.data, b.len), 0);
    b.data[30] ^= 0x01; /* any flipped bit: CRC */
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    b.data[30] ^= 0x01;
    b.data[0] = 'X'; /* magic */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    b.data[0] = 0x57;
    b.data[4] = 1; /* version */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    b.data[4] = 0;
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), 0);
    /* every truncation, with a valid CRC over what is left */
    len = b.len;
    for (b.len = 0; b.len < len; b.len++) {
        if (b.len >= 4) {
            fix_crc(&b);
        }
        assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    }
    buf_fini(&b);
}

/* Header field offsets: magic 0, version 4, end offset 5, count 13. */
static void test_header_counts_are_checked(void **state)
{
    struct weir_buf b;
    uint32_t count;
    uint64_t end;

    (void)state;
    encode_sample(&b);
    count = wire_get_u32be(b.data + 13);
    end = wire_get_u64be(b.data + 5);
    assert_int_equal(end, 28);              /* the sample log's length */
    wire_put_u32be(b.data + 13, count + 1); /* a record too many */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 13, count - 1); /* trailing bytes */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 13, UINT32_MAX);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 13, count);
    wire_put_u64be(b.data + 5, count - 1); /* fewer offsets than records */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u64be(b.data + 5, (uint64_t)INT64_MAX + 1);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u64be(b.data + 5, end);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), 0);
    buf_fini(&b);
}

/* Records that decode but do not apply: the same broker twice. */
static void test_records_must_apply(void **state)
{
    struct meta_record rec;
    struct weir_buf b;

    (void)state;
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_REGISTER_BROKER;
    rec.u.reg.id = 1;
    rec.u.reg.host = STR("h");
    rec.u.reg.port = 1;
    rec.u.reg.rack = STR("");
    buf_init(&b);
    buf_put_u32be(&b, META_SNAPSHOT_MAGIC);
    buf_put_u8(&b, META_SNAPSHOT_VERSION);
    buf_put_u64be(&b, 10);
    buf_put_u32be(&b, 2);
    assert_int_equal(meta_record_encode(&rec, &b, NULL), 0);
    assert_int_equal(meta_record_encode(&rec, &b, NULL), 0);
    buf_put_u32be(&b, 0);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 13, 1); /* one record, then garbage */
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    /* one record, and an epoch that is not below the end offset */
    b.len = META_SNAPSHOT_HEAD_BYTES;
    rec.u.reg.epoch = 3;
    assert_int_equal(meta_record_encode(&rec, &b, NULL), 0);
    buf_put_u32be(&b, 0);
    wire_put_u64be(b.data + 5, 3);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    wire_put_u64be(b.data + 5, 4);
    fix_crc(&b);
    assert_int_equal(decode_bytes(b.data, b.len), 0);
    buf_fini(&b);
}

static void test_encode_and_decode_survive_failed_allocations(void **state)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *img = replay(recs, n);
    struct meta_image *back;
    struct weir_buf b;
    struct weir_buf good;
    unsigned long k;
    int rv;

    (void)state;
    buf_init(&good);
    assert_int_equal(meta_snapshot_encode(img, &good, NULL), 0);
    for (k = 1;; k++) {
        buf_init(&b);
        mem_fault_set(k, 0);
        rv = meta_snapshot_encode(img, &b, NULL);
        mem_fault_set(0, 0);
        if (rv == 0) {
            assert_int_equal(b.len, good.len);
            assert_memory_equal(b.data, good.data, b.len);
            buf_fini(&b);
            break;
        }
        assert_int_equal(rv, WEIR_ENOMEM);
        buf_fini(&b);
    }
    for (k = 1;; k++) {
        mem_fault_set(k, 0);
        rv = meta_snapshot_decode(good.data, good.len, &back, NULL);
        mem_fault_set(0, 0);
        if (rv == 0) {
            assert_true(meta_image_equal(back, img));
            meta_image_free(back);
            break;
        }
        assert_int_equal(rv, WEIR_ENOMEM);
        assert_null(back);
    }
    buf_fini(&good);
    meta_image_free(img);
}

/* A snapshot of `count` records (encoded by the caller after the head)
 * ending at end_offset, with its CRC. */
static void finish_snapshot(struct weir_buf *b, uint32_t count, int64_t end)
{
    wire_put_u64be(b->data + 5, (uint64_t)end);
    wire_put_u32be(b->data + 13, count);
    buf_put_u32be(b, 0);
    fix_crc(b);
}

static void start_snapshot(struct weir_buf *b)
{
    buf_init(b);
    buf_put_u32be(b, META_SNAPSHOT_MAGIC);
    buf_put_u8(b, META_SNAPSHOT_VERSION);
    buf_put_u64be(b, 0);
    buf_put_u32be(b, 0);
}

static void put_tomb(struct weir_buf *b, int64_t id, const char *name)
{
    struct meta_record rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_TOPIC_TOMBSTONE;
    rec.u.tomb.topic_id = id;
    rec.u.tomb.name = STR(name);
    assert_int_equal(meta_record_encode(&rec, b, NULL), 0);
}

/* A removed topic is remembered (id and name) through a snapshot, which is
 * how a broker that missed the REMOVE_TOPIC still learns of the removal;
 * a tombstone outside a snapshot, twice, of a live topic or past the end
 * offset is refused. */
static void test_tombstones_survive_a_snapshot(void **state)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *img = replay(recs, n);
    struct meta_image *back = through_snapshot(img);
    const struct meta_tombstone *t;
    struct meta_record rec;
    struct weir_buf b;

    (void)state;
    assert_true(meta_image_equal(img, back));
    assert_int_equal(meta_image_tombstone_count(back), 1);
    t = meta_image_tombstone(back, 7);
    assert_non_null(t);
    assert_string_equal(t->name, "gone");
    assert_null(meta_image_tombstone(back, 8)); /* live */
    assert_null(meta_image_tombstone(back, 3)); /* never a topic */
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_TOPIC_TOMBSTONE;
    rec.u.tomb.topic_id = 2;
    rec.u.tomb.name = STR("x");
    assert_int_equal(meta_image_apply(back, &rec, NULL), WEIR_ECORRUPT);
    meta_image_free(back);
    meta_image_free(img);

    start_snapshot(&b);
    put_tomb(&b, 3, "a");
    put_tomb(&b, 1, "b");
    finish_snapshot(&b, 2, 4);
    assert_int_equal(decode_bytes(b.data, b.len), 0);
    b.len -= 4; /* the CRC goes again: id 3 is not below end offset 3 */
    finish_snapshot(&b, 2, 3);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    buf_fini(&b);
    start_snapshot(&b);
    put_tomb(&b, 1, "a");
    put_tomb(&b, 1, "a"); /* twice */
    finish_snapshot(&b, 2, 4);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    buf_fini(&b);
    start_snapshot(&b);
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_CREATE_TOPIC;
    rec.u.topic.topic_id = 1;
    rec.u.topic.name = STR("live");
    assert_int_equal(meta_record_encode(&rec, &b, NULL), 0);
    put_tomb(&b, 1, "live"); /* of a live topic */
    finish_snapshot(&b, 2, 4);
    assert_int_equal(decode_bytes(b.data, b.len), WEIR_ECORRUPT);
    buf_fini(&b);
}

/* Users and rules come back from a snapshot with every field, rules in
 * the same order, and a broker's decision over them is the same. */
static void test_users_and_acls_survive_a_snapshot(void **state)
{
    struct meta_record recs[40];
    size_t n = sample_log(recs);
    struct meta_image *img = replay(recs, n);
    struct meta_image *back = through_snapshot(img);
    const struct meta_user *u;
    const struct acl_set *acls;

    (void)state;
    assert_true(meta_image_equal(img, back));
    assert_int_equal(meta_image_check(back, NULL), 0);
    assert_int_equal(meta_image_user_count(back), 2);
    assert_null(meta_image_user(back, "bob", SCRAM_SHA_256));
    u = meta_image_user(back, "alice", SCRAM_SHA_256);
    assert_non_null(u);
    assert_int_equal(u->cred.iterations, 8192);
    assert_int_equal(u->cred.salt_len, 5);
    assert_memory_equal(u->cred.salt, "alice", 5);
    assert_memory_equal(u->cred.stored_key, key_a, 32);
    assert_memory_equal(u->cred.server_key, key_b, 32);
    u = meta_image_user(back, "alice", SCRAM_SHA_512);
    assert_non_null(u);
    assert_memory_equal(u->cred.server_key, key_b, 64);
    acls = meta_image_acls(back);
    assert_int_equal(acls->n, 2);
    assert_string_equal(acls->rules[0].principal, "CN=broker-1,O=weir");
    assert_string_equal(acls->rules[1].name, "ord");
    assert_true(acl_allowed(acls, NULL, 0, "CN=broker-1,O=weir", ACL_CLUSTER,
                            "", ACL_CLUSTER_ACTION));
    assert_false(acl_allowed(acls, NULL, 0, "User:alice", ACL_TOPIC, "orders",
                             ACL_READ));
    /* the rule already there, the rule already gone: refused, unchanged */
    assert_int_equal(meta_image_apply(back, &recs[n - 2], NULL), WEIR_ECORRUPT);
    assert_int_equal(meta_image_apply(back, &recs[n - 1], NULL), WEIR_ECORRUPT);
    assert_true(meta_image_equal(img, back));
    meta_image_free(back);
    /* same offsets, one user field or one rule different: not equal */
    recs[n - 6].u.user.iterations = 8193;
    back = replay(recs, n);
    assert_false(meta_image_equal(img, back));
    meta_image_free(back);
    recs[n - 6].u.user.iterations = 8192;
    recs[n - 3].u.acl.perm = ACL_ALLOW;
    back = replay(recs, n);
    assert_false(meta_image_equal(img, back));
    meta_image_free(back);
    recs[n - 3].u.acl.perm = ACL_DENY;
    back = replay(recs, n);
    assert_true(meta_image_equal(img, back));
    meta_image_free(back);
    meta_image_free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_then_rest_equals_full_log),
        cmocka_unit_test(test_walk_lists_the_rebuilding_records),
        cmocka_unit_test(test_empty_image_round_trips),
        cmocka_unit_test(test_damaged_snapshots_are_refused),
        cmocka_unit_test(test_header_counts_are_checked),
        cmocka_unit_test(test_records_must_apply),
        cmocka_unit_test(test_encode_and_decode_survive_failed_allocations),
        cmocka_unit_test(test_users_and_acls_survive_a_snapshot),
        cmocka_unit_test(test_tombstones_survive_a_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
