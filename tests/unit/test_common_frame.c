/* SPDX-License-Identifier: Apache-2.0 */
/* Frame prefix codec: round trip, and every limit checked with the right
 * error code before anything would be allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/frame.h"

static const struct frame_limits frame_test_lim = {1000, 100};

static int frame_test_decode(uint32_t frame_len,
                             uint32_t header_len,
                             struct frame_info *fi,
                             struct err_detail *ed)
{
    uint8_t p[FRAME_PREFIX_BYTES];

    wire_put_u32be(p, frame_len);
    wire_put_u32be(p + 4, header_len);
    return frame_decode_prefix(p, &frame_test_lim, fi, ed);
}

static void test_frame_prefix_round_trip(void **state)
{
    static const uint8_t want[] = {0, 0, 0, 0x12, 0, 0, 0, 0x0a};
    uint8_t p[FRAME_PREFIX_BYTES];
    struct frame_info fi;
    struct err_detail ed;

    (void)state;
    frame_encode_prefix(p, 10, 4);
    assert_memory_equal(p, want, sizeof(want)); /* 4 + 10 + 4 = 18 */
    assert_int_equal(frame_decode_prefix(p, &frame_test_lim, &fi, &ed), 0);
    assert_int_equal(fi.frame_len, 18);
    assert_int_equal(fi.header_len, 10);
    assert_int_equal(fi.payload_len, 4);
}

static void test_frame_prefix_edges_accepted(void **state)
{
    struct frame_info fi;
    struct err_detail ed;

    (void)state;
    /* empty header and payload */
    assert_int_equal(frame_test_decode(4, 0, &fi, &ed), 0);
    assert_int_equal(fi.payload_len, 0);
    /* exactly at both limits */
    assert_int_equal(frame_test_decode(1000, 100, &fi, &ed), 0);
    assert_int_equal(fi.payload_len, 896);
    /* header fills the frame */
    assert_int_equal(frame_test_decode(104, 100, &fi, &ed), 0);
    assert_int_equal(fi.payload_len, 0);
}

static void test_frame_len_over_limit_rejected(void **state)
{
    struct frame_info fi;
    struct err_detail ed;

    (void)state;
    assert_int_equal(frame_test_decode(1001, 0, &fi, &ed),
                     WEIR_EFRAME_TOO_LARGE);
    assert_int_equal(ed.code, WEIR_EFRAME_TOO_LARGE);
    assert_non_null(strstr(ed.msg, "1001"));
    assert_int_equal(frame_test_decode(UINT32_MAX, 0, &fi, &ed),
                     WEIR_EFRAME_TOO_LARGE);
}

static void test_header_over_limit_rejected(void **state)
{
    struct frame_info fi;
    struct err_detail ed;

    (void)state;
    assert_int_equal(frame_test_decode(500, 101, &fi, &ed),
                     WEIR_EFRAME_TOO_LARGE);
    assert_non_null(strstr(ed.msg, "header"));
}

static void test_header_longer_than_frame_rejected(void **state)
{
    struct frame_info fi;
    struct err_detail ed;

    (void)state;
    assert_int_equal(frame_test_decode(50, 47, &fi, &ed), WEIR_EMALFORMED);
    assert_int_equal(frame_test_decode(4, 1, &fi, &ed), WEIR_EMALFORMED);
    assert_int_equal(frame_test_decode(10, UINT32_MAX, &fi, &ed),
                     WEIR_EMALFORMED);
}

static void test_frame_shorter_than_header_field_rejected(void **state)
{
    struct frame_info fi;
    struct err_detail ed;
    uint32_t len;

    (void)state;
    for (len = 0; len < 4; len++) {
        assert_int_equal(frame_test_decode(len, 0, &fi, &ed), WEIR_EMALFORMED);
    }
}

static void test_default_limits(void **state)
{
    const struct frame_limits lim = {FRAME_DEFAULT_MAX_BYTES,
                                     FRAME_DEFAULT_MAX_HEADER_BYTES};
    uint8_t p[FRAME_PREFIX_BYTES];
    struct frame_info fi;

    (void)state;
    frame_encode_prefix(p, 100, FRAME_DEFAULT_MAX_BYTES - 104);
    assert_int_equal(frame_decode_prefix(p, &lim, &fi, NULL), 0);
    frame_encode_prefix(p, 100, FRAME_DEFAULT_MAX_BYTES - 103);
    assert_int_equal(frame_decode_prefix(p, &lim, &fi, NULL),
                     WEIR_EFRAME_TOO_LARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_prefix_round_trip),
        cmocka_unit_test(test_frame_prefix_edges_accepted),
        cmocka_unit_test(test_frame_len_over_limit_rejected),
        cmocka_unit_test(test_header_over_limit_rejected),
        cmocka_unit_test(test_header_longer_than_frame_rejected),
        cmocka_unit_test(test_frame_shorter_than_header_field_rejected),
        cmocka_unit_test(test_default_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
