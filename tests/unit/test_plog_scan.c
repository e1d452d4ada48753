/* SPDX-License-Identifier: Apache-2.0 */
/* Partition log header scan (plog_scan) and where a time-bounded scan
 * starts (plog_scan_start_for_time): every batch once, in order, from the
 * one holding the start offset, across segments, small and large batches,
 * after a reopen, and with read errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "common/batch.h"
#include "tests/lib/plog_fixture.h"

#define SEEN_MAX 2048

struct seen {
    struct batch_header h[SEEN_MAX];
    size_t n;
    size_t stop_after; /* 0 = never stop */
};

static int seen_cb(void *arg, const struct batch_header *h)
{
    struct seen *s = arg;

    assert_true(s->n < SEEN_MAX);
    s->h[s->n++] = *h;
    return s->stop_after != 0 && s->n == s->stop_after ? 99 : 0;
}

static int setup(void **state)
{
    static struct plog_fixture f;
    static struct seen s;

    plog_fixture_init(&f);
    memset(&s, 0, sizeof(s));
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    return 0;
}

static struct seen *seen_reset(void)
{
    static struct seen s;

    memset(&s, 0, sizeof(s));
    return &s;
}

/* n batches of 1..4 records, timestamps 1000 * batch. */
static void fill(struct plog_fixture *f, int n, size_t value_len)
{
    int i;

    for (i = 0; i < n; i++) {
        assert_int_equal(plog_fixture_append(f, 1 + i % 4, 1000 * (i + 1), 0,
                                             value_len, 5000),
                         0);
    }
}

/* The headers seen are the log's batches from the one holding `from`,
 * dense and in order, ending at the log end. */
static void
expect_tail(struct plog_fixture *f, const struct seen *s, int64_t from)
{
    size_t i;

    assert_true(s->n > 0);
    assert_true(s->h[0].base_offset <= from);
    assert_true(batch_last_offset(&s->h[0]) >= from);
    for (i = 1; i < s->n; i++) {
        assert_int_equal(s->h[i].base_offset,
                         batch_last_offset(&s->h[i - 1]) + 1);
    }
    assert_int_equal(batch_last_offset(&s->h[s->n - 1]) + 1,
                     plog_end_offset(f->log));
}

static void test_empty_log_scans_nothing(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), 0);
    assert_int_equal(s->n, 0);
    assert_int_equal(plog_scan(f->log, 1, seen_cb, s, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_scan_start_for_time(f->log, 0), 0);
}

static void test_whole_log_across_segments(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 120, 100);
    assert_true(plog_segment_count(f->log) > 3);
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), 0);
    assert_int_equal(s->n, 120);
    assert_int_equal(s->h[0].base_offset, 0);
    expect_tail(f, s, 0);
    assert_int_equal(s->h[7].max_timestamp, 8000);
    /* at the end: nothing; past it: refused */
    s = seen_reset();
    assert_int_equal(
        plog_scan(f->log, plog_end_offset(f->log), seen_cb, s, &f->ed), 0);
    assert_int_equal(s->n, 0);
    assert_int_equal(
        plog_scan(f->log, plog_end_offset(f->log) + 1, seen_cb, s, &f->ed),
        WEIR_EOFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_scan(f->log, -1, seen_cb, s, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
}

static void test_from_the_middle_of_a_batch(void **state)
{
    struct plog_fixture *f = *state;
    int64_t from;

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 120, 100);
    for (from = 0; from < plog_end_offset(f->log); from += 7) {
        struct seen *s = seen_reset();
        assert_int_equal(plog_scan(f->log, from, seen_cb, s, &f->ed), 0);
        expect_tail(f, s, from);
    }
}

static void test_after_reopen_and_with_large_batches(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();

    f->cfg.segment_bytes = 1u << 20;
    f->cfg.max_batch_bytes = 1u << 20;
    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 10, 30000); /* up to 4 x 30 KB: past the 64 KiB read buffer */
    fill(f, 50, 10);
    fill(f, 10, 30000);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 6000), 0);
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), 0);
    assert_int_equal(s->n, 70);
    expect_tail(f, s, 0);
    s = seen_reset();
    assert_int_equal(plog_scan(f->log, 30, seen_cb, s, &f->ed), 0);
    expect_tail(f, s, 30);
}

static void test_callback_stops_the_scan(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 40, 100);
    s->stop_after = 5;
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), 99);
    assert_int_equal(s->n, 5);
}

static void test_read_errors_are_reported(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 120, 100);
    mem_storage_fail(f->ms, MEM_OP_PREAD, 3, EIO, 0, false);
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), WEIR_EIO);
    mem_storage_fail_clear(f->ms);
    s = seen_reset();
    assert_int_equal(plog_scan(f->log, 0, seen_cb, s, &f->ed), 0);
    assert_int_equal(s->n, 120);
}

static void test_scan_start_skips_old_segments(void **state)
{
    struct plog_fixture *f = *state;
    struct seen *s = seen_reset();
    int64_t start;

    assert_int_equal(plog_fixture_open(f, 5000), 0);
    fill(f, 120, 100); /* batch i (from 0) has max timestamp 1000 * (i+1) */
    assert_int_equal(plog_scan_start_for_time(f->log, 0), 0);
    assert_int_equal(plog_scan_start_for_time(f->log, 1000), 0);
    /* beyond every record: the active segment still */
    start = plog_scan_start_for_time(f->log, 1000000);
    assert_true(start > 0);
    assert_int_equal(plog_scan(f->log, start, seen_cb, s, &f->ed), 0);
    assert_true(s->n < 120);
    assert_int_equal(s->h[s->n - 1].max_timestamp, 120000);
    /* from batch 60's timestamp: no batch at or after it is skipped */
    s = seen_reset();
    start = plog_scan_start_for_time(f->log, 61000);
    assert_true(start > 0);
    assert_int_equal(plog_scan(f->log, start, seen_cb, s, &f->ed), 0);
    assert_true(s->n >= 60 && s->n < 120);
    assert_true(s->h[0].max_timestamp <= 61000);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_empty_log_scans_nothing),
        T(test_whole_log_across_segments),
        T(test_from_the_middle_of_a_batch),
        T(test_after_reopen_and_with_large_batches),
        T(test_callback_stops_the_scan),
        T(test_read_errors_are_reported),
        T(test_scan_start_skips_old_segments),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
