/* SPDX-License-Identifier: Apache-2.0 */
/* Record batch codec, the good paths: builder -> validate -> iterate round
 * trips, a known-answer batch derived by hand from the Kafka RecordBatch v2
 * spec, base offset patching, and walks over concatenated batches.
 * Malformed input lives in test_common_batch_bad.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/batch.h"
#include "common/crc32c.h"
#include "common/mem.h"

#define BT_MAX (1u << 20)

/* Two records, derived by hand from
 * https://kafka.apache.org/documentation/#recordbatch:
 *   r0: ts 1000, key "k", value "v", no headers
 *   r1: ts 1005, null key, value "xy", one header h=1
 * Base offset 0 and leader epoch -1 (the builder's), no producer id. */
static const uint8_t bt_known[] = {
    /*  0 base_offset    */ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /*  8 batch_length 71 */ 0x00, 0x00, 0x00, 0x47,
    /* 12 leader_epoch -1 */ 0xff, 0xff, 0xff, 0xff,
    /* 16 magic           */ 0x02,
    /* 17 crc             */ 0xcc, 0x47, 0xbc, 0x67,
    /* 21 attributes      */ 0x00, 0x00,
    /* 23 last_offset_delta */ 0x00, 0x00, 0x00, 0x01,
    /* 27 base_timestamp  */ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,
    /* 35 max_timestamp   */ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xed,
    /* 43 producer_id -1  */ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    /* 51 producer_epoch  */ 0xff, 0xff,
    /* 53 base_sequence   */ 0xff, 0xff, 0xff, 0xff,
    /* 57 record_count 2  */ 0x00, 0x00, 0x00, 0x02,
    /* 61 r0: length 8, attrs, ts delta 0, offset delta 0, key len 1 "k",
     *    value len 1 "v", 0 headers */
    0x10, 0x00, 0x00, 0x00, 0x02, 'k', 0x02, 'v', 0x00,
    /* 70 r1: length 12, attrs, ts delta 5 (zigzag 0x0a), offset delta 1,
     *    key len -1, value len 2 "xy", 1 header: key len 1 "h",
     *    value len 1 "1" */
    0x18, 0x00, 0x0a, 0x02, 0x01, 0x04, 'x', 'y', 0x02, 0x02, 'h', 0x02, '1'};

static void bt_build_known(struct batch_builder *bb, struct weir_slice *out)
{
    const struct batch_kv hdr = {"h", 1, "1", 1};

    batch_builder_init(bb);
    assert_int_equal(batch_builder_add(bb, 1000, "k", 1, "v", 1, NULL, 0), 0);
    assert_int_equal(batch_builder_add(bb, 1005, NULL, 0, "xy", 2, &hdr, 1), 0);
    assert_int_equal(batch_builder_finish(bb, out), 0);
}

static void test_builder_matches_hand_derived_bytes(void **state)
{
    struct batch_builder bb;
    struct weir_slice out;
    struct batch_header h;

    (void)state;
    bt_build_known(&bb, &out);
    assert_int_equal(out.len, sizeof(bt_known));
    assert_memory_equal(out.p, bt_known, sizeof(bt_known));
    /* the CRC covers bytes 21..end, and nothing before */
    assert_int_equal(crc32c(bt_known + 21, sizeof(bt_known) - 21),
                     wire_get_u32be(bt_known + BATCH_OFF_CRC));
    assert_int_equal(batch_validate(out, BT_MAX, &h, NULL), 0);
    assert_int_equal(h.batch_length, 71);
    assert_int_equal(h.record_count, 2);
    assert_int_equal(h.last_offset_delta, 1);
    assert_int_equal(h.base_timestamp, 1000);
    assert_int_equal(h.max_timestamp, 1005);
    assert_int_equal(h.crc, 0xcc47bc67u);
    assert_int_equal(batch_size(&h), sizeof(bt_known));
    assert_int_equal(batch_last_offset(&h), 1);
    batch_builder_fini(&bb);
}

