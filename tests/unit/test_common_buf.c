/* SPDX-License-Identifier: Apache-2.0 */
/* Byte buffer, big-endian helpers, read cursor and Kafka zigzag varints:
 * known encodings, boundary round trips, and rejection of truncated or
 * over-long input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/mem.h"

static void test_buf_appends_big_endian(void **state)
{
    static const uint8_t want[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                                   0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                                   0x0d, 0x0e, 0x0f, 'x',  'y'};
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    buf_put_u8(&b, 0x01);
    buf_put_u16be(&b, 0x0203);
    buf_put_u32be(&b, 0x04050607);
    buf_put_u64be(&b, 0x08090a0b0c0d0e0full);
    buf_put(&b, "xy", 2);
    buf_put(&b, NULL, 0);
    assert_true(buf_ok(&b));
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    assert_int_equal(wire_get_u16be(want + 1), 0x0203);
    assert_int_equal(wire_get_u32be(want + 3), 0x04050607);
    assert_true(wire_get_u64be(want + 7) == 0x08090a0b0c0d0e0full);
    buf_fini(&b);
}

static void test_buf_grows_past_many_doublings(void **state)
{
    struct weir_buf b;
    uint32_t i;

    (void)state;
    buf_init(&b);
    for (i = 0; i < 100000; i++) {
        buf_put_u32be(&b, i);
    }
    assert_true(buf_ok(&b));
    assert_int_equal(b.len, 400000);
    assert_true(b.cap >= b.len);
    assert_int_equal(wire_get_u32be(b.data + 4 * 77777), 77777);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_true(b.cap >= 400000);
    buf_fini(&b);
    assert_null(b.data);
}

static void test_buf_skip_reserves_zeroes(void **state)
{
    struct weir_buf b;
    size_t at;

    (void)state;
    buf_init(&b);
    buf_put_u8(&b, 0xff);
    at = buf_skip(&b, 4);
    assert_int_equal(at, 1);
    assert_int_equal(b.len, 5);
    assert_int_equal(wire_get_u32be(b.data + at), 0);
    buf_fini(&b);
    /* zero bytes on a buffer that has never allocated */
    assert_int_equal(buf_skip(&b, 0), 0);
    assert_int_equal(b.len, 0);
    buf_fini(&b);
}

static void test_buf_oom_is_sticky_until_reset(void **state)
{
    struct weir_buf b;
    uint8_t *p;
    size_t len;

    (void)state;
    buf_init(&b);
    mem_fault_set(1, 0);
    buf_put_u32be(&b, 1);
    assert_int_equal(mem_fault_count(), 1);
    mem_fault_set(0, 0);
    assert_false(buf_ok(&b));
    buf_put_u32be(&b, 2); /* no-op while oom */
    assert_int_equal(b.len, 0);
    assert_int_equal(buf_skip(&b, 1), SIZE_MAX);
    assert_int_equal(buf_reserve(&b, 1), WEIR_ENOMEM);
    buf_reset(&b);
    assert_true(buf_ok(&b));
    buf_put_u32be(&b, 3);
    assert_true(buf_ok(&b));
    assert_int_equal(buf_reserve(&b, SIZE_MAX), WEIR_ENOMEM);
    assert_false(buf_ok(&b));
    buf_reset(&b);
    p = buf_take(&b, &len);
    assert_int_equal(len, 0);
    assert_null(b.data);
    mem_free(p);
}

