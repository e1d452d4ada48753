/* SPDX-License-Identifier: Apache-2.0 */
/* Verification of bytes the process did not write: after a clean restart
 * (no recovery scan) a byte flipped in a closed segment is caught before
 * a read serves its batch, or by the scrub, and takes the log offline as
 * corrupt at that batch; plog_recover then cuts the log there. A read
 * never returns a batch whose CRC fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "common/batch.h"
#include "tests/lib/plog_fixture.h"

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    f.cfg.segment_bytes = 4096;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    return 0;
}

/* 40 batches of 3 records over several segments, closed cleanly and
 * opened again: nothing of it checked by this process. */
static void fill_and_restart(struct plog_fixture *f)
{
    int i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 40; i++) {
        assert_int_equal(plog_fixture_append(f, 3, 1000 + i, 1, 100, 1000), 0);
    }
    assert_true(plog_segment_count(f->log) >= 3);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 2000), 0);
    assert_false(plog_recovered(f->log));
}

struct found {
    uint64_t pos;
    int64_t base;
};

/* The k-th batch of segment `base` (position and base offset). */
static struct found batch_at(struct plog_fixture *f, int64_t base, int k)
{
    const char *path = plog_fixture_path(plog_fixture_seg(base, ".log"));
    struct weir_buf b;
    struct found out = {0, -1};
    uint64_t pos = 0;
    int i;

    buf_init(&b);
    assert_int_equal(mem_storage_read_raw(f->ms, path, &b), 0);
    for (i = 0; i <= k; i++) {
        assert_true(pos + BATCH_HEADER_BYTES <= b.len);
        out.pos = pos;
        out.base = (int64_t)wire_get_u64be(b.data + pos);
        pos += BATCH_LOG_OVERHEAD + wire_get_u32be(b.data + pos + 8);
    }
    buf_fini(&b);
    return out;
}

/* Flip one byte of a record value (inside the CRC) of that batch. */
static void flip(struct plog_fixture *f, int64_t seg_base, uint64_t pos)
{
    const char *path = plog_fixture_path(plog_fixture_seg(seg_base, ".log"));
    struct weir_buf b;
    uint8_t x;

    buf_init(&b);
    assert_int_equal(mem_storage_read_raw(f->ms, path, &b), 0);
    x = b.data[pos + BATCH_HEADER_BYTES + 20] ^ 0x10;
    buf_fini(&b);
    assert_int_equal(mem_storage_write_raw(
                         f->ms, path, pos + BATCH_HEADER_BYTES + 20, &x, 1),
                     0);
}

static void test_read_refuses_a_corrupt_batch_after_clean_restart(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    int64_t seg1;
    struct found bad;
    int64_t off;

    fill_and_restart(f);
    seg1 = f->log->segs[1]->base_offset;
    bad = batch_at(f, seg1, 2);
    flip(f, seg1, bad.pos);
    /* everything before the bad batch reads, one batch at a time */
    for (off = 0; off < bad.base; off += 3) {
        assert_int_equal(
            plog_read(f->log, off, plog_end_offset(f->log), 1, &r, &f->ed), 0);
        assert_true(r.first_offset == off);
    }
    assert_false(plog_is_offline(f->log));
    /* the bad one does not, and nothing does after it */
    assert_int_equal(
        plog_read(f->log, bad.base, plog_end_offset(f->log), 1, &r, &f->ed),
        WEIR_ELOG_OFFLINE);
    assert_int_equal(r.bytes, 0);
    assert_non_null(strstr(f->ed.msg, "CRC"));
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_CORRUPT);
    assert_true(plog_corrupt_offset(f->log) == bad.base);
    assert_int_equal(
        plog_read(f->log, 0, plog_end_offset(f->log), 1, &r, &f->ed),
        WEIR_ELOG_OFFLINE);
}

static void test_a_longer_read_never_carries_the_bad_batch(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    int64_t seg1;
    struct found bad;

    fill_and_restart(f);
    seg1 = f->log->segs[1]->base_offset;
    bad = batch_at(f, seg1, 3);
    flip(f, seg1, bad.pos);
    /* from the segment's first batch, enough bytes to reach past it */
    assert_int_equal(
        plog_read(f->log, seg1, plog_end_offset(f->log), 1 << 20, &r, &f->ed),
        WEIR_ELOG_OFFLINE);
    assert_int_equal(r.bytes, 0);
    assert_true(plog_corrupt_offset(f->log) == bad.base);
}