static void test_known_batch_decodes(void **state)
{
    struct weir_slice b = {bt_known, sizeof(bt_known)};
    struct batch_iter it;
    struct batch_record rec;
    struct weir_cursor hc;
    struct weir_slice hk;
    struct weir_slice hv;
    bool hv_null;
    int32_t left;

    (void)state;
    assert_int_equal(batch_iter_init(&it, b, NULL), 0);
    assert_int_equal(batch_iter_next(&it, &rec), 1);
    assert_int_equal(rec.offset, 0);
    assert_int_equal(rec.timestamp, 1000);
    assert_false(rec.key_null);
    assert_int_equal(rec.key.len, 1);
    assert_memory_equal(rec.key.p, "k", 1);
    assert_false(rec.value_null);
    assert_memory_equal(rec.value.p, "v", 1);
    assert_int_equal(rec.header_count, 0);
    assert_int_equal(batch_iter_next(&it, &rec), 1);
    assert_int_equal(rec.offset, 1);
    assert_int_equal(rec.timestamp, 1005);
    assert_true(rec.key_null);
    assert_int_equal(rec.value.len, 2);
    assert_int_equal(rec.header_count, 1);
    cur_init(&hc, rec.headers.p, rec.headers.len);
    left = rec.header_count;
    assert_int_equal(batch_header_next(&hc, &left, &hk, &hv, &hv_null), 1);
    assert_memory_equal(hk.p, "h", 1);
    assert_memory_equal(hv.p, "1", 1);
    assert_false(hv_null);
    assert_int_equal(batch_header_next(&hc, &left, &hk, &hv, &hv_null), 0);
    assert_int_equal(batch_iter_next(&it, &rec), 0);
    assert_int_equal(batch_iter_next(&it, &rec), 0);
}

struct bt_rec {
    int64_t ts;
    const char *key; /* NULL = null key */
    const char *value;
    uint32_t n_headers;
    struct batch_kv headers[3];
};

static const struct bt_rec bt_recs[] = {
    {1000, "user-1", "hello", 0, {{0}}},
    {999, NULL, "null key, earlier timestamp", 0, {{0}}},
    {1500, "tombstone", NULL, 1, {{"trace", 5, "abc", 3}}},
    {1200,
     "",
     "",
     3,
     {{"a", 1, NULL, -1}, {"", 0, "empty key", 9}, {"c", 1, "", 0}}},
};

#define BT_N_RECS (sizeof(bt_recs) / sizeof(bt_recs[0]))

static void bt_check_headers(const struct batch_record *rec,
                             const struct bt_rec *want)
{
    struct weir_cursor c;
    struct weir_slice k;
    struct weir_slice v;
    bool vnull;
    int32_t left = rec->header_count;
    uint32_t i;

    assert_int_equal(rec->header_count, want->n_headers);
    cur_init(&c, rec->headers.p, rec->headers.len);
    for (i = 0; i < want->n_headers; i++) {
        const struct batch_kv *w = &want->headers[i];
        assert_int_equal(batch_header_next(&c, &left, &k, &v, &vnull), 1);
        assert_int_equal(k.len, (size_t)w->key_len);
        assert_memory_equal(k.p, w->key, k.len);
        assert_int_equal(vnull, w->value == NULL);
        if (w->value != NULL) {
            assert_int_equal(v.len, (size_t)w->value_len);
            assert_memory_equal(v.p, w->value, v.len);
        }
    }
    assert_int_equal(batch_header_next(&c, &left, &k, &v, &vnull), 0);
    assert_int_equal(cur_remaining(&c), 0);
}

static void bt_check_records(struct weir_slice b, int64_t base)
{
    struct batch_iter it;
    struct batch_record rec;
    size_t i;

    assert_int_equal(batch_iter_init(&it, b, NULL), 0);
    for (i = 0; i < BT_N_RECS; i++) {
        const struct bt_rec *w = &bt_recs[i];
        assert_int_equal(batch_iter_next(&it, &rec), 1);
        assert_int_equal(rec.offset, base + (int64_t)i);
        assert_true(rec.timestamp == w->ts);
        assert_int_equal(rec.key_null, w->key == NULL);
        if (w->key != NULL) {
            assert_int_equal(rec.key.len, strlen(w->key));
            assert_memory_equal(rec.key.p, w->key, rec.key.len);
        }
        assert_int_equal(rec.value_null, w->value == NULL);
        if (w->value != NULL) {
            assert_int_equal(rec.value.len, strlen(w->value));
            assert_memory_equal(rec.value.p, w->value, rec.value.len);
        }
        bt_check_headers(&rec, w);
    }
    assert_int_equal(batch_iter_next(&it, &rec), 0);
    assert_int_equal(cur_remaining(&it.cur), 0);
}

