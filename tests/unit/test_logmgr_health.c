/* SPDX-License-Identifier: Apache-2.0 */
/* The data directory's health over memory storage: every partition log,
 * including those created later, carries the offline hook; the scrub goes
 * round robin over partitions within its budget and a corrupt one goes
 * offline without stopping the others; housekeeping leaves offline logs
 * alone and retention and compaction stop where the caller's high
 * watermark says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/logmgr.h"
#include "broker/storage/plog_int.h"
#include "common/batch.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/mem_storage.h"

#define DATA "/data"

struct fx {
    struct mem_storage *ms;
    const struct storage_ops *ops;
    struct plog_config defaults;
    struct logmgr *m;
    struct err_detail ed;
    int hooks;
    int opened;
};

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof(f));
    f.ms = mem_storage_new();
    f.ops = mem_storage_ops(f.ms);
    plog_config_defaults(&f.defaults);
    f.defaults.segment_bytes = 2048;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    logmgr_close(f->m);
    mem_storage_free(f->ms);
    return 0;
}

static void fx_open(struct fx *f)
{
    assert_int_equal(
        logmgr_open(f->ops, DATA, &f->defaults, 1000, &f->m, &f->ed), 0);
}

static void count_opened(void *arg)
{
    ((struct fx *)arg)->opened++;
}

static void count_hook(void *arg, struct plog *log)
{
    (void)log;
    ((struct fx *)arg)->hooks++;
}

static void append_to(struct fx *f, const char *topic, int32_t p, int n)
{
    struct plog *log = logmgr_partition(f->m, topic, p);
    struct weir_buf b;
    int64_t base;
    int64_t last;
    int i;

    for (i = 0; i < n; i++) {
        buf_init(&b);
        assert_int_equal(batch_gen_make(&b, (uint32_t)i + 1, 2, 1000, 1, 200),
                         0);
        assert_int_equal(
            plog_append(log, b.data, b.len, 0, 1000, &base, &last, &f->ed), 0);
        buf_fini(&b);
    }
    assert_int_equal(plog_flush(log, &f->ed), 0);
}

static void test_every_log_carries_the_hook(void **state)
{
    struct fx *f = *state;

    fx_open(f);
    assert_int_equal(
        logmgr_create_topic(f->m, "a", 2, 1, NULL, 0, false, 1000, &f->ed), 0);
    logmgr_set_offline_hook(f->m, count_hook, f);
    assert_int_equal(
        logmgr_create_topic(f->m, "b", 1, 1, NULL, 0, false, 1000, &f->ed), 0);
    plog_mark_offline(logmgr_partition(f->m, "a", 1), WEIR_EIO, "test");
    plog_mark_offline(logmgr_partition(f->m, "b", 0), WEIR_EIO, "test");
    plog_mark_offline(logmgr_partition(f->m, "b", 0), WEIR_EIO, "again");
    assert_int_equal(f->hooks, 2);
    assert_string_equal(plog_offline_reason(logmgr_partition(f->m, "b", 0)),
                        "test");
}

/* Flip a byte inside the CRC of the second batch of segment 0. */
static void corrupt(struct fx *f, const char *dir)
{
    char path[256];
    struct weir_buf b;
    uint64_t pos;
    uint8_t x;

    (void)snprintf(path, sizeof(path), "%s/%s/%020d.log", DATA, dir, 0);
    buf_init(&b);
    assert_int_equal(mem_storage_read_raw(f->ms, path, &b), 0);
    pos = BATCH_LOG_OVERHEAD + wire_get_u32be(b.data + 8);
    x = b.data[pos + BATCH_HEADER_BYTES + 10] ^ 0x01;
    buf_fini(&b);
    assert_int_equal(mem_storage_write_raw(
                         f->ms, path, pos + BATCH_HEADER_BYTES + 10, &x, 1),
                     0);
}

