/* SPDX-License-Identifier: Apache-2.0 */
/* Offline logs over memory storage: every failing storage call of an
 * append, flush, roll, checkpoint, truncation or retention pass takes the
 * log offline; an offline log takes no appends and serves no reads; the
 * hook hears of it once; plog_recover brings it back in place, cut to its
 * durable offset after a failed fsync, and only when the disk works. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "tests/lib/plog_fixture.h"

static int hook_calls;

static void count_hook(void *arg, struct plog *log)
{
    (void)log;
    (*(int *)arg)++;
}

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    hook_calls = 0;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    return 0;
}

static void open_log(struct plog_fixture *f)
{
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    plog_set_offline_hook(f->log, count_hook, &hook_calls);
}

static void append_n(struct plog_fixture *f, int batches)
{
    int i;

    for (i = 0; i < batches; i++) {
        assert_int_equal(plog_fixture_append(f, 3, 1000 + i, 1, 120, 1000), 0);
    }
}

/* Everything an offline log must refuse, and nothing written meanwhile. */
static void assert_refuses_all(struct plog_fixture *f)
{
    const char *seg = plog_fixture_path(
        plog_fixture_seg(plog_active(f->log)->base_offset, ".log"));
    int64_t size = mem_storage_size_of(f->ms, seg);
    struct plog_read_result r;
    uint32_t deleted;

    assert_true(plog_is_offline(f->log));
    assert_int_equal(plog_fixture_append(f, 1, 1, 1, 10, 1000),
                     WEIR_ELOG_OFFLINE);
    assert_int_equal(plog_read(f->log, plog_start_offset(f->log),
                               plog_end_offset(f->log), 1 << 20, &r, &f->ed),
                     WEIR_ELOG_OFFLINE);
    assert_int_equal(r.bytes, 0);
    assert_int_equal(plog_flush(f->log, &f->ed), WEIR_ELOG_OFFLINE);
    assert_int_equal(plog_truncate_to(f->log, 0, &f->ed), WEIR_ELOG_OFFLINE);
    assert_int_equal(
        plog_enforce_retention(f->log, 1000, INT64_MAX, &deleted, &f->ed),
        WEIR_ELOG_OFFLINE);
    assert_int_equal(mem_storage_size_of(f->ms, seg), size);
    assert_int_equal(hook_calls, 1);
}

static void test_failed_append_takes_log_offline(void **state)
{
    struct plog_fixture *f = *state;

    open_log(f);
    append_n(f, 4);
    assert_false(plog_is_offline(f->log));
    mem_storage_fail(f->ms, MEM_OP_PWRITE, 1, ENOSPC, 40, false);
    assert_int_equal(plog_fixture_append(f, 2, 1, 1, 10, 1000), WEIR_ESTORAGE);
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_IO);
    assert_non_null(strstr(plog_offline_reason(f->log), "pwrite"));
    assert_non_null(strstr(plog_offline_reason(f->log), "No space left"));
    assert_refuses_all(f);
}

/* One failing call of kind op, armed by `arm`'s caller, during `act`. */
enum act {
    ACT_FLUSH,
    ACT_APPEND,
    ACT_ROLL,
    ACT_TRUNCATE,
    ACT_RETENTION,
};

static int run_act(struct plog_fixture *f, enum act a)
{
    uint32_t deleted;
    int i;
    int rv = 0;

    switch (a) {
    case ACT_FLUSH:
        return plog_flush(f->log, &f->ed);
    case ACT_APPEND:
        return plog_fixture_append(f, 2, 5, 1, 50, 1000);
    case ACT_ROLL: /* appends until a roll happens (or one fails) */
        for (i = 0; rv == 0 && i < 100 && plog_segment_count(f->log) < 3; i++) {
            rv = plog_fixture_append(f, 3, 5, 1, 200, 1000);
        }
        return rv;
    case ACT_TRUNCATE:
        return plog_truncate_to(f->log, 2, &f->ed);
    case ACT_RETENTION:
        return plog_enforce_retention(f->log, 1000, INT64_MAX, &deleted,
                                      &f->ed);
    }
    return 0;
}