static void bt_build_recs(struct batch_builder *bb, struct weir_slice *out)
{
    size_t i;

    for (i = 0; i < BT_N_RECS; i++) {
        const struct bt_rec *r = &bt_recs[i];
        assert_int_equal(
            batch_builder_add(
                bb, r->ts, r->key, r->key != NULL ? (int32_t)strlen(r->key) : 0,
                r->value, r->value != NULL ? (int32_t)strlen(r->value) : 0,
                r->n_headers > 0 ? r->headers : NULL, r->n_headers),
            0);
    }
    assert_int_equal(batch_builder_finish(bb, out), 0);
}

static void test_builder_validate_iterate_round_trip(void **state)
{
    struct batch_builder bb;
    struct weir_slice out;
    struct batch_header h;

    (void)state;
    batch_builder_init(&bb);
    bb.producer_id = 77;
    bb.producer_epoch = 3;
    bb.base_sequence = 10;
    bt_build_recs(&bb, &out);
    assert_int_equal(batch_builder_size(&bb), out.len);
    assert_int_equal(batch_validate(out, BT_MAX, &h, NULL), 0);
    assert_int_equal(h.record_count, BT_N_RECS);
    assert_int_equal(h.last_offset_delta, BT_N_RECS - 1);
    assert_int_equal(h.base_timestamp, 1000);
    assert_int_equal(h.max_timestamp, 1500);
    assert_int_equal(h.producer_id, 77);
    assert_int_equal(h.producer_epoch, 3);
    assert_int_equal(h.base_sequence, 10);
    assert_int_equal(h.attributes, 0);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.leader_epoch, -1);
    bt_check_records(out, 0);

    /* reset and reuse gives the same bytes */
    {
        uint8_t first[512];
        size_t first_len = out.len;
        assert_true(first_len <= sizeof(first));
        memcpy(first, out.p, first_len);
        batch_builder_reset(&bb);
        assert_int_equal(batch_builder_size(&bb), BATCH_HEADER_BYTES);
        bt_build_recs(&bb, &out);
        assert_int_equal(out.len, first_len);
        assert_memory_equal(out.p, first, first_len);
    }
    batch_builder_fini(&bb);
}

static void test_empty_builder_cannot_finish(void **state)
{
    struct batch_builder bb;
    struct weir_slice out;

    (void)state;
    batch_builder_init(&bb);
    assert_int_equal(batch_builder_size(&bb), BATCH_HEADER_BYTES);
    assert_int_equal(batch_builder_finish(&bb, &out), WEIR_EINVALID_ARGUMENT);
    batch_builder_fini(&bb);
}

static void test_large_value_and_many_records(void **state)
{
    static uint8_t big[200000];
    struct batch_builder bb;
    struct weir_slice out;
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    int32_t i;

    (void)state;
    memset(big, 0x5a, sizeof(big));
    batch_builder_init(&bb);
    assert_int_equal(
        batch_builder_add(&bb, 5, "big", 3, big, (int32_t)sizeof(big), NULL, 0),
        0);
    for (i = 1; i < 1000; i++) {
        assert_int_equal(
            batch_builder_add(&bb, 5 + i, &i, sizeof(i), NULL, 0, NULL, 0), 0);
    }
    assert_int_equal(batch_builder_finish(&bb, &out), 0);
    assert_int_equal(batch_validate(out, BT_MAX, &h, NULL), 0);
    assert_int_equal(h.record_count, 1000);
    assert_int_equal(h.max_timestamp, 5 + 999);
    assert_int_equal(batch_iter_init(&it, out, NULL), 0);
    assert_int_equal(batch_iter_next(&it, &rec), 1);
    assert_int_equal(rec.value.len, sizeof(big));
    for (i = 1; i < 1000; i++) {
        assert_int_equal(batch_iter_next(&it, &rec), 1);
        assert_int_equal(rec.offset, i);
        assert_memory_equal(rec.key.p, &i, sizeof(i));
        assert_true(rec.value_null);
    }
    /* the same batch is too large for a smaller limit */
    assert_int_equal(batch_validate(out, (uint32_t)out.len - 1, &h, NULL),
                     WEIR_EMESSAGE_TOO_LARGE);
    batch_builder_fini(&bb);
}