static void test_scrub_goes_round_robin_past_a_corrupt_log(void **state)
{
    struct fx *f = *state;
    bool more = true;
    uint64_t checked;
    uint64_t total = 0;
    int32_t p;
    int calls = 0;

    fx_open(f);
    assert_int_equal(
        logmgr_create_topic(f->m, "t", 3, 1, NULL, 0, false, 1000, &f->ed), 0);
    for (p = 0; p < 3; p++) {
        append_to(f, "t", p, 30);
    }
    logmgr_close(f->m);
    corrupt(f, "t-1");
    fx_open(f);
    do {
        assert_int_equal(logmgr_scrub(f->m, 3000, &checked, &more, &f->ed), 0);
        assert_true(checked <= 3000 + 400);
        total += checked;
        calls++;
    } while (more && calls < 1000);
    assert_false(more);
    /* done: nothing left, so the broker's timer stops */
    assert_int_equal(logmgr_scrub(f->m, 3000, &checked, &more, &f->ed), 0);
    assert_false(more);
    assert_int_equal(checked, 0);
    /* a topic created since has logs to check: its creation says so */
    logmgr_set_opened_hook(f->m, count_opened, f);
    assert_int_equal(
        logmgr_create_topic(f->m, "u", 2, 1, NULL, 0, false, 1000, &f->ed), 0);
    assert_int_equal(f->opened, 2);
    assert_int_equal(logmgr_scrub(f->m, 3000, &checked, &more, &f->ed), 0);
    assert_false(more);
    assert_true(plog_verified(logmgr_partition(f->m, "u", 1)));
    assert_true(calls > 3);
    assert_true(plog_verified(logmgr_partition(f->m, "t", 0)));
    assert_true(plog_is_offline(logmgr_partition(f->m, "t", 1)));
    assert_int_equal(plog_offline_cause(logmgr_partition(f->m, "t", 1)),
                     PLOG_OFFLINE_CORRUPT);
    assert_true(plog_verified(logmgr_partition(f->m, "t", 2)));
    assert_true(total > 2 * plog_size_bytes(logmgr_partition(f->m, "t", 0)));
}

static int64_t
keep_at(void *arg, const char *topic, int32_t partition, const struct plog *log)
{
    (void)topic;
    (void)partition;
    (void)log;
    return *(int64_t *)arg;
}

static void test_housekeeping_skips_offline_and_keeps_above_hw(void **state)
{
    struct fx *f = *state;
    struct plog *a;
    struct plog *b;
    int64_t hw = 10;
    uint64_t free_bytes;

    f->defaults.retention_bytes = 1; /* everything closed may go */
    fx_open(f);
    assert_int_equal(
        logmgr_create_topic(f->m, "t", 2, 1, NULL, 0, false, 1000, &f->ed), 0);
    append_to(f, "t", 0, 40);
    append_to(f, "t", 1, 40);
    a = logmgr_partition(f->m, "t", 0);
    b = logmgr_partition(f->m, "t", 1);
    assert_true(plog_segment_count(a) > 3);
    plog_mark_offline(b, WEIR_EIO, "test");
    assert_int_equal(logmgr_housekeep(f->m, 2000, keep_at, &hw, &f->ed), 0);
    /* only segments wholly below offset 10 went */
    assert_true(plog_start_offset(a) <= 10);
    assert_true(plog_start_offset(a) > 0);
    assert_true(a->segs[0]->next_offset > 10);
    assert_true(plog_start_offset(b) == 0); /* offline: untouched */
    hw = plog_end_offset(a);
    assert_int_equal(logmgr_housekeep(f->m, 2000, keep_at, &hw, &f->ed), 0);
    assert_int_equal(plog_segment_count(a), 1);
    mem_storage_set_free_bytes(f->ms, 12345);
    assert_int_equal(logmgr_free_bytes(f->m, &free_bytes, &f->ed), 0);
    assert_true(free_bytes == 12345);
}

/* Compaction stops at the same bound: only segments wholly below the
 * caller's high watermark are cleaned, and what lies above it (every
 * record has key k0 or k1, so each later one supersedes the earlier)
 * decides nothing. */
static void test_compaction_stops_at_the_callers_high_watermark(void **state)
{
    struct fx *f = *state;
    uint64_t sizes[64];
    struct plog *a;
    int64_t hw;
    uint32_t i;

    f->defaults.cleanup_policy = PLOG_CLEANUP_COMPACT;
    f->defaults.min_cleanable_dirty_ratio = 0.0;
    fx_open(f);
    assert_int_equal(
        logmgr_create_topic(f->m, "c", 1, 1, NULL, 0, false, 1000, &f->ed), 0);
    append_to(f, "c", 0, 40);
    a = logmgr_partition(f->m, "c", 0);
    assert_true(plog_segment_count(a) > 3 && plog_segment_count(a) < 64);
    for (i = 0; i < plog_segment_count(a); i++) {
        sizes[i] = a->segs[i]->size;
    }
    hw = a->segs[1]->base_offset + 1; /* inside the second segment */
    assert_int_equal(logmgr_housekeep(f->m, 2000, keep_at, &hw, &f->ed), 0);
    assert_true(a->segs[0]->size < sizes[0]);
    for (i = 1; i < plog_segment_count(a); i++) {
        assert_int_equal(a->segs[i]->size, sizes[i]);
    }
    hw = plog_end_offset(a);
    assert_int_equal(logmgr_housekeep(f->m, 2000, keep_at, &hw, &f->ed), 0);
    assert_true(a->segs[1]->size < sizes[1]);
    assert_int_equal(plog_check_invariants(a, &f->ed), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_compaction_stops_at_the_callers_high_watermark, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_every_log_carries_the_hook, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_scrub_goes_round_robin_past_a_corrupt_log, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_housekeeping_skips_offline_and_keeps_above_hw, setup,
            teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
