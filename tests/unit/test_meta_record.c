/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata record codec: every type round-trips byte for byte, the layout
 * matches the documented one, and the decoder refuses every malformed
 * input (truncation anywhere, bad header, body length disagreeing with the
 * fields, counts past the limit or the bytes left, and each field rule)
 * with WEIR_ECORRUPT, without reading past its input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/meta/meta_record.h"

#define STR(s) ((struct meta_str){(s), sizeof(s) - 1})

static struct meta_record rec_register(void)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REGISTER_BROKER;
    r.u.reg.id = 1;
    r.u.reg.epoch = 2;
    r.u.reg.host = STR("h");
    r.u.reg.port = 9092;
    r.u.reg.rack = STR("r");
    return r;
}

static struct meta_record rec_partition(void)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION;
    r.u.part.topic_id = 7;
    r.u.part.partition = 3;
    r.u.part.replicas.n = 3;
    r.u.part.replicas.ids[0] = 2;
    r.u.part.replicas.ids[1] = 0;
    r.u.part.replicas.ids[2] = 1;
    r.u.part.isr.n = 2;
    r.u.part.isr.ids[0] = 2;
    r.u.part.isr.ids[1] = 1;
    r.u.part.leader = 2;
    r.u.part.leader_epoch = 4;
    r.u.part.partition_epoch = 9;
    r.u.part.flags = META_PART_UNCLEAN;
    return r;
}

static struct meta_record rec_change(void)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION_CHANGE;
    r.u.change.topic_id = 7;
    r.u.change.partition = 0;
    r.u.change.isr.n = 1;
    r.u.change.isr.ids[0] = 5;
    r.u.change.leader = -1;
    r.u.change.leader_epoch = 1;
    r.u.change.partition_epoch = 2;
    return r;
}

static const uint8_t key_a[64] = {1, 2, 3, 4};
static const uint8_t key_b[64] = {5, 6, 7, 8};

#define BYTES(p, n) ((struct meta_bytes){(p), (n)})

static struct meta_record rec_user(enum scram_mech mech)
{
    struct meta_record r;
    size_t key_len = mech == SCRAM_SHA_512 ? 64 : 32;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_USER_SCRAM;
    r.u.user.name = STR("alice");
    r.u.user.mechanism = (uint8_t)mech;
    r.u.user.iterations = 4096;
    r.u.user.salt = BYTES((const uint8_t *)"salty", 5);
    r.u.user.stored_key = BYTES(key_a, key_len);
    r.u.user.server_key = BYTES(key_b, key_len);
    return r;
}

static struct meta_record rec_acl(void)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_ACL;
    r.u.acl.principal = STR("User:alice");
    r.u.acl.resource = ACL_TOPIC;
    r.u.acl.pattern = ACL_PREFIXED;
    r.u.acl.name = STR("orders.");
    r.u.acl.op = ACL_READ;
    r.u.acl.perm = ACL_ALLOW;
    return r;
}