static void test_extreme_timestamps_round_trip(void **state)
{
    static const int64_t ts[] = {INT64_MAX, -1, INT64_MIN, 0, INT64_MAX};
    struct batch_builder bb;
    struct weir_slice out;
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    size_t i;

    (void)state;
    batch_builder_init(&bb);
    for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        assert_int_equal(batch_builder_add(&bb, ts[i], "k", 1, "v", 1, NULL, 0),
                         0);
    }
    assert_int_equal(batch_builder_finish(&bb, &out), 0);
    assert_int_equal(batch_validate(out, BT_MAX, &h, NULL), 0);
    assert_true(h.base_timestamp == INT64_MAX);
    assert_true(h.max_timestamp == INT64_MAX);
    assert_int_equal(batch_iter_init(&it, out, NULL), 0);
    for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        assert_int_equal(batch_iter_next(&it, &rec), 1);
        assert_true(rec.timestamp == ts[i]);
    }
    batch_builder_fini(&bb);
}

static void test_set_base_keeps_crc_valid(void **state)
{
    uint8_t b[sizeof(bt_known)];
    struct weir_slice s = {b, sizeof(b)};
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;

    (void)state;
    memcpy(b, bt_known, sizeof(b));
    batch_set_base(b, 1234567890123ll, 42);
    assert_int_equal(wire_get_u64be(b + BATCH_OFF_BASE_OFFSET),
                     1234567890123ll);
    assert_int_equal(wire_get_u32be(b + BATCH_OFF_LEADER_EPOCH), 42);
    /* only the first 16 bytes changed; the CRC field did not */
    assert_memory_equal(b + 16, bt_known + 16, sizeof(b) - 16);
    assert_int_equal(batch_validate(s, BT_MAX, &h, NULL), 0);
    assert_true(h.base_offset == 1234567890123ll);
    assert_int_equal(h.leader_epoch, 42);
    assert_true(batch_last_offset(&h) == 1234567890124ll);
    assert_int_equal(batch_iter_init(&it, s, NULL), 0);
    assert_int_equal(batch_iter_next(&it, &rec), 1);
    assert_true(rec.offset == 1234567890123ll);
    assert_int_equal(batch_iter_next(&it, &rec), 1);
    assert_true(rec.offset == 1234567890124ll);
    /* largest base offset whose last offset still fits */
    batch_set_base(b, INT64_MAX - 1, 0);
    assert_int_equal(batch_validate(s, BT_MAX, &h, NULL), 0);
    assert_true(batch_last_offset(&h) == INT64_MAX);
}

/* Three copies of the known batch at offsets 0, 2, 4, then `tail` bytes of
 * a fourth. */
static size_t bt_concat(uint8_t *out, size_t tail)
{
    size_t n = 0;
    int i;

    for (i = 0; i < 4; i++) {
        size_t take = i < 3 ? sizeof(bt_known) : tail;
        memcpy(out + n, bt_known, take);
        if (take >= 16) {
            batch_set_base(out + n, 2 * i, 1);
        }
        n += take;
    }
    return n;
}

static void bt_walk_three(struct weir_slice all, size_t *pos, bool partial_ok)
{
    struct batch_header h;
    struct weir_slice whole;
    int i;

    for (i = 0; i < 3; i++) {
        assert_int_equal(
            batch_next(all, pos, BT_MAX, partial_ok, &h, &whole, NULL), 0);
        assert_int_equal(whole.len, sizeof(bt_known));
        assert_ptr_equal(whole.p, all.p + (size_t)i * sizeof(bt_known));
        assert_int_equal(h.base_offset, 2 * i);
        assert_int_equal(*pos, (size_t)(i + 1) * sizeof(bt_known));
    }
}

