/* SPDX-License-Identifier: Apache-2.0 */
/* Latency histogram: bucket layout and percentiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/cli/hist.h"

static void test_small_values_are_exact(void **state)
{
    struct hist *h = malloc(sizeof(*h));
    uint64_t v;

    (void)state;
    hist_init(h);
    for (v = 0; v < 100; v++) {
        hist_record(h, v);
    }
    assert_int_equal(hist_percentile(h, 50.0), 49);
    assert_int_equal(hist_percentile(h, 99.0), 98);
    assert_int_equal(hist_percentile(h, 100.0), 99);
    assert_int_equal(hist_percentile(h, 0.0), 0);
    assert_int_equal(h->min, 0);
    assert_int_equal(h->max, 99);
    free(h);
}

static void test_buckets_tile_the_range(void **state)
{
    uint32_t i;

    (void)state;
    assert_int_equal(hist_bucket_low(0), 0);
    for (i = 0; i + 1 < HIST_BUCKETS; i++) {
        assert_true(hist_bucket_high(i) >= hist_bucket_low(i));
        assert_int_equal(hist_bucket_high(i) + 1, hist_bucket_low(i + 1));
        assert_int_equal(hist_index(hist_bucket_low(i)), i);
        assert_int_equal(hist_index(hist_bucket_high(i)), i);
    }
    assert_int_equal(hist_bucket_high(HIST_BUCKETS - 1), UINT64_MAX);
    assert_int_equal(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
}

static void test_relative_error_is_below_one_percent(void **state)
{
    uint64_t v;

    (void)state;
    for (v = 1; v < (1ull << 40); v = v * 3 + 1) {
        uint32_t i = hist_index(v);
        uint64_t width = hist_bucket_high(i) - hist_bucket_low(i);
        assert_true(v >= hist_bucket_low(i) && v <= hist_bucket_high(i));
        assert_true((double)width / (double)v < 0.008);
    }
}

static void test_uniform_percentiles(void **state)
{
    struct hist *h = malloc(sizeof(*h));
    uint64_t v;

    (void)state;
    hist_init(h);
    for (v = 1; v <= 100000; v++) {
        hist_record(h, v);
    }
    assert_in_range(hist_percentile(h, 50.0), 49600, 50400);
    assert_in_range(hist_percentile(h, 99.0), 98200, 99800);
    assert_in_range(hist_percentile(h, 99.9), 99100, 100000);
    assert_int_equal(hist_percentile(h, 100.0), 100000);
    assert_int_equal(h->max, 100000);
    assert_true(hist_mean(h) > 50000.0 && hist_mean(h) < 50001.0);
    free(h);
}

static void test_outlier_shows_in_max_not_p99(void **state)
{
    struct hist *h = malloc(sizeof(*h));
    int i;

    (void)state;
    hist_init(h);
    for (i = 0; i < 999; i++) {
        hist_record(h, 1000);
    }
    hist_record(h, 5000000);
    assert_in_range(hist_percentile(h, 99.0), 1000, 1008);
    assert_in_range(hist_percentile(h, 99.9), 1000, 1008);
    assert_int_equal(hist_percentile(h, 99.99), 5000000);
    assert_int_equal(h->max, 5000000);
    free(h);
}

static void test_empty_histogram(void **state)
{
    struct hist *h = malloc(sizeof(*h));

    (void)state;
    hist_init(h);
    assert_int_equal(hist_percentile(h, 50.0), 0);
    assert_true(hist_mean(h) == 0.0);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_values_are_exact),
        cmocka_unit_test(test_buckets_tile_the_range),
        cmocka_unit_test(test_relative_error_is_below_one_percent),
        cmocka_unit_test(test_uniform_percentiles),
        cmocka_unit_test(test_outlier_shows_in_max_not_p99),
        cmocka_unit_test(test_empty_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