static void test_each_failing_call_takes_log_offline(void **state)
{
    struct plog_fixture *f = *state;
    const struct {
        enum mem_op op;
        enum act act;
        int err_no;
    } cases[] = {
        {MEM_OP_FSYNC, ACT_FLUSH, EIO},       {MEM_OP_PWRITE, ACT_APPEND, EIO},
        {MEM_OP_OPEN, ACT_ROLL, ENOSPC},      /* the new segment */
        {MEM_OP_FSYNC_DIR, ACT_ROLL, EIO},    /* its directory entry */
        {MEM_OP_RENAME, ACT_ROLL, ENOSPC},    /* the recovery checkpoint */
        {MEM_OP_TRUNCATE, ACT_TRUNCATE, EIO}, /* a replica's truncation */
        {MEM_OP_UNLINK, ACT_RETENTION, EIO},  /* a retention delete */
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        plog_fixture_fini(f);
        plog_fixture_init(f);
        hook_calls = 0;
        f->cfg.segment_bytes = 2048;
        f->cfg.retention_bytes = 1;
        open_log(f);
        append_n(f, 2);
        if (cases[i].act == ACT_RETENTION) {
            assert_int_equal(run_act(f, ACT_ROLL), 0);
        }
        mem_storage_fail(f->ms, cases[i].op, 1, cases[i].err_no, 0, false);
        assert_int_not_equal(run_act(f, cases[i].act), 0);
        assert_int_equal(mem_storage_failed(f->ms), 1);
        assert_refuses_all(f);
    }
}

static void test_recover_after_failed_fsync_cuts_to_durable(void **state)
{
    struct plog_fixture *f = *state;
    int64_t before;
    int64_t after;
    int64_t durable;

    open_log(f);
    append_n(f, 5);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    durable = plog_durable_offset(f->log);
    append_n(f, 3); /* written, never fsynced */
    mem_storage_fail(f->ms, MEM_OP_FSYNC, 1, EIO, 0, false);
    assert_int_equal(plog_flush(f->log, &f->ed), WEIR_EIO);
    assert_refuses_all(f);
    /* the page cache still shows them, but nobody knows whether the disk
     * has them: recovery keeps only what an fsync covered */
    assert_int_equal(plog_recover(f->log, 2000, &before, &after, &f->ed), 0);
    assert_false(plog_is_offline(f->log));
    assert_true(before == durable + 9);
    assert_true(after == durable);
    assert_true(plog_durable_offset(f->log) == durable);
    log_model_truncate(&f->model, durable);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* in place: the hook stays, appends go on at the cut */
    append_n(f, 2);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_mark_offline(f->log, WEIR_EIO, "test");
    assert_int_equal(hook_calls, 2);
}

