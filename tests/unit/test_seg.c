/* SPDX-License-Identifier: Apache-2.0 */
/* Segment index arrays and segment names: lookups, the sanity checks that
 * decide between trusting and rebuilding an index file, and encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/seg.h"
#include "broker/storage/seg_index.h"

static void index_fill(struct seg_index *ix)
{
    /* batches at rel 0 (pos 0), 10 (1000), 20 (2000), ... rel 90 (9000) */
    uint32_t i;

    assert_int_equal(seg_index_reserve(ix, 10), 0);
    for (i = 1; i < 10; i++) {
        seg_index_add_offset(ix, i * 10, i * 1000);
    }
    seg_index_add_time(ix, 100, 10);
    seg_index_add_time(ix, 200, 40);
    seg_index_add_time(ix, 300, 80);
}

static void test_lookup_finds_last_entry_at_or_below(void **state)
{
    struct seg_index ix;

    (void)state;
    seg_index_init(&ix);
    assert_int_equal(seg_index_lookup(&ix, 5), 0); /* empty: start */
    index_fill(&ix);
    assert_int_equal(seg_index_lookup(&ix, 0), 0);
    assert_int_equal(seg_index_lookup(&ix, 9), 0);
    assert_int_equal(seg_index_lookup(&ix, 10), 1000);
    assert_int_equal(seg_index_lookup(&ix, 19), 1000);
    assert_int_equal(seg_index_lookup(&ix, 55), 5000);
    assert_int_equal(seg_index_lookup(&ix, 90), 9000);
    assert_int_equal(seg_index_lookup(&ix, 1000000), 9000);
    seg_index_fini(&ix);
}

static void test_count_below_is_a_prefix_on_both_bounds(void **state)
{
    struct seg_index ix;

    (void)state;
    seg_index_init(&ix);
    index_fill(&ix);
    assert_int_equal(seg_index_count_below(&ix, 0, 1000), 0);
    assert_int_equal(seg_index_count_below(&ix, 1000, 1000), 1);
    assert_int_equal(seg_index_count_below(&ix, 4999, 1000), 4);
    assert_int_equal(seg_index_count_below(&ix, 100000, 1000), 9);
    /* the offset bound is exclusive */
    assert_int_equal(seg_index_count_below(&ix, 100000, 30), 2);
    assert_int_equal(seg_index_count_below(&ix, 100000, 31), 3);
    seg_index_fini(&ix);
}

static void test_time_lookup_uses_entries_strictly_below(void **state)
{
    struct seg_index ix;

    (void)state;
    seg_index_init(&ix);
    assert_int_equal(seg_index_time_lookup(&ix, 50), 0);
    assert_true(seg_index_last_ts(&ix) == SEG_NO_TIMESTAMP);
    index_fill(&ix);
    assert_int_equal(seg_index_time_lookup(&ix, 50), 0);
    assert_int_equal(seg_index_time_lookup(&ix, 100), 0); /* not < 100 */
    assert_int_equal(seg_index_time_lookup(&ix, 101), 10);
    assert_int_equal(seg_index_time_lookup(&ix, 250), 40);
    assert_int_equal(seg_index_time_lookup(&ix, 301), 80);
    assert_true(seg_index_last_ts(&ix) == 300);
    seg_index_fini(&ix);
}

static void test_truncate_drops_entries_and_written_counts(void **state)
{
    struct seg_index ix;

    (void)state;
    seg_index_init(&ix);
    index_fill(&ix);
    ix.off_written = ix.n_off;
    ix.time_written = ix.n_time;
    seg_index_truncate(&ix, 40, 4000);
    assert_int_equal(ix.n_off, 3); /* pos 1000, 2000, 3000 */
    assert_int_equal(ix.off_written, 3);
    assert_int_equal(ix.n_time, 1); /* rel 10 only */
    assert_int_equal(ix.time_written, 1);
    assert_int_equal(seg_index_check(&ix, 4000, 40, NULL), 0);
    seg_index_fini(&ix);
}

