/* SPDX-License-Identifier: Apache-2.0 */
/* Fetch-response parsing: skip records below the position, tolerate a
 * partial trailing batch, skip control batches, reject corruption. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/recset.h"
#include "common/crc32c.h"

/* Batches of 5 records each with offsets base..base+4, concatenated. */
static void build(struct weir_buf *all, int n_batches)
{
    struct batch_builder bb;
    struct weir_slice s;
    char v[16];
    int b;
    int i;

    buf_init(all);
    batch_builder_init(&bb);
    for (b = 0; b < n_batches; b++) {
        batch_builder_reset(&bb);
        for (i = 0; i < 5; i++) {
            int n = snprintf(v, sizeof(v), "v%d", b * 5 + i);
            assert_int_equal(batch_builder_add(&bb, 1000 + b * 5 + i, NULL, -1,
                                               v, n, NULL, 0),
                             0);
        }
        assert_int_equal(batch_builder_finish(&bb, &s), 0);
        buf_put(all, s.p, s.len);
        batch_set_base(all->data + all->len - s.len, b * 5, 0);
    }
    batch_builder_fini(&bb);
}

static int64_t drain(struct recset *rs, int64_t *first, int *count)
{
    struct batch_record rec;
    struct err_detail ed;
    int64_t last = -1;
    bool got;

    *count = 0;
    *first = -1;
    for (;;) {
        assert_int_equal(recset_next(rs, &rec, &got, &ed), 0);
        if (!got) {
            return last;
        }
        if (*first < 0) {
            *first = rec.offset;
        }
        assert_true(rec.offset > last);
        last = rec.offset;
        (*count)++;
    }
}

static void test_skips_records_below_position(void **state)
{
    struct weir_buf all;
    struct recset rs;
    int64_t first;
    int count;

    (void)state;
    build(&all, 3); /* offsets 0..14 */
    recset_init(&rs, buf_slice(&all), 7);
    assert_int_equal(drain(&rs, &first, &count), 14);
    assert_int_equal(first, 7);
    assert_int_equal(count, 8);
    buf_fini(&all);
}

static void test_whole_batches_below_position_are_skipped(void **state)
{
    struct weir_buf all;
    struct recset rs;
    int64_t first;
    int count;

    (void)state;
    build(&all, 3);
    recset_init(&rs, buf_slice(&all), 10);
    assert_int_equal(drain(&rs, &first, &count), 14);
    assert_int_equal(first, 10);
    assert_int_equal(count, 5);
    recset_init(&rs, buf_slice(&all), 15);
    assert_int_equal(drain(&rs, &first, &count), -1);
    assert_int_equal(count, 0);
    buf_fini(&all);
}

static void test_partial_trailing_batch_is_tolerated(void **state)
{
    struct recset_scan scan;
    struct err_detail ed;
    struct weir_buf all;
    struct weir_slice cut;
    struct recset rs;
    int64_t first;
    int count;
    size_t k;

    (void)state;
    build(&all, 3);
    /* cut anywhere inside the third batch, even inside its header */
    for (k = 1; k < all.len / 3; k += 7) {
        cut.p = all.data;
        cut.len = all.len - k;
        assert_int_equal(recset_scan(cut, 3, &scan, &ed), 0);
        assert_int_equal(scan.n_whole, 2);
        assert_int_equal(scan.next_offset, 10);
        assert_true(scan.partial_tail);
        recset_init(&rs, cut, 3);
        assert_int_equal(drain(&rs, &first, &count), 9);
        assert_int_equal(first, 3);
        assert_int_equal(count, 7);
    }
    buf_fini(&all);
}

static void test_only_a_partial_batch_yields_nothing(void **state)
{
    struct recset_scan scan;
    struct err_detail ed;
    struct weir_buf all;
    struct weir_slice cut;
    struct recset rs;
    int64_t first;
    int count;

    (void)state;
    build(&all, 1);
    cut.p = all.data;
    cut.len = all.len - 1;
    assert_int_equal(recset_scan(cut, 0, &scan, &ed), 0);
    assert_int_equal(scan.n_whole, 0);
    assert_int_equal(scan.next_offset, 0);
    assert_true(scan.partial_tail);
    recset_init(&rs, cut, 0);
    assert_int_equal(drain(&rs, &first, &count), -1);
    buf_fini(&all);
}

static void test_empty_payload_is_empty(void **state)
{
    struct recset_scan scan;
    struct err_detail ed;
    struct weir_slice none = {NULL, 0};

    (void)state;
    assert_int_equal(recset_scan(none, 42, &scan, &ed), 0);
    assert_int_equal(scan.n_whole, 0);
    assert_int_equal(scan.next_offset, 42);
    assert_false(scan.partial_tail);
}

static void test_corrupt_batch_is_an_error(void **state)
{
    struct recset_scan scan;
    struct batch_record rec;
    struct err_detail ed;
    struct weir_buf all;
    struct recset rs;
    bool got;

    (void)state;
    build(&all, 2);
    all.data[all.len - 3] ^= 0xff; /* a value byte of the last record */
    assert_int_equal(recset_scan(buf_slice(&all), 0, &scan, &ed),
                     WEIR_ECORRUPT_MESSAGE);
    recset_init(&rs, buf_slice(&all), 0);
    for (;;) {
        int rv = recset_next(&rs, &rec, &got, &ed);
        if (rv != 0) {
            assert_int_equal(rv, WEIR_ECORRUPT_MESSAGE);
            assert_false(got);
            break;
        }
        assert_true(got);
        assert_true(rec.offset < 5);
    }
    buf_fini(&all);
}

static void test_control_batches_are_skipped(void **state)
{
    struct weir_buf all;
    struct recset rs;
    int64_t first;
    int count;
    uint16_t attrs;

    (void)state;
    build(&all, 2);
    /* mark the first batch as a control batch; fix its CRC */
    attrs =
        wire_get_u16be(all.data + BATCH_OFF_ATTRIBUTES) | BATCH_ATTR_CONTROL;
    wire_put_u16be(all.data + BATCH_OFF_ATTRIBUTES, attrs);
    {
        struct batch_header h;
        struct err_detail ed;
        assert_int_equal(
            batch_header_decode(all.data, all.len, UINT32_MAX, &h, &ed), 0);
        wire_put_u32be(all.data + BATCH_OFF_CRC,
                       crc32c(all.data + BATCH_OFF_ATTRIBUTES,
                              batch_size(&h) - BATCH_OFF_ATTRIBUTES));
    }
    recset_init(&rs, buf_slice(&all), 0);
    assert_int_equal(drain(&rs, &first, &count), 9);
    assert_int_equal(first, 5);
    assert_int_equal(count, 5);
    buf_fini(&all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skips_records_below_position),
        cmocka_unit_test(test_whole_batches_below_position_are_skipped),
        cmocka_unit_test(test_partial_trailing_batch_is_tolerated),
        cmocka_unit_test(test_only_a_partial_batch_yields_nothing),
        cmocka_unit_test(test_empty_payload_is_empty),
        cmocka_unit_test(test_corrupt_batch_is_an_error),
        cmocka_unit_test(test_control_batches_are_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