/* One valid record of every type. */
static size_t all_records(struct meta_record *out)
{
    size_t n = 0;

    out[n++] = rec_register();
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_FENCE_BROKER;
    out[n].u.fence.id = 1;
    out[n++].u.fence.epoch = 2;
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_UNFENCE_BROKER;
    out[n].u.fence.id = 0;
    out[n++].u.fence.epoch = 0;
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_CREATE_TOPIC;
    out[n].u.topic.topic_id = 7;
    out[n++].u.topic.name = STR("orders.v2");
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_TOPIC_CONFIG;
    out[n].u.config.topic_id = 7;
    out[n].u.config.key = STR("min.insync.replicas");
    out[n++].u.config.value = STR("2");
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_TOPIC_CONFIG;
    out[n].u.config.topic_id = 7;
    out[n].u.config.key = STR("note");
    out[n++].u.config.value = STR(""); /* empty values are allowed */
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_REMOVE_TOPIC;
    out[n++].u.remove_topic_id = 7;
    out[n++] = rec_partition();
    out[n++] = rec_change();
    /* the version 1 forms: ELR, directory id */
    out[n] = rec_partition();
    out[n].u.part.elr.n = 1;
    out[n++].u.part.elr.ids[0] = 0;
    out[n] = rec_change();
    out[n].u.change.isr.n = 0;
    out[n].u.change.elr.n = 2;
    out[n].u.change.elr.ids[0] = 5;
    out[n++].u.change.elr.ids[1] = 3;
    out[n] = rec_register();
    out[n++].u.reg.directory_id = STR("dir-7Hq2");
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_PRODUCER_IDS;
    out[n++].u.next_producer_id = 1000;
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_BROKER_TLS;
    out[n].u.tls.id = 3;
    out[n].u.tls.epoch = 12;
    out[n].u.tls.host = STR("broker3.example");
    out[n++].u.tls.port = 9093;
    out[n++] = rec_user(SCRAM_SHA_256);
    out[n++] = rec_user(SCRAM_SHA_512);
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_REMOVE_USER_SCRAM;
    out[n].u.user_ref.name = STR("bob");
    out[n++].u.user_ref.mechanism = SCRAM_SHA_512;
    out[n++] = rec_acl();
    out[n] = rec_acl();
    out[n].type = META_RECORD_REMOVE_ACL;
    out[n].u.acl.principal = STR("CN=broker 1,O=weir"); /* spaces, commas */
    out[n].u.acl.resource = ACL_CLUSTER;
    out[n].u.acl.pattern = ACL_LITERAL;
    out[n].u.acl.name = STR("");
    out[n].u.acl.op = ACL_ALL;
    out[n++].u.acl.perm = ACL_DENY;
    memset(&out[n], 0, sizeof(out[n]));
    out[n].type = META_RECORD_TOPIC_TOMBSTONE;
    out[n].u.tomb.topic_id = 7;
    out[n++].u.tomb.name = STR("orders.v2");
    return n;
}

static void encode_ok(const struct meta_record *r, struct weir_buf *b)
{
    struct err_detail ed;

    if (meta_record_encode(r, b, &ed) != 0) {
        fail_msg("encode: %s", ed.msg);
    }
}

/* Decode from an exactly-sized heap copy, so ASan sees any overread. */
static int decode_exact(const uint8_t *p,
                        size_t len,
                        struct meta_record *out,
                        size_t *used)
{
    uint8_t *copy = malloc(len > 0 ? len : 1);
    struct weir_cursor c;
    struct err_detail ed;
    int rv;

    assert_non_null(copy);
    memcpy(copy, p, len);
    cur_init(&c, copy, len);
    rv = meta_record_decode(&c, out, &ed);
    if (rv != 0) {
        assert_int_equal(rv, WEIR_ECORRUPT);
        assert_int_equal(ed.code, WEIR_ECORRUPT);
        assert_true(strlen(ed.msg) > 0);
    }
    if (used != NULL) {
        *used = c.pos;
    }
    free(copy); /* out's strings pointed into copy: callers use rv only */
    return rv;
}

static void test_every_type_round_trips(void **state)
{
    struct meta_record recs[24];
    size_t n = all_records(recs);
    size_t i;

    (void)state;
    for (i = 0; i < n; i++) {
        struct weir_buf a;
        struct weir_buf again;
        struct meta_record back;
        struct weir_cursor c;
        struct err_detail ed;

        buf_init(&a);
        buf_init(&again);
        encode_ok(&recs[i], &a);
        cur_init(&c, a.data, a.len);
        assert_int_equal(meta_record_decode(&c, &back, &ed), 0);
        assert_int_equal(c.pos, a.len);
        assert_true(meta_record_equal(&recs[i], &back));
        encode_ok(&back, &again);
        assert_int_equal(again.len, a.len);
        assert_memory_equal(again.data, a.data, a.len);
        buf_fini(&a);
        buf_fini(&again);
    }
}

static void test_stream_of_records_decodes_in_order(void **state)
{
    struct meta_record recs[24];
    size_t n = all_records(recs);
    struct meta_record back;
    struct weir_cursor c;
    struct weir_buf b;
    size_t i;

    (void)state;
    buf_init(&b);
    for (i = 0; i < n; i++) {
        encode_ok(&recs[i], &b);
    }
    cur_init(&c, b.data, b.len);
    for (i = 0; i < n; i++) {
        assert_int_equal(meta_record_decode(&c, &back, NULL), 0);
        assert_true(meta_record_equal(&recs[i], &back));
    }
    assert_int_equal(cur_remaining(&c), 0);
    buf_fini(&b);
}

