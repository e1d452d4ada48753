/* SPDX-License-Identifier: Apache-2.0 */
/* Version 1 metadata records: the ELR (eligible leader replicas) in
 * PARTITION and PARTITION_CHANGE, the directory id in REGISTER_BROKER.
 * Layouts are as documented, a record is written at the lowest version
 * that holds it (so version 0 bytes, old logs included, still decode and
 * re-encode the same), a version 1 record with its new field empty is
 * corrupt (not canonical), the field rules hold, and the image keeps the
 * ELR and the directory id through apply, snapshots and equality. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/meta/meta_image.h"
#include "controller/meta/meta_snapshot.h"

#define STR(s) ((struct meta_str){(s), sizeof(s) - 1})

static struct meta_ids ids_of(uint32_t n, const int32_t *v)
{
    struct meta_ids ids;

    memset(&ids, 0, sizeof(ids));
    ids.n = n;
    if (n > 0) {
        memcpy(ids.ids, v, n * sizeof(v[0]));
    }
    return ids;
}

#define IDS(...)                                                               \
    ids_of(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t),                 \
           (int32_t[]){__VA_ARGS__})
#define NO_IDS ids_of(0, NULL)

static struct meta_record r_reg(int32_t id, int64_t epoch, struct meta_str dir)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_REGISTER_BROKER;
    r.u.reg.id = id;
    r.u.reg.epoch = epoch;
    r.u.reg.host = STR("h");
    r.u.reg.port = 9092;
    r.u.reg.rack = STR("");
    r.u.reg.directory_id = dir;
    return r;
}

static struct meta_record r_change(struct meta_ids isr,
                                   struct meta_ids elr,
                                   int32_t leader,
                                   int32_t le,
                                   int32_t pe)
{
    struct meta_record r;

    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION_CHANGE;
    r.u.change.topic_id = 3;
    r.u.change.partition = 0;
    r.u.change.isr = isr;
    r.u.change.elr = elr;
    r.u.change.leader = leader;
    r.u.change.leader_epoch = le;
    r.u.change.partition_epoch = pe;
    return r;
}

static void encode_ok(const struct meta_record *r, struct weir_buf *b)
{
    struct err_detail ed;

    if (meta_record_encode(r, b, &ed) != 0) {
        fail_msg("encode: %s", ed.msg);
    }
}

/* Decode exactly these bytes (a heap copy, so ASan sees overreads);
 * on success the decoded record must encode back to the same bytes. */
static int decode_bytes(const uint8_t *p, size_t len, struct meta_record *out)
{
    uint8_t *copy = malloc(len);
    struct weir_cursor c;
    struct err_detail ed;
    struct weir_buf again;
    int rv;

    assert_non_null(copy);
    memcpy(copy, p, len);
    cur_init(&c, copy, len);
    rv = meta_record_decode(&c, out, &ed);
    if (rv == 0) {
        assert_int_equal(c.pos, len);
        buf_init(&again);
        encode_ok(out, &again);
        assert_int_equal(again.len, len);
        assert_memory_equal(again.data, p, len);
        buf_fini(&again);
    } else {
        assert_int_equal(rv, WEIR_ECORRUPT);
        assert_true(strlen(ed.msg) > 0);
    }
    free(copy);
    /* out's strings pointed into copy: only counts are read after this */
    return rv;
}

static void test_change_with_elr_layout(void **state)
{
    static const uint8_t want[] = {
        0x08, 0x01, 0x00, 0x00, 0x00, 0x23,           /* type, v1, len 35 */
        0,    0,    0,    0,    0,    0,    0, 3,     /* topic id 3 */
        0,    0,    0,    0,                          /* partition 0 */
        0x00,                                         /* ISR: none */
        0xff, 0xff, 0xff, 0xff,                       /* leader -1 */
        0,    0,    0,    4,    0,    0,    0, 9,     /* epochs 4, 9 */
        0x00,                                         /* flags */
        0x02, 0,    0,    0,    2,    0,    0, 0, 5}; /* ELR 2, 5 */
    struct meta_record r = r_change(NO_IDS, IDS(2, 5), -1, 4, 9);
    struct meta_record back;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(meta_record_version(&r), META_RECORD_VERSION_V1);
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    assert_int_equal(decode_bytes(want, sizeof(want), &back), 0);
    assert_int_equal(back.u.change.elr.n, 2);
    assert_int_equal(back.u.change.isr.n, 0);
    buf_fini(&b);
}