static void test_recover_after_failed_write_keeps_written_records(void **state)
{
    struct plog_fixture *f = *state;
    int64_t before;
    int64_t after;

    f->cfg.flush_policy = PLOG_FLUSH_NEVER;
    open_log(f);
    append_n(f, 6); /* acknowledged at once under flush=never */
    mem_storage_fail(f->ms, MEM_OP_PWRITE, 1, ENOSPC, 17, false);
    assert_int_equal(plog_fixture_append(f, 2, 1, 1, 10, 1000), WEIR_ESTORAGE);
    /* only the failed write goes; what was written before it stays */
    assert_int_equal(plog_recover(f->log, 2000, &before, &after, &f->ed), 0);
    assert_true(after == 18);
    assert_true(plog_durable_offset(f->log) == 18); /* fsynced now */
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_recover_fails_while_disk_fails(void **state)
{
    struct plog_fixture *f = *state;
    int64_t before;
    int64_t after;
    int64_t end;

    open_log(f);
    append_n(f, 4);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    end = plog_end_offset(f->log);
    plog_mark_offline(f->log, WEIR_EIO, "injected");
    mem_storage_fail(f->ms, MEM_OP_FSYNC, 1, EIO, 0, true);
    assert_int_not_equal(plog_recover(f->log, 2000, &before, &after, &f->ed),
                         0);
    /* still offline, still a whole struct */
    assert_true(plog_is_offline(f->log));
    assert_true(plog_end_offset(f->log) == end);
    assert_string_equal(plog_offline_reason(f->log), "injected");
    mem_storage_fail_clear(f->ms);
    assert_int_equal(plog_recover(f->log, 2000, &before, &after, &f->ed), 0);
    assert_true(after == end);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* Fail the nth storage call of a workload, whatever it is: afterwards the
 * log either went offline or holds exactly the model; once recovered it
 * holds a prefix of the model no shorter than what was durable. */
static int sweep_workload(struct plog_fixture *f, int64_t *durable)
{
    int i;
    int rv = 0;

    for (i = 0; rv == 0 && i < 24; i++) {
        *durable = plog_durable_offset(f->log);
        rv = plog_fixture_append(f, 2, 1000 + i, 1, 150, 1000);
        if (rv == 0 && i % 4 == 3) {
            rv = plog_flush(f->log, &f->ed);
        }
    }
    if (rv == 0) {
        /* a truncation may legitimately cut below the durable offset (to
         * a batch boundary: batches hold 2 records) */
        *durable = plog_end_offset(f->log) - 4;
        rv = plog_truncate_to(f->log, *durable, &f->ed);
        if (rv == 0) {
            log_model_truncate(&f->model, plog_end_offset(f->log));
        }
    }
    return rv;
}

static void test_any_failing_call_is_offline_or_harmless(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long nth;
    bool done = false;
    int64_t durable;
    int64_t before;
    int64_t after;

    for (nth = 1; !done && nth < 3000; nth++) {
        plog_fixture_fini(f);
        plog_fixture_init(f);
        hook_calls = 0;
        f->cfg.segment_bytes = 2048;
        open_log(f);
        mem_storage_fail(f->ms, MEM_OP_ANY, nth, EIO, 0, false);
        done = sweep_workload(f, &durable) == 0 && !plog_is_offline(f->log) &&
               mem_storage_failed(f->ms) == 0;
        mem_storage_fail_clear(f->ms);
        if (!plog_is_offline(f->log)) {
            /* a failure the log may shrug off (a derived index file, a
             * directory fsync after a retention delete) */
            assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
            continue;
        }
        assert_int_equal(hook_calls, 1);
        assert_int_equal(plog_recover(f->log, 2000, &before, &after, &f->ed),
                         0);
        assert_true(after >= durable);
        assert_true(after <= log_model_end(&f->model));
        log_model_truncate(&f->model, after);
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    }
    assert_true(done);
    assert_true(nth > 50);
}

/* Only a disk error is the disk's: a storage failure about the log made
 * outside it (the epoch checkpoint) takes it offline as io unless it is
 * out of memory or a bad argument; a replica that cannot lead marks it
 * offline with cause replica, which recovery reopens as it is. */
static void test_offline_cause_follows_the_error(void **state)
{
    struct plog_fixture *f = *state;
    int64_t before;
    int64_t after;

    open_log(f);
    append_n(f, 3);
    assert_false(plog_storage_failed(f->log, WEIR_ENOMEM, "encoding"));
    assert_false(plog_storage_failed(f->log, WEIR_EINVALID_ARGUMENT, "path"));
    assert_false(plog_is_offline(f->log));
    assert_int_equal(hook_calls, 0);
    plog_mark_offline(f->log, WEIR_EFENCED_LEADER_EPOCH, "epoch 3 not new");
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_REPLICA);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(plog_recover(f->log, 2000, &before, &after, &f->ed), 0);
    assert_true(before == after && after == 9);
    assert_true(plog_storage_failed(f->log, WEIR_EIO, "rename checkpoint"));
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_IO);
    assert_int_equal(plog_recover(f->log, 3000, &before, &after, &f->ed), 0);
    plog_mark_offline(f->log, WEIR_ESTORAGE, "pwrite: ENOSPC");
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_IO);
}

/* Recovery after a process crash accepts what the page cache held; it is
 * fsynced before it counts as durable, so it survives a power loss that
 * follows (before, the open counted it durable without an fsync, and the
 * power loss took it). */