static void test_layout_is_as_documented(void **state)
{
    static const uint8_t want[] = {
        0x01, 0x00, 0x00, 0x00, 0x00, 0x14,             /* type, v0, len 20 */
        0x00, 0x00, 0x00, 0x01,                         /* id 1 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* epoch 2 */
        0x00, 0x01, 'h',                                /* host */
        0x23, 0x84,                                     /* port 9092 */
        0x00, 0x01, 'r'};                               /* rack */
    struct meta_record r = rec_register();
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    buf_fini(&b);
}

static void test_tombstone_layout_is_as_documented(void **state)
{
    static const uint8_t want[] = {
        0x0f, 0x00, 0x00, 0x00, 0x00, 0x0e,             /* type 15, len 14 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* topic id 7 */
        0x00, 0x04, 'g',  'o',  'n',  'e'};             /* name */
    struct meta_record r;
    struct weir_buf b;

    (void)state;
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_TOPIC_TOMBSTONE;
    r.u.tomb.topic_id = 7;
    r.u.tomb.name = STR("gone");
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    buf_fini(&b);
}

static void test_truncation_anywhere_is_corrupt(void **state)
{
    struct meta_record recs[24];
    size_t n = all_records(recs);
    struct meta_record back;
    size_t i;
    size_t cut;

    (void)state;
    for (i = 0; i < n; i++) {
        struct weir_buf b;
        buf_init(&b);
        encode_ok(&recs[i], &b);
        for (cut = 0; cut < b.len; cut++) {
            assert_int_equal(decode_exact(b.data, cut, &back, NULL),
                             WEIR_ECORRUPT);
        }
        assert_int_equal(decode_exact(b.data, b.len, &back, NULL), 0);
        buf_fini(&b);
    }
}

static void test_bad_header_is_corrupt(void **state)
{
    struct meta_record r = rec_register();
    struct meta_record back;
    struct weir_buf b;
    static const uint8_t bad_types[] = {0, 10, 15, 0x7f, 0xff};
    size_t i;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    for (i = 0; i < sizeof(bad_types); i++) {
        b.data[0] = bad_types[i];
        assert_int_equal(decode_exact(b.data, b.len, &back, NULL),
                         WEIR_ECORRUPT);
    }
    b.data[0] = META_RECORD_REGISTER_BROKER;
    b.data[1] = 1; /* version */
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[1] = 0;
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), 0);
    buf_fini(&b);
}

static void test_body_length_must_match_fields(void **state)
{
    struct meta_record r = rec_register();
    struct meta_record back;
    struct weir_buf b;
    size_t used;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    /* claims more than there is */
    wire_put_u32be(b.data + 2, 21);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 2, UINT32_MAX);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    /* fields run past the claimed body */
    wire_put_u32be(b.data + 2, 19);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    /* a byte inside the body that no field reads */
    buf_put_u8(&b, 0);
    wire_put_u32be(b.data + 2, 21);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    /* the same byte after the record belongs to the next one */
    wire_put_u32be(b.data + 2, 20);
    assert_int_equal(decode_exact(b.data, b.len, &back, &used), 0);
    assert_int_equal(used, b.len - 1);
    buf_fini(&b);
}

/* Offset of the replica count in an encoded PARTITION record. */
#define PART_REPLICAS_AT (6 + 8 + 4)

static void test_id_counts_are_bounded(void **state)
{
    struct meta_record r = rec_partition();
    struct meta_record back;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    b.data[PART_REPLICAS_AT] = META_MAX_REPLICAS + 1; /* over the limit */
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[PART_REPLICAS_AT] = 0xff;
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[PART_REPLICAS_AT] = META_MAX_REPLICAS; /* more than remain */
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[PART_REPLICAS_AT] = 0; /* empty replica list */
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[PART_REPLICAS_AT] = 3;
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), 0);
    /* a string length past the end */
    buf_reset(&b);
    r = rec_register();
    encode_ok(&r, &b);
    wire_put_u16be(b.data + 18, 0xffff);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    buf_fini(&b);
}