static void test_a_corrupt_length_is_caught_too(void **state)
{
    struct plog_fixture *f = *state;
    const char *path;
    struct plog_read_result r;
    int64_t seg0;
    struct found bad;
    uint8_t len[4] = {0x00, 0x7f, 0xff, 0xff};

    fill_and_restart(f);
    seg0 = f->log->segs[0]->base_offset;
    bad = batch_at(f, seg0, 1);
    path = plog_fixture_path(plog_fixture_seg(seg0, ".log"));
    assert_int_equal(mem_storage_write_raw(f->ms, path, bad.pos + 8, len, 4),
                     0);
    assert_int_equal(
        plog_read(f->log, bad.base, plog_end_offset(f->log), 1, &r, &f->ed),
        WEIR_ELOG_OFFLINE);
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_CORRUPT);
    assert_true(plog_corrupt_offset(f->log) <= bad.base);
}

static void test_scrub_finds_it_within_its_budget(void **state)
{
    struct plog_fixture *f = *state;
    uint64_t checked;
    uint64_t total = 0;
    int64_t seg2;
    struct found bad;
    int calls = 0;
    int rv = 0;

    fill_and_restart(f);
    seg2 = f->log->segs[2]->base_offset;
    bad = batch_at(f, seg2, 1);
    flip(f, seg2, bad.pos);
    while (rv == 0 && !plog_verified(f->log) && calls < 1000) {
        rv = plog_scrub(f->log, 1000, &checked, &f->ed);
        /* whole batches: at most one batch over the budget */
        assert_true(checked <= 1000 + 400);
        total += checked;
        calls++;
    }
    assert_int_equal(rv, WEIR_ELOG_OFFLINE);
    assert_false(plog_verified(f->log));
    assert_true(plog_corrupt_offset(f->log) == bad.base);
    assert_true(calls > 3); /* spread over several ticks */
    assert_true(total <= plog_size_bytes(f->log));
}

static void test_scrub_of_a_good_log_completes(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    uint64_t checked;
    uint64_t total = 0;
    uint64_t reads;
    int calls = 0;

    fill_and_restart(f);
    while (!plog_verified(f->log) && calls < 1000) {
        assert_int_equal(plog_scrub(f->log, 2000, &checked, &f->ed), 0);
        total += checked;
        calls++;
    }
    assert_true(plog_verified(f->log));
    assert_true(total == plog_size_bytes(f->log));
    /* checked once: reading it all now reads no record bytes again */
    reads = mem_storage_bytes_read(f->ms);
    assert_int_equal(
        plog_read(f->log, 0, plog_end_offset(f->log), 1 << 20, &r, &f->ed), 0);
    assert_true(mem_storage_bytes_read(f->ms) - reads <
                f->log->segs[0]->size / 2);
    assert_int_equal(plog_scrub(f->log, 2000, &checked, &f->ed), 0);
    assert_true(checked == 0);
}

static void test_appended_bytes_need_no_check(void **state)
{
    struct plog_fixture *f = *state;
    uint64_t checked;
    int i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 30; i++) {
        assert_int_equal(plog_fixture_append(f, 3, 1000 + i, 1, 100, 1000), 0);
    }
    assert_int_equal(plog_scrub(f->log, 1 << 20, &checked, &f->ed), 0);
    assert_true(checked == 0);
    assert_true(plog_verified(f->log));
}

static void test_recover_cuts_at_the_corrupt_batch(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    int64_t before;
    int64_t after;
    int64_t seg1;
    uint32_t segs;
    struct found bad;

    fill_and_restart(f);
    segs = plog_segment_count(f->log);
    seg1 = f->log->segs[1]->base_offset;
    bad = batch_at(f, seg1, 2);
    flip(f, seg1, bad.pos);
    assert_int_equal(
        plog_read(f->log, bad.base, plog_end_offset(f->log), 1, &r, &f->ed),
        WEIR_ELOG_OFFLINE);
    assert_int_equal(plog_recover(f->log, 3000, &before, &after, &f->ed), 0);
    assert_false(plog_is_offline(f->log));
    assert_true(after == bad.base);
    assert_int_equal(plog_segment_count(f->log), 2);
    assert_true(segs > 2);
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(plog_fixture_seg(
                                        f->log->segs[0]->base_offset, ".log"))),
        1);
    log_model_truncate(&f->model, bad.base);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* the cut records come again (from a leader, in a cluster) */
    assert_int_equal(plog_fixture_append(f, 3, 5000, 1, 100, 3000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 4000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_read_refuses_a_corrupt_batch_after_clean_restart, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_longer_read_never_carries_the_bad_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_corrupt_length_is_caught_too,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_scrub_finds_it_within_its_budget,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_scrub_of_a_good_log_completes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_appended_bytes_need_no_check,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover_cuts_at_the_corrupt_batch,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