static void test_cursor_reads_are_bounds_checked(void **state)
{
    static const uint8_t in[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};
    struct weir_cursor c;
    struct weir_slice s;
    uint64_t u64;
    uint32_t u32;
    uint16_t u16;
    uint8_t u8;

    (void)state;
    cur_init(&c, in, sizeof(in));
    assert_false(cur_u64be(&c, &u64)); /* 7 bytes only */
    assert_int_equal(c.pos, 0);
    assert_true(cur_u8(&c, &u8));
    assert_int_equal(u8, 0x01);
    assert_true(cur_u16be(&c, &u16));
    assert_int_equal(u16, 0x0203);
    assert_true(cur_u32be(&c, &u32));
    assert_int_equal(u32, 0x04050607);
    assert_int_equal(cur_remaining(&c), 0);
    assert_false(cur_u8(&c, &u8));
    assert_false(cur_u16be(&c, &u16));
    assert_false(cur_u32be(&c, &u32));
    assert_false(cur_skip(&c, 1));
    assert_true(cur_skip(&c, 0));
    assert_true(cur_bytes(&c, 0, &s));
    assert_int_equal(s.len, 0);

    cur_init(&c, in, sizeof(in));
    assert_false(cur_bytes(&c, 8, &s));
    assert_false(cur_skip(&c, SIZE_MAX));
    assert_true(cur_bytes(&c, 3, &s));
    assert_ptr_equal(s.p, in);
    assert_int_equal(s.len, 3);
    assert_int_equal(cur_remaining(&c), 4);
}

/* zigzag(v) encodings from the Kafka protocol guide and protobuf sint */
struct varint_case {
    int64_t v;
    size_t n;
    uint8_t bytes[10];
};