/* A field rule broken in the bytes is caught by the decoder, and the
 * encoder refuses to write the same record. */
static void test_decoder_runs_field_checks(void **state)
{
    struct meta_record r = rec_register();
    struct meta_record back;
    struct err_detail ed;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    wire_put_u16be(b.data + 21, 0); /* port 0 */
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    b.data[20] = ' '; /* host with a space */
    wire_put_u16be(b.data + 21, 9092);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    buf_reset(&b);
    r.u.reg.port = 0;
    assert_int_equal(meta_record_encode(&r, &b, &ed), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(b.len, 0);
    buf_fini(&b);
}

static void expect_refused(const struct meta_record *r, const char *what)
{
    struct err_detail ed;
    struct weir_buf b;

    if (meta_record_check(r, &ed) != WEIR_ECORRUPT) {
        fail_msg("check accepted: %s", what);
    }
    buf_init(&b);
    assert_int_equal(meta_record_encode(r, &b, NULL), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(b.len, 0);
    buf_fini(&b);
}

static void test_broker_field_rules(void **state)
{
    char long_rack[META_MAX_RACK_BYTES + 1];
    char long_host[META_MAX_HOST_BYTES + 1];
    struct meta_record r;

    (void)state;
    memset(long_rack, 'r', sizeof(long_rack));
    memset(long_host, 'h', sizeof(long_host));
    r = rec_register();
    r.u.reg.id = -1;
    expect_refused(&r, "negative id");
    r = rec_register();
    r.u.reg.epoch = -1;
    expect_refused(&r, "negative epoch");
    r = rec_register();
    r.u.reg.host = STR("");
    expect_refused(&r, "empty host");
    r.u.reg.host = STR("a\nb");
    expect_refused(&r, "control character in host");
    r.u.reg.host = STR("h\x80");
    expect_refused(&r, "non-ASCII host");
    r.u.reg.host = (struct meta_str){long_host, sizeof(long_host)};
    expect_refused(&r, "host too long");
    r.u.reg.host = (struct meta_str){long_host, sizeof(long_host) - 1};
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.reg.rack = (struct meta_str){long_rack, sizeof(long_rack)};
    expect_refused(&r, "rack too long");
    r.u.reg.rack = STR("");
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.reg.port = 0;
    expect_refused(&r, "port 0");
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_FENCE_BROKER;
    r.u.fence.id = -5;
    expect_refused(&r, "fence negative id");
    r.type = META_RECORD_UNFENCE_BROKER;
    r.u.fence.id = 1;
    r.u.fence.epoch = -1;
    expect_refused(&r, "unfence negative epoch");
}

static void test_topic_field_rules(void **state)
{
    char long_name[251];
    char long_value[META_MAX_VALUE_BYTES + 1];
    struct meta_record r;

    (void)state;
    memset(long_name, 'n', sizeof(long_name));
    memset(long_value, 'v', sizeof(long_value));
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_CREATE_TOPIC;
    r.u.topic.name = STR("..");
    expect_refused(&r, "name ..");
    r.u.topic.name = STR("a/b");
    expect_refused(&r, "name with slash");
    r.u.topic.name = STR("");
    expect_refused(&r, "empty name");
    r.u.topic.name = (struct meta_str){long_name, 250};
    expect_refused(&r, "name of 250");
    r.u.topic.name = (struct meta_str){long_name, 249};
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.topic.topic_id = -1;
    expect_refused(&r, "negative topic id");
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_TOPIC_CONFIG;
    r.u.config.key = STR("");
    expect_refused(&r, "empty key");
    r.u.config.key = STR("a key");
    expect_refused(&r, "key with a space");
    r.u.config.key = STR("k");
    r.u.config.value = (struct meta_str){long_value, sizeof(long_value)};
    expect_refused(&r, "value too long");
    r.u.config.value = STR("a\tb");
    expect_refused(&r, "tab in value");
    r.u.config.value = STR("with spaces");
    assert_int_equal(meta_record_check(&r, NULL), 0);
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REMOVE_TOPIC;
    r.u.remove_topic_id = -3;
    expect_refused(&r, "remove negative id");
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_TOPIC_TOMBSTONE;
    r.u.tomb.name = STR("../x");
    expect_refused(&r, "tombstone name with a path");
    r.u.tomb.name = STR("gone");
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.tomb.topic_id = -1;
    expect_refused(&r, "tombstone of a negative id");
    r.type = META_RECORD_PRODUCER_IDS;
    r.u.next_producer_id = 0;
    expect_refused(&r, "next producer id 0");
    r.u.next_producer_id = -1;
    expect_refused(&r, "negative next producer id");
    r.type = (enum meta_record_type)42;
    expect_refused(&r, "unknown type");
}

static void test_partition_field_rules(void **state)
{
    struct meta_record r;

    (void)state;
    r = rec_partition();
    r.u.part.partition = -1;
    expect_refused(&r, "partition -1");
    r.u.part.partition = META_MAX_PARTITIONS;
    expect_refused(&r, "partition past the limit");
    r = rec_partition();
    r.u.part.replicas.ids[1] = 2;
    expect_refused(&r, "duplicate replica");
    r = rec_partition();
    r.u.part.replicas.ids[1] = -4;
    expect_refused(&r, "negative replica");
    r = rec_partition();
    r.u.part.isr.ids[1] = 9;
    expect_refused(&r, "ISR member not a replica");
    r = rec_partition();
    r.u.part.isr.n = 0; /* an empty ISR is allowed, but then no leader */
    expect_refused(&r, "leader with an empty ISR");
    r = rec_partition();
    r.u.part.leader = 0; /* a replica but not in the ISR */
    expect_refused(&r, "leader outside the ISR");
    r.u.part.leader = -2;
    expect_refused(&r, "leader -2");
    r = rec_partition();
    r.u.part.leader_epoch = -1;
    expect_refused(&r, "negative leader epoch");
    r = rec_partition();
    r.u.part.partition_epoch = -1;
    expect_refused(&r, "negative partition epoch");
    r = rec_partition();
    r.u.part.flags = 0x02;
    expect_refused(&r, "unknown flag");
    r = rec_partition();
    r.u.part.replicas.n = META_MAX_REPLICAS + 1;
    expect_refused(&r, "too many replicas");
    r = rec_change();
    r.u.change.isr.ids[0] = 5;
    r.u.change.leader = 6;
    expect_refused(&r, "change: leader outside the ISR");
    r = rec_change();
    r.u.change.isr.n = 2;
    r.u.change.isr.ids[1] = 5;
    expect_refused(&r, "change: duplicate ISR member");
    r = rec_change();
    r.u.change.topic_id = -1;
    expect_refused(&r, "change: negative topic id");
}

static void test_user_field_rules(void **state)
{
    char long_name[SCRAM_MAX_USER + 1];
    uint8_t long_salt[SCRAM_MAX_SALT + 1] = {0};
    struct meta_record r;

    (void)state;
    memset(long_name, 'u', sizeof(long_name));
    r = rec_user(SCRAM_SHA_256);
    r.u.user.mechanism = 0;
    expect_refused(&r, "mechanism 0");
    r.u.user.mechanism = 3;
    expect_refused(&r, "mechanism 3");
    r = rec_user(SCRAM_SHA_256);
    r.u.user.iterations = SCRAM_MIN_ITER - 1;
    expect_refused(&r, "iterations below the minimum");
    r.u.user.iterations = SCRAM_MAX_ITER + 1;
    expect_refused(&r, "iterations above the maximum");
    r.u.user.iterations = SCRAM_MAX_ITER;
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r = rec_user(SCRAM_SHA_256);
    r.u.user.stored_key.len = 64; /* SHA-512's length on SHA-256 */
    r.u.user.server_key.len = 64;
    expect_refused(&r, "SHA-256 with 64-byte keys");
    r = rec_user(SCRAM_SHA_512);
    r.u.user.server_key.len = 32;
    expect_refused(&r, "server key shorter than the stored key");
    r = rec_user(SCRAM_SHA_256);
    r.u.user.salt.len = 0;
    expect_refused(&r, "empty salt");
    r.u.user.salt = BYTES(long_salt, sizeof(long_salt));
    expect_refused(&r, "salt too long");
    r.u.user.salt.len = SCRAM_MAX_SALT;
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r = rec_user(SCRAM_SHA_256);
    r.u.user.name = STR("al,ice");
    expect_refused(&r, "name with a comma");
    r.u.user.name = STR("al=ice");
    expect_refused(&r, "name with '='");
    r.u.user.name = STR("al ice");
    expect_refused(&r, "name with a space");
    r.u.user.name = STR("");
    expect_refused(&r, "empty name");
    r.u.user.name = (struct meta_str){long_name, sizeof(long_name)};
    expect_refused(&r, "name too long");
    r.u.user.name = (struct meta_str){long_name, SCRAM_MAX_USER};
    assert_int_equal(meta_record_check(&r, NULL), 0);
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REMOVE_USER_SCRAM;
    r.u.user_ref.name = STR("bob");
    expect_refused(&r, "remove: mechanism 0");
    r.u.user_ref.mechanism = SCRAM_SHA_512;
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.user_ref.name = STR("b,ob");
    expect_refused(&r, "remove: name with a comma");
}

static void test_acl_field_rules(void **state)
{
    char long_name[ACL_MAX_NAME + 1];
    struct meta_record r;

    (void)state;
    memset(long_name, 'n', sizeof(long_name));
    r = rec_acl();
    r.u.acl.resource = ACL_CLUSTER;
    expect_refused(&r, "prefixed cluster rule");
    r.u.acl.pattern = ACL_LITERAL;
    expect_refused(&r, "cluster rule with a name");
    r.u.acl.name = STR("");
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r = rec_acl();
    r.u.acl.name = STR("");
    expect_refused(&r, "topic rule without a name");
    r.u.acl.name = (struct meta_str){long_name, sizeof(long_name)};
    expect_refused(&r, "name too long");
    r.u.acl.name = STR("a\x7f");
    expect_refused(&r, "DEL in name");
    r = rec_acl();
    r.u.acl.principal = STR("");
    expect_refused(&r, "empty principal");
    r.u.acl.principal = STR("CN=a\tb");
    expect_refused(&r, "tab in principal");
    r.u.acl.principal = STR("*");
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r = rec_acl();
    r.u.acl.resource = 0;
    expect_refused(&r, "resource 0");
    r.u.acl.resource = ACL_CLUSTER + 1;
    expect_refused(&r, "resource past cluster");
    r = rec_acl();
    r.u.acl.pattern = 3;
    expect_refused(&r, "pattern 3");
    r = rec_acl();
    r.u.acl.op = 0;
    expect_refused(&r, "op 0");
    r.u.acl.op = ACL_ALL + 1;
    expect_refused(&r, "op past all");
    r.u.acl.op = ACL_ALL;
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r.u.acl.perm = 0;
    expect_refused(&r, "perm 0");
    r.u.acl.perm = ACL_DENY + 1;
    r.type = META_RECORD_REMOVE_ACL;
    expect_refused(&r, "remove: perm past deny");
}

/* USER_SCRAM: name, u8 mech, u32be iterations, then salt and both keys
 * as u16be length + bytes; a truncated key is corrupt. */
static void test_user_layout_is_as_documented(void **state)
{
    struct meta_record r = rec_user(SCRAM_SHA_256);
    struct meta_record back;
    struct weir_buf b;
    size_t at = 6;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(b.data[0], META_RECORD_USER_SCRAM);
    assert_int_equal(wire_get_u32be(b.data + 2),
                     2 + 5 + 1 + 4 + 2 + 5 + 2 + 32 + 2 + 32);
    assert_int_equal(wire_get_u16be(b.data + at), 5);
    assert_memory_equal(b.data + at + 2, "alice", 5);
    at += 7;
    assert_int_equal(b.data[at], SCRAM_SHA_256);
    assert_int_equal(wire_get_u32be(b.data + at + 1), 4096);
    at += 5;
    assert_int_equal(wire_get_u16be(b.data + at), 5);
    at += 7;
    assert_int_equal(wire_get_u16be(b.data + at), 32);
    assert_memory_equal(b.data + at + 2, key_a, 32);
    /* stored key one byte short, body length adjusted to match */
    wire_put_u16be(b.data + at, 31);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), WEIR_ECORRUPT);
    wire_put_u32be(b.data + 2, wire_get_u32be(b.data + 2) - 1);
    assert_int_equal(decode_exact(b.data, b.len - 1, &back, NULL),
                     WEIR_ECORRUPT);
    wire_put_u16be(b.data + at, 32);
    wire_put_u32be(b.data + 2, wire_get_u32be(b.data + 2) + 1);
    assert_int_equal(decode_exact(b.data, b.len, &back, NULL), 0);
    buf_fini(&b);
}