/* Bytes written before the ELR existed: still read, as an empty ELR, and
 * written back identically (an empty ELR is version 0). */
static void test_version_0_records_still_decode(void **state)
{
    static const uint8_t change_v0[] = {
        0x08, 0x00, 0x00, 0x00, 0x00, 0x1e,       /* type, v0, len 30 */
        0,    0,    0,    0,    0,    0,    0, 3, /* topic id 3 */
        0,    0,    0,    1,                      /* partition 1 */
        0x01, 0,    0,    0,    2,                /* ISR 2 */
        0,    0,    0,    2,                      /* leader 2 */
        0,    0,    0,    4,    0,    0,    0, 9, /* epochs */
        0x00};                                    /* flags */
    static const uint8_t reg_v0[] = {
        0x01, 0x00, 0x00, 0x00, 0x00, 0x14,       /* type, v0, len 20 */
        0x00, 0x00, 0x00, 0x01,                   /* id 1 */
        0,    0,    0,    0,    0,    0,    0, 2, /* epoch 2 */
        0x00, 0x01, 'h',                          /* host */
        0x23, 0x84,                               /* port 9092 */
        0x00, 0x01, 'r'};                         /* rack */
    struct meta_record back;

    (void)state;
    assert_int_equal(decode_bytes(change_v0, sizeof(change_v0), &back), 0);
    assert_int_equal(back.u.change.elr.n, 0);
    assert_int_equal(back.u.change.isr.n, 1);
    assert_int_equal(decode_bytes(reg_v0, sizeof(reg_v0), &back), 0);
    assert_int_equal(back.u.reg.directory_id.len, 0);
}

static void test_register_with_directory_id_layout(void **state)
{
    static const uint8_t want[] = {
        0x01, 0x01, 0x00, 0x00, 0x00, 0x18,       /* type, v1, len 24 */
        0x00, 0x00, 0x00, 0x01,                   /* id 1 */
        0,    0,    0,    0,    0,    0,    0, 2, /* epoch 2 */
        0x00, 0x01, 'h',                          /* host */
        0x23, 0x84,                               /* port 9092 */
        0x00, 0x00,                               /* rack: none */
        0x00, 0x03, 'd',  '-',  '1'};             /* directory id */
    struct meta_record r = r_reg(1, 2, STR("d-1"));
    struct meta_record back;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    assert_int_equal(decode_bytes(want, sizeof(want), &back), 0);
    assert_int_equal(back.u.reg.directory_id.len, 3);
    buf_fini(&b);
}

/* Version 1 whose new field is empty would have two encodings of one
 * record; unknown versions, and version 1 of a type without one, are
 * refused too. */
static void test_non_canonical_or_unknown_versions_are_corrupt(void **state)
{
    struct meta_record r = r_change(IDS(2), IDS(5), 2, 4, 9);
    struct meta_record back;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    encode_ok(&r, &b);
    assert_int_equal(decode_bytes(b.data, b.len, &back), 0);
    /* ELR count 0 in a version 1 record */
    b.data[b.len - 5] = 0;
    wire_put_u32be(b.data + 2, (uint32_t)(b.len - 6 - 4));
    assert_int_equal(decode_bytes(b.data, b.len - 4, &back), WEIR_ECORRUPT);
    /* the same bytes as version 0 carry a trailing byte nobody reads */
    b.data[1] = 0;
    assert_int_equal(decode_bytes(b.data, b.len - 4, &back), WEIR_ECORRUPT);
    b.data[1] = 2;
    assert_int_equal(decode_bytes(b.data, b.len - 4, &back), WEIR_ECORRUPT);
    buf_reset(&b);
    r = r_reg(1, 2, STR("x"));
    encode_ok(&r, &b);
    /* empty directory id in a version 1 registration */
    wire_put_u16be(b.data + b.len - 3, 0);
    wire_put_u32be(b.data + 2, (uint32_t)(b.len - 6 - 1));
    assert_int_equal(decode_bytes(b.data, b.len - 1, &back), WEIR_ECORRUPT);
    buf_reset(&b);
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_FENCE_BROKER;
    r.u.fence.id = 1;
    encode_ok(&r, &b);
    b.data[1] = 1;
    assert_int_equal(decode_bytes(b.data, b.len, &back), WEIR_ECORRUPT);
    buf_fini(&b);
}