static const struct varint_case varint_known[] = {
    {0, 1, {0x00}},
    {-1, 1, {0x01}},
    {1, 1, {0x02}},
    {-2, 1, {0x03}},
    {63, 1, {0x7e}},
    {-64, 1, {0x7f}},
    {64, 2, {0x80, 0x01}},
    {-65, 2, {0x81, 0x01}},
    {8191, 2, {0xfe, 0x7f}},
    {8192, 3, {0x80, 0x80, 0x01}},
    {INT32_MAX, 5, {0xfe, 0xff, 0xff, 0xff, 0x0f}},
    {INT32_MIN, 5, {0xff, 0xff, 0xff, 0xff, 0x0f}},
    {INT64_MAX,
     10,
     {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
    {INT64_MIN,
     10,
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
};

static void test_varint_known_encodings(void **state)
{
    uint8_t out[10];
    size_t i;
    size_t n;

    (void)state;
    for (i = 0; i < sizeof(varint_known) / sizeof(varint_known[0]); i++) {
        const struct varint_case *k = &varint_known[i];
        struct weir_cursor c;
        int64_t got;

        n = varint_encode(k->v, out);
        assert_int_equal(n, k->n);
        assert_int_equal(varint_size(k->v), k->n);
        assert_memory_equal(out, k->bytes, n);
        cur_init(&c, k->bytes, k->n);
        assert_true(cur_varlong(&c, &got));
        assert_true(got == k->v);
        assert_int_equal(cur_remaining(&c), 0);
    }
}

static void test_varint_round_trips_at_boundaries(void **state)
{
    static const int32_t v32[] = {
        0,   -1,  1,         63,        -64,           64,           -65,
        127, 128, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1};
    struct weir_buf b;
    struct weir_cursor c;
    int32_t got;
    size_t i;

    (void)state;
    buf_init(&b);
    for (i = 0; i < sizeof(v32) / sizeof(v32[0]); i++) {
        buf_put_varint(&b, v32[i]);
    }
    assert_true(buf_ok(&b));
    cur_init(&c, b.data, b.len);
    for (i = 0; i < sizeof(v32) / sizeof(v32[0]); i++) {
        assert_true(cur_varint(&c, &got));
        assert_int_equal(got, v32[i]);
    }
    assert_int_equal(cur_remaining(&c), 0);
    buf_fini(&b);
}

static void test_varlong_round_trips_at_boundaries(void **state)
{
    static const int64_t v64[] = {0,
                                  -1,
                                  1,
                                  INT32_MAX,
                                  INT32_MIN,
                                  INT64_MAX,
                                  INT64_MIN,
                                  INT64_MAX - 1,
                                  INT64_MIN + 1,
                                  (int64_t)1 << 62,
                                  -((int64_t)1 << 62)};
    struct weir_buf b;
    struct weir_cursor c;
    int64_t got;
    size_t i;

    (void)state;
    buf_init(&b);
    for (i = 0; i < sizeof(v64) / sizeof(v64[0]); i++) {
        buf_put_varlong(&b, v64[i]);
    }
    assert_true(buf_ok(&b));
    cur_init(&c, b.data, b.len);
    for (i = 0; i < sizeof(v64) / sizeof(v64[0]); i++) {
        assert_true(cur_varlong(&c, &got));
        assert_true(got == v64[i]);
    }
    assert_int_equal(cur_remaining(&c), 0);
    buf_fini(&b);
}

static void test_varint_every_shift_round_trips(void **state)
{
    struct weir_cursor c;
    uint8_t out[10];
    int64_t got;
    int shift;
    int sign;

    (void)state;
    for (shift = 0; shift < 63; shift++) {
        for (sign = -1; sign <= 1; sign += 2) {
            int64_t v = sign * ((int64_t)1 << shift);
            int64_t around[3] = {v - sign, v, v + sign};
            int k;
            for (k = 0; k < 3; k++) {
                size_t n = varint_encode(around[k], out);
                cur_init(&c, out, n);
                assert_true(cur_varlong(&c, &got));
                assert_true(got == around[k]);
            }
        }
    }
}

static void test_varint_rejects_truncation(void **state)
{
    static const uint8_t cont[] = {0x80, 0x80, 0x80, 0x80, 0x80,
                                   0x80, 0x80, 0x80, 0x80};
    struct weir_cursor c;
    int32_t v32;
    int64_t v64;
    size_t n;

    (void)state;
    cur_init(&c, cont, 0);
    assert_false(cur_varint(&c, &v32));
    assert_false(cur_varlong(&c, &v64));
    for (n = 1; n <= 4; n++) {
        cur_init(&c, cont, n);
        assert_false(cur_varint(&c, &v32));
    }
    for (n = 1; n <= sizeof(cont); n++) {
        cur_init(&c, cont, n);
        assert_false(cur_varlong(&c, &v64));
    }
}

static void test_varint_rejects_over_long(void **state)
{
    /* six bytes for a 32-bit varint, even if the value would fit */
    static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    /* five bytes whose value exceeds 32 bits */
    static const uint8_t big5[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    /* eleven bytes for a varlong */
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x00};
    /* ten bytes whose last byte carries more than the 64th bit */
    static const uint8_t tenth2[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x02};
    static const uint8_t tenth7f[] = {0x80, 0x80, 0x80, 0x80, 0x80,
                                      0x80, 0x80, 0x80, 0x80, 0x7f};
    /* a redundant but legal 5-byte encoding of 0 is accepted */
    static const uint8_t zero5[] = {0x80, 0x80, 0x80, 0x80, 0x00};
    struct weir_cursor c;
    int32_t v32;
    int64_t v64;

    (void)state;
    cur_init(&c, six, sizeof(six));
    assert_false(cur_varint(&c, &v32));
    cur_init(&c, big5, sizeof(big5));
    assert_false(cur_varint(&c, &v32));
    cur_init(&c, eleven, sizeof(eleven));
    assert_false(cur_varlong(&c, &v64));
    cur_init(&c, tenth2, sizeof(tenth2));
    assert_false(cur_varlong(&c, &v64));
    cur_init(&c, tenth7f, sizeof(tenth7f));
    assert_false(cur_varlong(&c, &v64));
    cur_init(&c, zero5, sizeof(zero5));
    assert_true(cur_varint(&c, &v32));
    assert_int_equal(v32, 0);
    /* a 6-byte varlong is fine: it is a varint that is over-long */
    cur_init(&c, six, sizeof(six));
    assert_true(cur_varlong(&c, &v64));
    assert_true(v64 == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_appends_big_endian),
        cmocka_unit_test(test_buf_grows_past_many_doublings),
        cmocka_unit_test(test_buf_skip_reserves_zeroes),
        cmocka_unit_test(test_buf_oom_is_sticky_until_reset),
        cmocka_unit_test(test_cursor_reads_are_bounds_checked),
        cmocka_unit_test(test_varint_known_encodings),
        cmocka_unit_test(test_varint_round_trips_at_boundaries),
        cmocka_unit_test(test_varlong_round_trips_at_boundaries),
        cmocka_unit_test(test_varint_every_shift_round_trips),
        cmocka_unit_test(test_varint_rejects_truncation),
        cmocka_unit_test(test_varint_rejects_over_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