static void test_type_names(void **state)
{
    (void)state;
    assert_string_equal(meta_record_type_name(META_RECORD_PARTITION_CHANGE),
                        "PARTITION_CHANGE");
    assert_string_equal(meta_record_type_name(META_RECORD_REGISTER_BROKER),
                        "REGISTER_BROKER");
    assert_string_equal(meta_record_type_name(0), "UNKNOWN");
    assert_string_equal(meta_record_type_name(META_RECORD_BROKER_TLS),
                        "BROKER_TLS");
    assert_string_equal(meta_record_type_name(META_RECORD_USER_SCRAM),
                        "USER_SCRAM");
    assert_string_equal(meta_record_type_name(META_RECORD_REMOVE_USER_SCRAM),
                        "REMOVE_USER_SCRAM");
    assert_string_equal(meta_record_type_name(META_RECORD_ACL), "ACL");
    assert_string_equal(meta_record_type_name(META_RECORD_REMOVE_ACL),
                        "REMOVE_ACL");
    assert_string_equal(meta_record_type_name(META_RECORD_TOPIC_TOMBSTONE),
                        "TOPIC_TOMBSTONE");
    assert_string_equal(meta_record_type_name(16), "UNKNOWN");
    assert_string_equal(meta_record_type_name(-1), "UNKNOWN");
}