static void expect_refused(const struct meta_record *r, const char *what)
{
    struct err_detail ed;

    if (meta_record_check(r, &ed) != WEIR_ECORRUPT) {
        fail_msg("check accepted: %s", what);
    }
}

static void test_elr_and_directory_rules(void **state)
{
    struct meta_record r;
    char long_dir[META_MAX_DIR_ID_BYTES + 2];

    (void)state;
    r = r_change(IDS(2), IDS(2), 2, 0, 1);
    expect_refused(&r, "broker in ISR and ELR");
    r = r_change(IDS(2), IDS(5, 5), 2, 0, 1);
    expect_refused(&r, "ELR member twice");
    r = r_change(IDS(2), IDS(-1), 2, 0, 1);
    expect_refused(&r, "negative ELR member");
    r = r_change(NO_IDS, IDS(2), 2, 0, 1);
    expect_refused(&r, "leader outside an empty ISR");
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION;
    r.u.part.topic_id = 3;
    r.u.part.replicas = IDS(1, 2, 3);
    r.u.part.isr = IDS(1);
    r.u.part.leader = 1;
    r.u.part.elr = IDS(4);
    expect_refused(&r, "ELR member not a replica");
    r.u.part.elr = IDS(3);
    assert_int_equal(meta_record_check(&r, NULL), 0);
    r = r_reg(1, 2, STR("has space"));
    expect_refused(&r, "directory id with a space");
    memset(long_dir, 'd', sizeof(long_dir));
    r.u.reg.directory_id.ptr = long_dir;
    r.u.reg.directory_id.len = META_MAX_DIR_ID_BYTES + 1;
    expect_refused(&r, "directory id too long");
    r.u.reg.directory_id.len = META_MAX_DIR_ID_BYTES;
    assert_int_equal(meta_record_check(&r, NULL), 0);
}

static void apply_ok(struct meta_image *img, const struct meta_record *r)
{
    struct err_detail ed;

    if (meta_image_apply(img, r, &ed) != 0) {
        fail_msg("apply: %s", ed.msg);
    }
    if (meta_image_check(img, &ed) != 0) {
        fail_msg("check: %s", ed.msg);
    }
}

/* Three brokers (1 with a directory id), topic 3 with one partition on
 * 1, 2, 3 led by 1 with the whole ISR. */
static struct meta_image *image_with_partition(void)
{
    struct meta_image *img;
    struct meta_record r;
    int32_t id;

    assert_int_equal(meta_image_new(&img), 0);
    for (id = 1; id <= 3; id++) {
        r = r_reg(id, id - 1, id == 1 ? STR("dir-a") : STR(""));
        apply_ok(img, &r);
    }
    for (id = 1; id <= 3; id++) {
        memset(&r, 0, sizeof(r));
        r.type = META_RECORD_UNFENCE_BROKER;
        r.u.fence.id = id;
        r.u.fence.epoch = id - 1;
        apply_ok(img, &r);
    }
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_CREATE_TOPIC;
    r.u.topic.topic_id = 6;
    r.u.topic.name = STR("t");
    apply_ok(img, &r);
    memset(&r, 0, sizeof(r));
    r.type = META_RECORD_PARTITION;
    r.u.part.topic_id = 6;
    r.u.part.replicas = IDS(1, 2, 3);
    r.u.part.isr = IDS(1, 2, 3);
    r.u.part.leader = 1;
    apply_ok(img, &r);
    return img;
}

static void snapshot_round_trip(const struct meta_image *img)
{
    struct meta_image *back;
    struct err_detail ed;
    struct weir_buf b;

    buf_init(&b);
    assert_int_equal(meta_snapshot_encode(img, &b, &ed), 0);
    assert_int_equal(meta_snapshot_decode(b.data, b.len, &back, &ed), 0);
    assert_true(meta_image_equal(img, back));
    meta_image_free(back);
    buf_fini(&b);
}

