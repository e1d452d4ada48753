/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotence joined to storage: producer id blocks that survive restarts
 * and never repeat an id, and partition state rebuilt from a real log
 * (memory storage) - equal to the live state, bounded by the expiry
 * window, rebuilt when the log is replaced, and repaired after an append
 * that failed half way. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/idem/idem_io.h"
#include "broker/idem/idem_pid.h"
#include "common/batch.h"
#include "common/mem.h"
#include "tests/lib/plog_fixture.h"

#define DAY_MS (24LL * 3600 * 1000)
#define NOW_MS (1700000000000LL)

struct fx {
    struct plog_fixture pf;
    struct idem_io *io;
    struct weir_buf payload;
    struct err_detail ed;
};

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof(f));
    plog_fixture_init(&f.pf);
    buf_init(&f.payload);
    if (idem_io_new(DAY_MS, &f.io) != 0) {
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    idem_io_free(f->io);
    buf_fini(&f->payload);
    plog_fixture_fini(&f->pf);
    return 0;
}

/* Add one batch of n records to f->payload. */
static void add_batch(struct fx *f,
                      int64_t pid,
                      int16_t epoch,
                      int32_t seq,
                      int32_t n,
                      int64_t ts)
{
    struct batch_builder bb;
    struct weir_slice s;
    int32_t i;

    batch_builder_init(&bb);
    for (i = 0; i < n; i++) {
        assert_int_equal(
            batch_builder_add(&bb, ts, "k", 1, "value", 5, NULL, 0), 0);
    }
    bb.producer_id = pid;
    bb.producer_epoch = epoch;
    bb.base_sequence = seq;
    assert_int_equal(batch_builder_finish(&bb, &s), 0);
    buf_put(&f->payload, s.p, s.len);
    batch_builder_fini(&bb);
}

/* Check f->payload against (t, 0) on log, append it when told to; the
 * verdict comes back with the offsets of a duplicate or of the append. */
static struct idem_check_result
produce_to(struct fx *f, struct plog *log, int64_t wall_ms)
{
    struct idem_io_payload p;
    int64_t base;
    int64_t last;

    assert_int_equal(idem_io_check(f->io, "t", 0, log, wall_ms, f->payload.data,
                                   f->payload.len, &p, &f->ed),
                     0);
    if (p.res.verdict == IDEM_VERDICT_APPEND) {
        assert_int_equal(plog_append(log, f->payload.data, f->payload.len, 0,
                                     wall_ms, &base, &last, &f->ed),
                         0);
        idem_io_appended(&p, base);
        p.res.base_offset = base;
        p.res.last_offset = last;
    }
    idem_io_payload_fini(&p);
    buf_reset(&f->payload);
    return p.res;
}

static struct idem_check_result produce(struct fx *f, int64_t wall_ms)
{
    return produce_to(f, f->pf.log, wall_ms);
}

/* The state of (t, 0) as the registry holds it. */
static struct idem *state_of(struct fx *f, struct idem_io *io)
{
    struct idem_io_payload p;
    struct idem *s;

    add_batch(f, 999999, 0, 0, 1, NOW_MS); /* never appended */
    assert_int_equal(idem_io_check(io, "t", 0, f->pf.log, NOW_MS,
                                   f->payload.data, f->payload.len, &p, &f->ed),
                     0);
    s = p.state;
    idem_io_payload_fini(&p);
    buf_reset(&f->payload);
    return s;
}

static void test_pid_blocks_survive_restart(void **state)
{
    struct fx *f = *state;
    struct idem_pid_file pf;
    struct idem_pid_source src;
    struct idem_pid a;
    int64_t id;
    int i;

    assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data", 0, &f->ed), 0);
    idem_pid_file_source(&pf, &src);
    idem_pid_init(&a, &src);
    for (i = 0; i < 3; i++) {
        assert_int_equal(idem_pid_next(&a, &id, &f->ed), 0);
        assert_int_equal(id, i);
    }
    /* a crash loses nothing that was handed out: the block was durable */
    mem_storage_crash(f->pf.ms);
    assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data", 0, &f->ed), 0);
    idem_pid_file_source(&pf, &src);
    idem_pid_init(&a, &src);
    for (i = 0; i < IDEM_PID_BLOCK_SIZE + 1; i++) {
        assert_int_equal(idem_pid_next(&a, &id, &f->ed), 0);
        assert_int_equal(id, IDEM_PID_BLOCK_SIZE + i);
    }
    assert_int_equal(mem_storage_size_of(f->pf.ms, "/data/producer-id-block"),
                     strlen("next=3000\n"));
}

