/* SPDX-License-Identifier: Apache-2.0 */
/* plog_restart_at over memory storage: every segment goes and an empty log
 * starts at the given offset (a follower behind its leader's log start);
 * appends continue there, a clean or unclean reopen finds it, and a crash
 * or an I/O failure at any step of the restart leaves a log that opens. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "tests/lib/plog_fixture.h"

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct plog_fixture *f = *state;

    plog_fixture_fini(f);
    return 0;
}

static void append_n(struct plog_fixture *f, int count)
{
    int i;

    for (i = 0; i < count; i++) {
        assert_int_equal(
            plog_fixture_append(f, 1 + i % 5, 1000 + i, 1, 40 + i % 200, 1000),
            0);
    }
}

/* The model restarts at `offset` too. */
static void model_restart(struct plog_fixture *f, int64_t offset)
{
    log_model_fini(&f->model);
    log_model_init(&f->model, offset);
}

static int seg_exists(struct plog_fixture *f, int64_t base, const char *ext)
{
    return f->ops->exists(f->ops->ctx,
                          plog_fixture_path(plog_fixture_seg(base, ext)));
}

static void test_restart_drops_every_segment(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    int64_t old_end;
    int64_t at;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_n(f, 150);
    assert_true(plog_segment_count(f->log) > 3);
    old_end = plog_end_offset(f->log);
    at = old_end + 1234; /* the leader's log start, past our end */
    assert_int_equal(plog_restart_at(f->log, at, 2000, &f->ed), 0);
    assert_true(plog_start_offset(f->log) == at);
    assert_true(plog_end_offset(f->log) == at);
    assert_true(plog_durable_offset(f->log) == at);
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_int_equal(seg_exists(f, 0, ".log"), 0);
    assert_int_equal(seg_exists(f, 0, ".index"), 0);
    assert_int_equal(seg_exists(f, at, ".log"), 1);
    assert_int_equal(plog_read(f->log, at, INT64_MAX, 100, &r, &f->ed), 0);
    assert_int_equal(r.bytes, 0);
    assert_int_equal(plog_read(f->log, at - 1, INT64_MAX, 100, &r, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    model_restart(f, at);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* appends continue at the new start, across rolls */
    append_n(f, 60);
    assert_int_equal(plog_fixture_check(f, 700), 0);
    /* and it all survives a clean reopen and an unclean one */
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_false(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_fixture_kill(f);
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_restart_at_own_start_or_below(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_n(f, 5); /* one segment, base 0 */
    /* same base as the segment it replaces */
    assert_int_equal(plog_restart_at(f->log, 0, 1000, &f->ed), 0);
    assert_true(plog_end_offset(f->log) == 0);
    model_restart(f, 0);
    append_n(f, 5);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* lower than the old end (a leader whose log is shorter) */
    assert_int_equal(plog_restart_at(f->log, 3, 1000, &f->ed), 0);
    model_restart(f, 3);
    append_n(f, 2);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    plog_fixture_kill(f);
    mem_storage_crash(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_restart_refuses_bad_offset_and_offline_log(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_n(f, 10);
    assert_int_equal(plog_restart_at(f->log, -1, 1000, &f->ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* a failed fsync takes the log offline: no restart on it */
    append_n(f, 1);
    mem_storage_fail(f->ms, MEM_OP_FSYNC, 1, EIO, 0, false);
    assert_int_not_equal(plog_flush(f->log, &f->ed), 0);
    mem_storage_fail_clear(f->ms);
    assert_int_equal(plog_restart_at(f->log, 500, 1000, &f->ed),
                     WEIR_ELOG_OFFLINE);
}

/* What a reopen after a crash may find: the old log cut to a run of its
 * segments from the first (the later ones deleted), a fresh log at 0, or
 * the new empty log. Never a refusal to open. */
static void check_after_crash(struct plog_fixture *f,
                              int64_t old_end,
                              int64_t at,
                              unsigned long nth)
{
    int64_t start;
    int64_t end;

    if (plog_fixture_open(f, 5000) != 0) {
        printf("call %lu failed: the log does not open again\n", nth);
        fail();
    }
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    start = plog_start_offset(f->log);
    end = plog_end_offset(f->log);
    if (start == at && end == at) {
        return; /* the restart was durable */
    }
    if (start == 0 && end == 0) {
        return; /* every segment went, the new one was not made */
    }
    /* what is left of the old log is a prefix of it */
    assert_true(start == 0 && end <= old_end);
    log_model_truncate(&f->model, end);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_failure_or_crash_at_any_step_leaves_a_log(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long calls;
    unsigned long nth;
    int64_t old_end;
    int64_t at;
    int rv;

    for (nth = 1;; nth++) {
        plog_fixture_fini(f);
        plog_fixture_init(f);
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        append_n(f, 80);
        assert_int_equal(plog_flush(f->log, &f->ed), 0);
        old_end = plog_end_offset(f->log);
        at = old_end + 100;
        calls = mem_storage_calls(f->ms, MEM_OP_ANY);
        mem_storage_fail(f->ms, MEM_OP_ANY, nth, EIO, 0, true);
        rv = plog_restart_at(f->log, at, 2000, &f->ed);
        mem_storage_fail_clear(f->ms);
        plog_fixture_kill(f);
        mem_storage_crash(f->ms);
        check_after_crash(f, old_end, at, nth);
        if (rv == 0) {
            /* the whole restart ran without reaching the fault */
            assert_true(mem_storage_calls(f->ms, MEM_OP_ANY) > calls);
            assert_true(plog_start_offset(f->log) == at);
            break;
        }
        assert_true(nth < 200);
    }
    assert_true(nth > 5); /* the sweep went through several steps */
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_restart_drops_every_segment),
        T(test_restart_at_own_start_or_below),
        T(test_restart_refuses_bad_offset_and_offline_log),
        T(test_failure_or_crash_at_any_step_leaves_a_log),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
