/* SPDX-License-Identifier: Apache-2.0 */
/* Retention: whole closed segments from the front, by the newest record
 * timestamp of a segment and by total size; never the active segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "tests/lib/plog_fixture.h"

#define HOUR (3600LL * 1000)

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    f.cfg.segment_bytes = 1000;
    f.cfg.retention_ms = 10 * HOUR;
    f.cfg.segment_ms = HOUR;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    return 0;
}

/* Segments of `per` batches each; segment k holds records stamped around
 * t0 + k hours. Returns the number of segments made. */
static uint32_t fill_hours(struct plog_fixture *f, int64_t t0, int hours)
{
    int h;
    int i;

    for (h = 0; h < hours; h++) {
        int64_t ts = t0 + h * HOUR;
        for (i = 0; i < 4; i++) {
            assert_int_equal(plog_fixture_append(f, 2, ts + i, 1, 80, ts + i),
                             0);
        }
        assert_int_equal(plog_maybe_roll(f->log, ts + 2 * HOUR, &f->ed), 0);
    }
    return plog_segment_count(f->log);
}

static bool seg_files_exist(struct plog_fixture *f, int64_t base)
{
    const char *exts[] = {".log", ".index", ".timeindex"};
    int n = 0;
    int i;

    for (i = 0; i < 3; i++) {
        n += f->ops->exists(f->ops->ctx,
                            plog_fixture_path(plog_fixture_seg(base, exts[i])));
    }
    return n > 0;
}

static void test_retention_by_age_deletes_old_closed_segments(void **state)
{
    struct plog_fixture *f = *state;
    int64_t t0 = 100 * HOUR;
    int64_t first_base;
    uint32_t deleted;
    uint32_t segs;

    f->cfg.segment_bytes = 1 << 20; /* roll by the hour only */
    assert_int_equal(plog_fixture_open(f, t0), 0);
    segs = fill_hours(f, t0, 6); /* 6 full segments + an empty active one */
    assert_int_equal(segs, 7);
    first_base = f->log->segs[0]->base_offset;
    /* at t0 + 11h30 the two oldest hours (newest records at t0 + 4 ms and
     * t0 + 1h + 4 ms) are older than 10 h */
    assert_int_equal(plog_enforce_retention(f->log, t0 + 11 * HOUR + HOUR / 2,
                                            INT64_MAX, &deleted, &f->ed),
                     0);
    assert_int_equal(deleted, 2);
    assert_int_equal(plog_segment_count(f->log), 5);
    assert_false(seg_files_exist(f, first_base));
    assert_true(plog_start_offset(f->log) == f->log->segs[0]->base_offset);
    assert_true(plog_start_offset(f->log) == 16);
    log_model_drop_front(&f->model, 16);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* reads below the start are out of range now */
    {
        struct plog_read_result r;
        assert_int_equal(plog_read(f->log, 15, INT64_MAX, 100, &r, &f->ed),
                         WEIR_EOFFSET_OUT_OF_RANGE);
    }
    /* again at the same time: nothing more */
    assert_int_equal(plog_enforce_retention(f->log, t0 + 11 * HOUR + HOUR / 2,
                                            INT64_MAX, &deleted, &f->ed),
                     0);
    assert_int_equal(deleted, 0);
}