static void test_pid_space_is_split_by_broker(void **state)
{
    struct fx *f = *state;
    struct idem_pid_file pf;
    struct idem_pid_source src;
    struct idem_pid a;
    int64_t id;

    assert_int_equal(idem_pid_first_for_broker(0), 0);
    assert_int_equal(idem_pid_first_for_broker(3), 3LL << 40);
    assert_true(idem_pid_first_for_broker(INT32_MAX) >= 0);
    assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data",
                                        idem_pid_first_for_broker(2), &f->ed),
                     0);
    idem_pid_file_source(&pf, &src);
    idem_pid_init(&a, &src);
    assert_int_equal(idem_pid_next(&a, &id, &f->ed), 0);
    assert_int_equal(id, 2LL << 40);
    /* once the file exists it decides, whatever the start would be */
    assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data", 0, &f->ed), 0);
    assert_int_equal(pf.next_block, (2LL << 40) + IDEM_PID_BLOCK_SIZE);
}

static void test_pid_file_in_doubt_is_refused(void **state)
{
    struct fx *f = *state;
    static const char *bad[] = {"garbage", "next=-5\n", "next=12", "next=\n",
                                "next=1x\n"};
    struct idem_pid_file pf;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(storage_write_atomic(f->pf.ops, "/data",
                                              "/data/producer-id-block", bad[i],
                                              strlen(bad[i]), &f->ed),
                         0);
        assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data", 0, &f->ed),
                         WEIR_ECORRUPT);
        assert_non_null(strstr(f->ed.msg, "producer-id-block"));
    }
}

static void test_pid_write_failure_hands_out_nothing(void **state)
{
    struct fx *f = *state;
    struct idem_pid_file pf;
    struct idem_pid_source src;
    struct idem_pid a;
    int64_t id = -1;

    assert_int_equal(idem_pid_file_open(&pf, f->pf.ops, "/data", 0, &f->ed), 0);
    idem_pid_file_source(&pf, &src);
    idem_pid_init(&a, &src);
    mem_storage_fail(f->pf.ms, MEM_OP_FSYNC, 1, EIO, 0, false);
    assert_int_equal(idem_pid_next(&a, &id, &f->ed), WEIR_EIO);
    assert_int_equal(id, -1);
    assert_non_null(strstr(f->ed.msg, "producer id block"));
    mem_storage_fail_clear(f->pf.ms);
    assert_int_equal(idem_pid_next(&a, &id, &f->ed), 0);
    assert_int_equal(id, 0);
}

static void test_state_is_rebuilt_from_the_log(void **state)
{
    struct fx *f = *state;
    struct idem_check_result r;
    struct idem_io *fresh;
    int32_t k;

    f->pf.cfg.segment_bytes = 1024;
    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    for (k = 0; k < 30; k++) { /* two producers, plain batches between */
        add_batch(f, 1 + k % 2, 0, (k / 2) * 3, 3, NOW_MS);
        if (k % 5 == 0) {
            add_batch(f, -1, -1, -1, 2, NOW_MS);
        }
        assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    }
    assert_true(plog_segment_count(f->pf.log) > 1);
    /* a registry that never saw the appends builds the same state */
    assert_int_equal(idem_io_new(DAY_MS, &fresh), 0);
    assert_true(idem_equal(state_of(f, f->io), state_of(f, fresh)));
    idem_io_free(fresh);
    /* and after a restart of the log too */
    plog_fixture_kill(&f->pf);
    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    idem_io_invalidate(f->io, "t", 0);
    add_batch(f, 2, 0, 14 * 3, 3, NOW_MS); /* the last batch of producer 2 */
    r = produce(f, NOW_MS);
    assert_int_equal(r.verdict, IDEM_VERDICT_DUPLICATE);
    assert_int_equal(r.last_offset + 1, plog_end_offset(f->pf.log));
    add_batch(f, 1, 0, 16 * 3, 3, NOW_MS); /* a gap for producer 1 */
    assert_int_equal(produce(f, NOW_MS).code, WEIR_EOUT_OF_ORDER_SEQUENCE);
    add_batch(f, 1, 0, 15 * 3, 3, NOW_MS);
    assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
}

static void test_rebuild_reads_only_the_expiry_window(void **state)
{
    struct fx *f = *state;
    int64_t old = NOW_MS - 3 * DAY_MS;
    int32_t k;

    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    for (k = 0; k < 20; k++) { /* producer 1, three days ago */
        add_batch(f, 1, 0, k * 20, 20, old);
        assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    }
    for (k = 0; k < 20; k++) { /* producer 2, now */
        add_batch(f, 2, 0, k, 1, NOW_MS);
        assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    }
    idem_io_invalidate(f->io, "t", 0);
    assert_null(idem_find(state_of(f, f->io), 1));
    assert_non_null(idem_find(state_of(f, f->io), 2));
    /* the forgotten producer must start over */
    add_batch(f, 1, 0, 400, 1, NOW_MS);
    assert_int_equal(produce(f, NOW_MS).code, WEIR_EUNKNOWN_PRODUCER_ID);
    /* producer 2 goes once it has been idle for a day */
    assert_int_equal(idem_io_expire(f->io, NOW_MS), 0);
    assert_int_equal(idem_io_expire(f->io, NOW_MS + 2 * DAY_MS), 1);
}