static void test_batch_next_walks_concatenation(void **state)
{
    uint8_t buf[4 * sizeof(bt_known)];
    struct weir_slice all = {buf, bt_concat(buf, 0)};
    struct batch_header h;
    struct weir_slice whole;
    size_t pos = 0;

    (void)state;
    bt_walk_three(all, &pos, false);
    assert_int_equal(batch_next(all, &pos, BT_MAX, false, &h, &whole, NULL), 0);
    assert_int_equal(whole.len, 0);
    assert_null(whole.p);
    assert_int_equal(pos, all.len);
    /* an empty buffer is a clean end */
    all.len = 0;
    pos = 0;
    assert_int_equal(batch_next(all, &pos, BT_MAX, false, &h, &whole, NULL), 0);
    assert_int_equal(whole.len, 0);
}

static void test_batch_next_partial_tail(void **state)
{
    static const size_t tails[] = {1, 11, 12, 60, 61, sizeof(bt_known) - 1};
    uint8_t buf[4 * sizeof(bt_known)];
    struct batch_header h;
    struct weir_slice whole;
    struct err_detail ed;
    size_t i;
    size_t pos;

    (void)state;
    for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        struct weir_slice all = {buf, bt_concat(buf, tails[i])};

        /* a fetch may cut the last batch: the walk ends cleanly */
        pos = 0;
        bt_walk_three(all, &pos, true);
        assert_int_equal(batch_next(all, &pos, BT_MAX, true, &h, &whole, &ed),
                         0);
        assert_int_equal(whole.len, 0);
        assert_int_equal(pos, all.len);

        /* on a produce path, the same tail is corrupt */
        pos = 0;
        bt_walk_three(all, &pos, false);
        assert_int_equal(batch_next(all, &pos, BT_MAX, false, &h, &whole, &ed),
                         WEIR_ECORRUPT_MESSAGE);
        assert_int_equal(whole.len, 0);
        assert_int_equal(pos, 3 * sizeof(bt_known));
    }
}

static void test_batch_next_stops_at_corrupt_batch(void **state)
{
    uint8_t buf[4 * sizeof(bt_known)];
    struct weir_slice all = {buf, bt_concat(buf, 0)};
    struct batch_header h;
    struct weir_slice whole;
    size_t pos = 0;

    (void)state;
    buf[sizeof(bt_known) + 65] ^= 0x01; /* second batch, inside r0 */
    assert_int_equal(batch_next(all, &pos, BT_MAX, true, &h, &whole, NULL), 0);
    assert_int_equal(batch_next(all, &pos, BT_MAX, true, &h, &whole, NULL),
                     WEIR_ECORRUPT_MESSAGE);
    assert_int_equal(pos, sizeof(bt_known));
}

static void test_batch_next_max_batch_bytes(void **state)
{
    uint8_t buf[4 * sizeof(bt_known)];
    struct weir_slice all = {buf, bt_concat(buf, 0)};
    struct batch_header h;
    struct weir_slice whole;
    struct err_detail ed;
    size_t pos = 0;

    (void)state;
    assert_int_equal(
        batch_next(all, &pos, sizeof(bt_known) - 1, false, &h, &whole, &ed),
        WEIR_EMESSAGE_TOO_LARGE);
    assert_int_equal(ed.code, WEIR_EMESSAGE_TOO_LARGE);
    assert_int_equal(pos, 0);
    /* exactly at the limit is fine */
    assert_int_equal(
        batch_next(all, &pos, sizeof(bt_known), false, &h, &whole, &ed), 0);
    /* a cut batch that would exceed the limit is not a harmless partial
     * tail: it is too large, whatever the caller allows */
    all.len = 3 * sizeof(bt_known) - 5;
    pos = 2 * sizeof(bt_known);
    assert_int_equal(
        batch_next(all, &pos, sizeof(bt_known) - 1, true, &h, &whole, &ed),
        WEIR_EMESSAGE_TOO_LARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_matches_hand_derived_bytes),
        cmocka_unit_test(test_known_batch_decodes),
        cmocka_unit_test(test_builder_validate_iterate_round_trip),
        cmocka_unit_test(test_empty_builder_cannot_finish),
        cmocka_unit_test(test_large_value_and_many_records),
        cmocka_unit_test(test_extreme_timestamps_round_trip),
        cmocka_unit_test(test_set_base_keeps_crc_valid),
        cmocka_unit_test(test_batch_next_walks_concatenation),
        cmocka_unit_test(test_batch_next_partial_tail),
        cmocka_unit_test(test_batch_next_stops_at_corrupt_batch),
        cmocka_unit_test(test_batch_next_max_batch_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