static void test_unclean_open_fsyncs_what_it_counts_durable(void **state)
{
    struct plog_fixture *f = *state;
    int64_t end;

    open_log(f);
    append_n(f, 4); /* written, never fsynced */
    end = plog_end_offset(f->log);
    assert_true(plog_durable_offset(f->log) == 0);
    plog_fixture_kill(f); /* the process dies; the page cache stays */
    assert_int_equal(plog_fixture_open(f, 2000), 0);
    assert_true(plog_recovered(f->log));
    assert_true(plog_end_offset(f->log) == end);
    assert_true(plog_durable_offset(f->log) == end);
    plog_fixture_kill(f);
    mem_storage_crash(f->ms); /* then the power goes */
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_true(plog_end_offset(f->log) == end);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* After a failed fsync, a restart (not only plog_recover in place) cuts
 * the log back to what the last good fsync covered: the note in the
 * directory says where. */
static void test_restart_after_failed_fsync_cuts_to_durable(void **state)
{
    struct plog_fixture *f = *state;
    int64_t durable;

    open_log(f);
    append_n(f, 5);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    durable = plog_durable_offset(f->log);
    append_n(f, 3);
    mem_storage_fail(f->ms, MEM_OP_FSYNC, 1, EIO, 0, false);
    assert_int_equal(plog_flush(f->log, &f->ed), WEIR_EIO);
    plog_fixture_kill(f);
    assert_int_equal(plog_fixture_open(f, 2000), 0);
    assert_false(plog_is_offline(f->log));
    assert_true(plog_end_offset(f->log) == durable);
    assert_true(plog_durable_offset(f->log) == durable);
    assert_int_equal(
        f->ops->exists(f->ops->ctx,
                       plog_fixture_path(PLOG_FSYNC_FAILED_CHECKPOINT)),
        0);
    log_model_truncate(&f->model, durable);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* the next restart keeps everything: the note is gone */
    append_n(f, 2);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    plog_fixture_kill(f);
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* An unclean open on a disk whose fsync fails, each fsync of the open in
 * turn (and every one after it): either the open fails, as an fsync of
 * the recovery (index files) always made it, or the log opens offline
 * with nothing past its recovery point counted durable and no cut noted
 * (where the last good fsync ended is unknown: acknowledged records may
 * lie past the recovery point). Never online with unsynced bytes counted.
 * Once fsync works, plog_recover keeps everything and counts it. */
static void test_unclean_open_on_failing_disk_counts_nothing(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long nth;
    int offline = 0;
    int opened = 0;
    int64_t before;
    int64_t after;
    int64_t end;
    int rv;

    open_log(f);
    append_n(f, 4);
    end = plog_end_offset(f->log);
    plog_fixture_kill(f);
    for (nth = 1; nth < 20; nth++) {
        mem_storage_fail(f->ms, MEM_OP_FSYNC, nth, EIO, 0, true);
        rv = plog_fixture_open(f, 2000);
        if (rv != 0 || mem_storage_failed(f->ms) == 0) {
            mem_storage_fail_clear(f->ms);
            if (rv == 0) {
                opened++; /* no fsync failed: a normal open */
                assert_true(plog_durable_offset(f->log) == end);
                plog_fixture_kill(f);
            }
            continue;
        }
        mem_storage_fail_clear(f->ms);
        assert_true(plog_is_offline(f->log));
        assert_true(plog_durable_offset(f->log) == 0);
        assert_int_equal(
            f->ops->exists(f->ops->ctx,
                           plog_fixture_path(PLOG_FSYNC_FAILED_CHECKPOINT)),
            0);
        assert_int_equal(plog_recover(f->log, 3000, &before, &after, &f->ed),
                         0);
        assert_true(after == end);
        assert_true(plog_durable_offset(f->log) == end);
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
        offline++;
        plog_fixture_kill(f);
    }
    assert_true(offline > 0);
    assert_true(opened > 0); /* the sweep went past the last fsync */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_unclean_open_fsyncs_what_it_counts_durable, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_restart_after_failed_fsync_cuts_to_durable, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_unclean_open_on_failing_disk_counts_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offline_cause_follows_the_error,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_append_takes_log_offline,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_each_failing_call_takes_log_offline, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_after_failed_fsync_cuts_to_durable, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_recover_after_failed_write_keeps_written_records, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_recover_fails_while_disk_fails,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_any_failing_call_is_offline_or_harmless, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