static void test_replaced_log_is_not_reused(void **state)
{
    struct fx *f = *state;
    struct plog *other;

    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    assert_int_equal(plog_open(f->pf.ops, "/data/t-0.new", &f->pf.cfg, NOW_MS,
                               &other, &f->ed),
                     0);
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_DUPLICATE);
    /* same topic and partition, another log (deleted and created again) */
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    assert_int_equal(produce_to(f, other, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    idem_io_drop_topic(f->io, "t");
    add_batch(f, 1, 0, 2, 2, NOW_MS);
    assert_int_equal(produce_to(f, other, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    plog_free(other);
}

/* An append that wrote part of a payload before failing: the part that
 * reached the log is a duplicate for the retry. */
static void test_partial_append_is_replayed(void **state)
{
    struct fx *f = *state;
    struct idem_io_payload p;
    struct idem_check_result r;
    int64_t end_before;
    int64_t base;
    int64_t last;
    size_t first_len;

    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    first_len = f->payload.len;
    add_batch(f, 1, 0, 2, 2, NOW_MS);
    assert_int_equal(idem_io_check(f->io, "t", 0, f->pf.log, NOW_MS,
                                   f->payload.data, f->payload.len, &p, &f->ed),
                     0);
    assert_int_equal(p.res.verdict, IDEM_VERDICT_APPEND);
    /* only the first batch makes it */
    end_before = plog_end_offset(f->pf.log);
    assert_int_equal(plog_append(f->pf.log, f->payload.data, first_len, 0,
                                 NOW_MS, &base, &last, &f->ed),
                     0);
    idem_io_append_failed(f->io, &p, "t", 0, f->pf.log, end_before);
    idem_io_payload_fini(&p);
    buf_reset(&f->payload);
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    r = produce(f, NOW_MS);
    assert_int_equal(r.verdict, IDEM_VERDICT_DUPLICATE);
    assert_int_equal(r.base_offset, 0);
    add_batch(f, 1, 0, 2, 2, NOW_MS);
    assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
}

/* Fail each allocation of a first use (registry entry, state, scan
 * buffer, table) in turn: WEIR_ENOMEM, nothing half built, and the next
 * try succeeds. */
static void test_out_of_memory_while_building(void **state)
{
    struct fx *f = *state;
    struct idem_io_payload p;
    unsigned long n;
    int32_t k;
    int rv;

    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    for (k = 0; k < 12; k++) { /* more than the inline headers hold */
        add_batch(f, 1, 0, k, 1, NOW_MS);
    }
    assert_int_equal(produce(f, NOW_MS).verdict, IDEM_VERDICT_APPEND);
    for (k = 12; k < 24; k++) { /* the next twelve */
        add_batch(f, 1, 0, k, 1, NOW_MS);
    }
    for (n = 1;; n++) {
        idem_io_invalidate(f->io, "t", 0);
        mem_fault_set(n, 0);
        rv = idem_io_check(f->io, "t", 0, f->pf.log, NOW_MS, f->payload.data,
                           f->payload.len, &p, &f->ed);
        mem_fault_set(0, 0);
        idem_io_payload_fini(&p);
        if (rv == 0) {
            break;
        }
        assert_int_equal(rv, WEIR_ENOMEM);
    }
    assert_true(n > 3);
    assert_int_equal(p.res.verdict, IDEM_VERDICT_APPEND);
    assert_int_equal(p.res.n_idempotent, 12);
    assert_int_equal(idem_find(p.state, 1)->batches[4].last_seq, 11);
}

static void test_undecodable_payload_is_left_to_the_append(void **state)
{
    struct fx *f = *state;
    struct idem_io_payload p;

    assert_int_equal(plog_fixture_open(&f->pf, NOW_MS), 0);
    add_batch(f, 1, 0, 0, 2, NOW_MS);
    f->payload.len -= 3; /* cut short */
    assert_int_equal(idem_io_check(f->io, "t", 0, f->pf.log, NOW_MS,
                                   f->payload.data, f->payload.len, &p, &f->ed),
                     0);
    assert_int_equal(p.res.verdict, IDEM_VERDICT_APPEND);
    assert_null(p.state);
    idem_io_payload_fini(&p);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_pid_blocks_survive_restart),
        T(test_pid_space_is_split_by_broker),
        T(test_pid_file_in_doubt_is_refused),
        T(test_pid_write_failure_hands_out_nothing),
        T(test_state_is_rebuilt_from_the_log),
        T(test_rebuild_reads_only_the_expiry_window),
        T(test_replaced_log_is_not_reused),
        T(test_partial_append_is_replayed),
        T(test_out_of_memory_while_building),
        T(test_undecodable_payload_is_left_to_the_append),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