static void test_image_keeps_elr_and_directory_id(void **state)
{
    struct meta_image *img = image_with_partition();
    struct meta_record r;
    const struct meta_partition *p;
    struct err_detail ed;

    (void)state;
    assert_string_equal(meta_image_broker(img, 1)->directory_id, "dir-a");
    assert_string_equal(meta_image_broker(img, 2)->directory_id, "");
    /* 2 and 3 leave the ISR for the ELR */
    r = r_change(IDS(1), IDS(2, 3), 1, 0, 1);
    r.u.change.topic_id = 6;
    apply_ok(img, &r);
    p = meta_image_partition(img, 6, 0);
    assert_int_equal(p->elr.n, 2);
    snapshot_round_trip(img);
    /* out of replica order: refused, image unchanged */
    r = r_change(IDS(1), IDS(3, 2), 1, 0, 2);
    r.u.change.topic_id = 6;
    assert_int_equal(meta_image_apply(img, &r, &ed), WEIR_ECORRUPT);
    assert_int_equal(meta_image_partition(img, 6, 0)->elr.ids[0], 2);
    /* the ISR may become empty, with the leader gone */
    r = r_change(NO_IDS, IDS(1, 2, 3), -1, 1, 2);
    r.u.change.topic_id = 6;
    apply_ok(img, &r);
    p = meta_image_partition(img, 6, 0);
    assert_int_equal(p->isr.n, 0);
    assert_int_equal(p->elr.n, 3);
    snapshot_round_trip(img);
    /* a version 0 change leaves no ELR */
    r = r_change(IDS(2), NO_IDS, 2, 2, 3);
    r.u.change.topic_id = 6;
    assert_int_equal(meta_record_version(&r), META_RECORD_VERSION);
    apply_ok(img, &r);
    assert_int_equal(meta_image_partition(img, 6, 0)->elr.n, 0);
    snapshot_round_trip(img);
    meta_image_free(img);
}

static void test_equality_sees_elr_and_directory_id(void **state)
{
    struct meta_image *a = image_with_partition();
    struct meta_image *b = image_with_partition();
    struct meta_record r = r_change(IDS(1), IDS(2), 1, 0, 1);
    struct meta_record r2 = r_change(IDS(1), IDS(3), 1, 0, 1);

    (void)state;
    assert_true(meta_image_equal(a, b));
    r.u.change.topic_id = r2.u.change.topic_id = 6;
    apply_ok(a, &r);
    apply_ok(b, &r2);
    assert_false(meta_image_equal(a, b));
    meta_image_free(a);
    meta_image_free(b);
    a = image_with_partition();
    b = image_with_partition();
    r = r_reg(2, meta_image_end_offset(a), STR("new"));
    r2 = r_reg(2, meta_image_end_offset(b), STR("old"));
    /* 2 leads nothing, so it may register again */
    apply_ok(a, &r);
    apply_ok(b, &r2);
    assert_false(meta_image_equal(a, b));
    snapshot_round_trip(a);
    meta_image_free(a);
    meta_image_free(b);
}

static void test_min_isr_as_brokers_read_it(void **state)
{
    struct meta_image *img = image_with_partition();
    const struct meta_topic *t = meta_image_topic(img, 6);
    static const struct {
        const char *value;
        uint32_t want;
    } cases[] = {{"2", 2}, {"3", 3},  {"0", 1},  {"-2", 1},
                 {"x", 1}, {"17", 1}, {"2x", 2}, {"16", 16}};
    struct meta_record r;
    size_t i;

    (void)state;
    assert_int_equal(meta_topic_min_isr(t), 1); /* unset */
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&r, 0, sizeof(r));
        r.type = META_RECORD_TOPIC_CONFIG;
        r.u.config.topic_id = 6;
        r.u.config.key = STR("min.insync.replicas");
        r.u.config.value.ptr = cases[i].value;
        r.u.config.value.len = strlen(cases[i].value);
        apply_ok(img, &r);
        t = meta_image_topic(img, 6);
        assert_int_equal(meta_topic_min_isr(t), cases[i].want);
    }
    meta_image_free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_change_with_elr_layout),
        cmocka_unit_test(test_version_0_records_still_decode),
        cmocka_unit_test(test_register_with_directory_id_layout),
        cmocka_unit_test(test_non_canonical_or_unknown_versions_are_corrupt),
        cmocka_unit_test(test_elr_and_directory_rules),
        cmocka_unit_test(test_image_keeps_elr_and_directory_id),
        cmocka_unit_test(test_equality_sees_elr_and_directory_id),
        cmocka_unit_test(test_min_isr_as_brokers_read_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