static void test_equality_looks_at_every_field(void **state)
{
    struct meta_record a = rec_partition();
    struct meta_record b = rec_partition();

    (void)state;
    b.u.part.replicas.ids[META_MAX_REPLICAS - 1] = 99; /* beyond n: ignored */
    assert_true(meta_record_equal(&a, &b));
    b.u.part.isr.ids[1] = 0;
    assert_false(meta_record_equal(&a, &b));
    b = rec_partition();
    b.u.part.flags = 0;
    assert_false(meta_record_equal(&a, &b));
    a = rec_register();
    b = rec_register();
    b.u.reg.rack = STR("s");
    assert_false(meta_record_equal(&a, &b));
    b = rec_change();
    assert_false(meta_record_equal(&a, &b));
    a = rec_user(SCRAM_SHA_256);
    b = rec_user(SCRAM_SHA_256);
    assert_true(meta_record_equal(&a, &b));
    b.u.user.server_key = BYTES(key_a, 32);
    assert_false(meta_record_equal(&a, &b));
    b = rec_user(SCRAM_SHA_256);
    b.u.user.iterations++;
    assert_false(meta_record_equal(&a, &b));
    a = rec_acl();
    b = rec_acl();
    assert_true(meta_record_equal(&a, &b));
    b.type = META_RECORD_REMOVE_ACL;
    assert_false(meta_record_equal(&a, &b));
    b = rec_acl();
    b.u.acl.pattern = ACL_LITERAL;
    assert_false(meta_record_equal(&a, &b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_round_trips),
        cmocka_unit_test(test_tombstone_layout_is_as_documented),
        cmocka_unit_test(test_stream_of_records_decodes_in_order),
        cmocka_unit_test(test_layout_is_as_documented),
        cmocka_unit_test(test_truncation_anywhere_is_corrupt),
        cmocka_unit_test(test_bad_header_is_corrupt),
        cmocka_unit_test(test_body_length_must_match_fields),
        cmocka_unit_test(test_id_counts_are_bounded),
        cmocka_unit_test(test_decoder_runs_field_checks),
        cmocka_unit_test(test_broker_field_rules),
        cmocka_unit_test(test_topic_field_rules),
        cmocka_unit_test(test_partition_field_rules),
        cmocka_unit_test(test_user_field_rules),
        cmocka_unit_test(test_acl_field_rules),
        cmocka_unit_test(test_user_layout_is_as_documented),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_equality_looks_at_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