static void test_retention_never_deletes_active_segment(void **state)
{
    struct plog_fixture *f = *state;
    int64_t t0 = 100 * HOUR;
    uint32_t deleted;

    assert_int_equal(plog_fixture_open(f, t0), 0);
    (void)fill_hours(f, t0, 3);
    /* the active segment has data too */
    assert_int_equal(plog_fixture_append(f, 3, t0, 1, 80, t0 + 3 * HOUR), 0);
    /* far in the future everything is expired, yet the active stays */
    assert_int_equal(plog_enforce_retention(f->log, t0 + 1000 * HOUR, INT64_MAX,
                                            &deleted, &f->ed),
                     0);
    assert_true(deleted > 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_true(plog_active(f->log)->size > 0);
    log_model_drop_front(&f->model, plog_start_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* still appendable */
    assert_int_equal(plog_fixture_append(f, 1, t0, 1, 80, t0 + 3 * HOUR), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* A segment holding an offset at or above the high watermark stays,
 * whatever age or size says: a follower may not have copied it yet, and
 * what is not committed must never vanish from the leader first. */
static void test_retention_never_passes_the_high_watermark(void **state)
{
    struct plog_fixture *f = *state;
    uint32_t deleted;
    int64_t hw;
    int i;

    f->cfg.retention_ms = 1;
    f->cfg.retention_bytes = 1;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 60; i++) {
        assert_int_equal(plog_fixture_append(f, 2, i, 1, 100, 1000), 0);
    }
    assert_true(plog_segment_count(f->log) > 5);
    /* nothing replicated yet: nothing goes */
    assert_int_equal(
        plog_enforce_retention(f->log, 1000000, 0, &deleted, &f->ed), 0);
    assert_int_equal(deleted, 0);
    /* the high watermark inside segment 3: segments 0..2 go, 3 stays */
    hw = f->log->segs[3]->base_offset + 1;
    assert_int_equal(
        plog_enforce_retention(f->log, 1000000, hw, &deleted, &f->ed), 0);
    assert_int_equal(deleted, 3);
    assert_true(plog_start_offset(f->log) < hw);
    assert_true(f->log->segs[0]->next_offset > hw);
    log_model_drop_front(&f->model, plog_start_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* at a segment's end exactly: that segment may go too */
    hw = f->log->segs[0]->next_offset;
    assert_int_equal(
        plog_enforce_retention(f->log, 1000000, hw, &deleted, &f->ed), 0);
    assert_int_equal(deleted, 1);
    assert_true(plog_start_offset(f->log) == hw);
}

static void test_retention_by_size_drops_oldest(void **state)
{
    struct plog_fixture *f = *state;
    uint64_t before;
    uint32_t deleted;
    int i;

    f->cfg.retention_ms = -1;
    f->cfg.retention_bytes = 3000;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 60; i++) {
        assert_int_equal(plog_fixture_append(f, 2, i, 1, 100, 1000), 0);
    }
    before = plog_size_bytes(f->log);
    assert_true(before > 6000);
    assert_int_equal(
        plog_enforce_retention(f->log, 1000, INT64_MAX, &deleted, &f->ed), 0);
    assert_true(deleted > 0);
    assert_true(plog_size_bytes(f->log) <= 3000);
    /* only as many as needed: segments hold at most 1000 bytes, so keeping
     * the last one deleted would have exceeded the limit */
    assert_true(plog_size_bytes(f->log) > 3000 - 1000);
    log_model_drop_front(&f->model, plog_start_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* an active segment bigger than the limit is kept */
    f->log->cfg.retention_bytes = 1;
    assert_int_equal(
        plog_enforce_retention(f->log, 1000, INT64_MAX, &deleted, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    log_model_drop_front(&f->model, plog_start_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_retention_after_reopen_uses_time_index(void **state)
{
    struct plog_fixture *f = *state;
    int64_t t0 = 100 * HOUR;
    uint32_t deleted;
    int clean;

    f->cfg.segment_bytes = 1 << 20;
    for (clean = 1; clean >= 0; clean--) {
        plog_fixture_fini(f);
        plog_fixture_init(f);
        f->cfg.segment_bytes = 1 << 20;
        f->cfg.segment_ms = HOUR;
        f->cfg.retention_ms = 10 * HOUR;
        assert_int_equal(plog_fixture_open(f, t0), 0);
        (void)fill_hours(f, t0, 5);
        assert_int_equal(plog_flush(f->log, &f->ed), 0);
        if (clean) {
            plog_fixture_close(f);
        } else {
            plog_fixture_kill(f);
        }
        assert_int_equal(plog_fixture_open(f, t0 + 5 * HOUR), 0);
        assert_true(plog_recovered(f->log) == !clean);
        /* same answer as before the restart: the newest record of segment
         * k is t0 + k h + 4 ms */
        assert_int_equal(plog_enforce_retention(f->log, t0 + 12 * HOUR + 3,
                                                INT64_MAX, &deleted, &f->ed),
                         0);
        assert_int_equal(deleted, 2);
        log_model_drop_front(&f->model, plog_start_offset(f->log));
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    }
}

static void test_retention_disabled_or_timestamps_unknown(void **state)
{
    struct plog_fixture *f = *state;
    uint32_t deleted;
    int i;

    f->cfg.retention_ms = -1;
    f->cfg.retention_bytes = -1;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 40; i++) {
        assert_int_equal(plog_fixture_append(f, 2, i, 1, 100, 1000), 0);
    }
    assert_int_equal(plog_enforce_retention(f->log, INT64_MAX / 2, INT64_MAX,
                                            &deleted, &f->ed),
                     0);
    assert_int_equal(deleted, 0);
    /* producers that send no timestamps (-1) never expire by age */
    plog_fixture_kill(f);
    plog_fixture_fini(f);
    plog_fixture_init(f);
    f->cfg.segment_bytes = 1000;
    f->cfg.retention_ms = 1;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 40; i++) {
        assert_int_equal(plog_fixture_append(f, 2, -1, 0, 100, 1000), 0);
    }
    assert_true(plog_segment_count(f->log) > 3);
    assert_int_equal(
        plog_enforce_retention(f->log, 1000000, INT64_MAX, &deleted, &f->ed),
        0);
    assert_int_equal(deleted, 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_offset_for_time_after_retention(void **state)
{
    struct plog_fixture *f = *state;
    int64_t t0 = 100 * HOUR;
    uint32_t deleted;
    int64_t off;
    int64_t ts;

    f->cfg.segment_bytes = 1 << 20;
    assert_int_equal(plog_fixture_open(f, t0), 0);
    (void)fill_hours(f, t0, 4);
    /* segment 1's newest record (t0 + 1h + 4 ms) is exactly 10 h old: kept */
    assert_int_equal(plog_enforce_retention(f->log, t0 + 11 * HOUR + 4,
                                            INT64_MAX, &deleted, &f->ed),
                     0);
    assert_int_equal(deleted, 1);
    /* a time before everything left answers with the new start */
    assert_int_equal(plog_offset_for_time(f->log, 0, &off, &ts, &f->ed), 0);
    assert_true(off == plog_start_offset(f->log));
    assert_true(ts == t0 + HOUR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_retention_by_age_deletes_old_closed_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_retention_never_deletes_active_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_size_drops_oldest,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_retention_after_reopen_uses_time_index, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_retention_disabled_or_timestamps_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_retention_never_passes_the_high_watermark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_for_time_after_retention,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