static void test_encode_decode_round_trip(void **state)
{
    struct seg_index ix;
    struct seg_index back;
    struct weir_buf o;
    struct weir_buf t;
    struct err_detail ed;
    uint32_t i;

    (void)state;
    seg_index_init(&ix);
    seg_index_init(&back);
    buf_init(&o);
    buf_init(&t);
    index_fill(&ix);
    seg_index_encode_offsets(&ix, 0, &o);
    seg_index_encode_times(&ix, 0, &t);
    assert_int_equal(o.len, 9 * SEG_INDEX_ENTRY_BYTES);
    assert_int_equal(t.len, 3 * SEG_TIME_ENTRY_BYTES);
    assert_int_equal(
        seg_index_decode(&back, buf_slice(&o), buf_slice(&t), 10000, 100, &ed),
        0);
    assert_int_equal(back.n_off, ix.n_off);
    assert_int_equal(back.off_written, ix.n_off);
    for (i = 0; i < ix.n_off; i++) {
        assert_int_equal(back.off[i].rel, ix.off[i].rel);
        assert_int_equal(back.off[i].pos, ix.off[i].pos);
    }
    assert_int_equal(back.n_time, 3);
    assert_true(back.time[2].ts == 300);
    assert_int_equal(back.time[2].rel, 80);
    buf_fini(&o);
    buf_fini(&t);
    seg_index_fini(&ix);
    seg_index_fini(&back);
}

static void test_decode_refuses_doubtful_files(void **state)
{
    struct seg_index ix;
    struct err_detail ed;
    uint8_t off[24];
    uint8_t tim[24];
    struct weir_slice so = {off, 16};
    struct weir_slice st = {tim, 0};

    (void)state;
    seg_index_init(&ix);
    /* sorted pair is fine */
    wire_put_u32be(off, 1);
    wire_put_u32be(off + 4, 100);
    wire_put_u32be(off + 8, 2);
    wire_put_u32be(off + 12, 200);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed), 0);
    /* partial entry */
    so.len = 15;
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed),
                     WEIR_ECORRUPT);
    assert_int_equal(ix.n_off, 0);
    so.len = 16;
    /* not increasing (a zero-filled tail looks like this) */
    wire_put_u32be(off + 8, 0);
    wire_put_u32be(off + 12, 0);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed),
                     WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, "does not follow"));
    /* position beyond the log */
    wire_put_u32be(off + 8, 2);
    wire_put_u32be(off + 12, 5000);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed),
                     WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, "outside the segment"));
    /* relative offset beyond the segment's offsets */
    wire_put_u32be(off + 8, 10);
    wire_put_u32be(off + 12, 200);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed),
                     WEIR_ECORRUPT);
    /* time entries must grow in both fields */
    so.len = 0;
    st.len = 24;
    wire_put_u64be(tim, 50);
    wire_put_u32be(tim + 8, 3);
    wire_put_u64be(tim + 12, 50);
    wire_put_u32be(tim + 20, 4);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed),
                     WEIR_ECORRUPT);
    wire_put_u64be(tim + 12, 60);
    assert_int_equal(seg_index_decode(&ix, so, st, 1000, 10, &ed), 0);
    seg_index_fini(&ix);
}

static void test_segment_names_are_twenty_digits(void **state)
{
    char path[STORAGE_PATH_MAX];
    int64_t base = -1;

    (void)state;
    assert_int_equal(seg_path("/d", 42, ".log", path, NULL), 0);
    assert_string_equal(path, "/d/00000000000000000042.log");
    assert_true(seg_parse_name("00000000000000000042.log", ".log", &base));
    assert_true(base == 42);
    assert_true(seg_parse_name("09223372036854775807.index", ".index", &base));
    assert_true(base == INT64_MAX);
    assert_false(seg_parse_name("9223372036854775808000.log", ".log", &base));
    assert_false(seg_parse_name("99999999999999999999.log", ".log", &base));
    assert_false(seg_parse_name("0000000000000000042.log", ".log", &base));
    assert_false(seg_parse_name("0000000000000000004x.log", ".log", &base));
    assert_false(seg_parse_name("00000000000000000042.log", ".index", &base));
    assert_false(seg_parse_name("00000000000000000042.logx", ".log", &base));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_finds_last_entry_at_or_below),
        cmocka_unit_test(test_count_below_is_a_prefix_on_both_bounds),
        cmocka_unit_test(test_time_lookup_uses_entries_strictly_below),
        cmocka_unit_test(test_truncate_drops_entries_and_written_counts),
        cmocka_unit_test(test_encode_decode_round_trip),
        cmocka_unit_test(test_decode_refuses_doubtful_files),
        cmocka_unit_test(test_segment_names_are_twenty_digits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
