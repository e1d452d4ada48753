/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-epoch cache: assign / lookup / truncation as Kafka's
 * LeaderEpochFileCache, and the checkpoint codec (canonical text, every
 * deviation refused with WEIR_ECORRUPT, failures leave the cache as it
 * was, allocation failures handled). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/replica/repl_epochs.h"
#include "common/mem.h"

struct ep_pair {
    int32_t epoch;
    int64_t start;
};

static void ep_fill(struct repl_epochs *c, const struct ep_pair *e, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        assert_int_equal(repl_epochs_assign(c, e[i].epoch, e[i].start), 0);
    }
    assert_int_equal(repl_epochs_check_invariants(c), 0);
}

static void
ep_expect(const struct repl_epochs *c, const struct ep_pair *e, size_t n)
{
    size_t i;

    assert_int_equal(repl_epochs_check_invariants(c), 0);
    assert_int_equal(repl_epochs_count(c), n);
    for (i = 0; i < n; i++) {
        assert_int_equal(repl_epochs_entry(c, (uint32_t)i)->epoch, e[i].epoch);
        assert_int_equal(repl_epochs_entry(c, (uint32_t)i)->start_offset,
                         e[i].start);
    }
}

static void ep_expect_end(const struct repl_epochs *c,
                          int32_t asked,
                          int64_t leo,
                          int32_t epoch,
                          int64_t end)
{
    struct repl_epoch_end r = repl_epochs_end_offset_for(c, asked, leo);

    assert_int_equal(r.epoch, epoch);
    assert_int_equal(r.end_offset, end);
}

static void test_assign_appends_newer_epochs(void **state)
{
    static const struct ep_pair want[] = {{1, 0}, {3, 10}, {4, 25}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    assert_int_equal(repl_epochs_latest_epoch(&c), REPL_EPOCH_NONE);
    ep_fill(&c, want, 3);
    ep_expect(&c, want, 3);
    assert_int_equal(repl_epochs_latest_epoch(&c), 4);
    assert_int_equal(repl_epochs_start_offset(&c, 3), 10);
    assert_int_equal(repl_epochs_start_offset(&c, 2), REPL_OFFSET_NONE);
    assert_null(repl_epochs_entry(&c, 3));
    repl_epochs_fini(&c);
}

static void test_assign_ignores_duplicate_and_stale_epochs(void **state)
{
    static const struct ep_pair want[] = {{2, 0}, {5, 40}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, want, 2);
    /* later batches of the latest epoch: already known */
    assert_int_equal(repl_epochs_assign(&c, 5, 41), 0);
    assert_int_equal(repl_epochs_assign(&c, 5, 90), 0);
    /* same epoch with an earlier start: still the first assign wins */
    assert_int_equal(repl_epochs_assign(&c, 5, 30), 0);
    /* an older epoch after a newer one: stale */
    assert_int_equal(repl_epochs_assign(&c, 3, 100), 0);
    assert_int_equal(repl_epochs_assign(&c, 2, 100), 0);
    ep_expect(&c, want, 2);
    repl_epochs_fini(&c);
}

static void test_assign_supersedes_entries_at_or_after_start(void **state)
{
    static const struct ep_pair init[] = {{1, 0}, {2, 10}, {3, 20}};
    static const struct ep_pair same_start[] = {{1, 0}, {2, 10}, {4, 20}};
    static const struct ep_pair earlier[] = {{1, 0}, {5, 5}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, init, 3);
    /* epoch 3 was recorded at 20 but never wrote: epoch 4 replaces it */
    assert_int_equal(repl_epochs_assign(&c, 4, 20), 0);
    ep_expect(&c, same_start, 3);
    /* a newer epoch starting below existing entries drops them all */
    assert_int_equal(repl_epochs_assign(&c, 5, 5), 0);
    ep_expect(&c, earlier, 2);
    /* and one starting at 0 replaces everything */
    assert_int_equal(repl_epochs_assign(&c, 6, 0), 0);
    assert_int_equal(repl_epochs_count(&c), 1);
    assert_int_equal(repl_epochs_entry(&c, 0)->epoch, 6);
    repl_epochs_fini(&c);
}

static void test_assign_rejects_negative_values(void **state)
{
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    assert_int_equal(repl_epochs_assign(&c, -1, 0), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(repl_epochs_assign(&c, 0, -1), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(repl_epochs_count(&c), 0);
    assert_int_equal(repl_epochs_assign(&c, 0, 0), 0);
    assert_int_equal(repl_epochs_count(&c), 1);
    repl_epochs_fini(&c);
}

static void test_end_offset_for_follows_kafka(void **state)
{
    static const struct ep_pair init[] = {{1, 0}, {3, 10}, {6, 25}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    ep_expect_end(&c, 3, 50, REPL_EPOCH_NONE, REPL_OFFSET_NONE); /* empty */
    ep_fill(&c, init, 3);
    /* an epoch we have ends where the next one starts */
    ep_expect_end(&c, 1, 50, 1, 10);
    ep_expect_end(&c, 3, 50, 3, 25);
    /* the latest ends at the log end offset */
    ep_expect_end(&c, 6, 50, 6, 50);
    /* an epoch we lack: the largest one below it */
    ep_expect_end(&c, 2, 50, 1, 10);
    ep_expect_end(&c, 5, 50, 3, 25);
    /* newer than anything: our latest and the LEO */
    ep_expect_end(&c, 9, 50, 6, 50);
    /* older than anything: the asked epoch ends where our history starts */
    repl_epochs_truncate_from_start(&c, 12);
    ep_expect_end(&c, 2, 50, 2, 12);
    ep_expect_end(&c, 0, 50, 0, 12);
    /* no such thing as a negative epoch */
    ep_expect_end(&c, REPL_EPOCH_NONE, 50, REPL_EPOCH_NONE, REPL_OFFSET_NONE);
    repl_epochs_fini(&c);
}

static void test_truncate_from_end_drops_entries_at_or_after(void **state)
{
    static const struct ep_pair init[] = {{1, 0}, {3, 10}, {6, 25}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, init, 3);
    assert_int_equal(repl_epochs_truncate_from_end(&c, 30), 0);
    ep_expect(&c, init, 3);
    /* an entry starting exactly at the cut has no record left */
    assert_int_equal(repl_epochs_truncate_from_end(&c, 25), 1);
    ep_expect(&c, init, 2);
    assert_int_equal(repl_epochs_truncate_from_end(&c, 11), 0);
    ep_expect(&c, init, 2);
    assert_int_equal(repl_epochs_truncate_from_end(&c, 0), 2);
    assert_int_equal(repl_epochs_count(&c), 0);
    assert_int_equal(repl_epochs_truncate_from_end(&c, 0), 0);
    repl_epochs_fini(&c);
}

static void test_truncate_from_start_keeps_covering_entry(void **state)
{
    static const struct ep_pair init[] = {{1, 0}, {3, 10}, {6, 25}};
    static const struct ep_pair mid[] = {{3, 17}, {6, 25}};
    static const struct ep_pair at[] = {{6, 25}};
    static const struct ep_pair past[] = {{6, 40}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, init, 3);
    assert_int_equal(repl_epochs_truncate_from_start(&c, 0), 0);
    ep_expect(&c, init, 3);
    assert_int_equal(repl_epochs_truncate_from_start(&c, 17), 1);
    ep_expect(&c, mid, 2);
    assert_int_equal(repl_epochs_truncate_from_start(&c, 25), 1);
    ep_expect(&c, at, 1);
    assert_int_equal(repl_epochs_truncate_from_start(&c, 40), 0);
    ep_expect(&c, past, 1);
    /* before the first entry: nothing to do */
    assert_int_equal(repl_epochs_truncate_from_start(&c, 3), 0);
    ep_expect(&c, past, 1);
    repl_epochs_clear(&c);
    assert_int_equal(repl_epochs_truncate_from_start(&c, 3), 0);
    assert_int_equal(repl_epochs_count(&c), 0);
    repl_epochs_fini(&c);
}

/* A log as batch headers (epoch, base), for the rebuild below. */
struct ep_batch {
    int32_t epoch;
    int64_t base;
};

/* What the adapter does on load: reconcile, then feed the headers from
 * where it says. Returns the scan start. */
static int64_t ep_rebuild(struct repl_epochs *c,
                          const struct ep_batch *log,
                          size_t n,
                          int64_t start,
                          int64_t end)
{
    int64_t from = repl_epochs_reconcile(
        c, start, end, n > 0 ? log[n - 1].epoch : REPL_EPOCH_NONE);
    size_t i;

    for (i = 0; from != REPL_OFFSET_NONE && i < n; i++) {
        if (log[i].base >= from) {
            assert_int_equal(repl_epochs_assign(c, log[i].epoch, log[i].base),
                             0);
        }
    }
    assert_int_equal(repl_epochs_check_invariants(c), 0);
    return from;
}

static void test_reconcile_rebuilds_what_the_checkpoint_lacks(void **state)
{
    /* batches of epochs 1, 1, 3, 3, 4 from offset 0; log end 50 */
    static const struct ep_batch log[] = {
        {1, 0}, {1, 10}, {3, 20}, {3, 30}, {4, 40}};
    static const struct ep_pair full[] = {{1, 0}, {3, 20}, {4, 40}};
    static const struct ep_pair stale[] = {{1, 0}, {3, 20}};
    static const struct ep_pair empty_epoch[] = {
        {1, 0}, {3, 20}, {4, 40}, {6, 50}};
    static const struct ep_pair foreign[] = {{1, 0}, {9, 45}};
    static const struct ep_batch kept[] = {{1, 0}, {1, 10}, {3, 20}};
    static const struct ep_pair kept_epochs[] = {{3, 20}};
    struct repl_epochs c;

    (void)state;
    repl_epochs_init(&c);
    /* the checkpoint agrees: nothing to read but the last header */
    ep_fill(&c, full, 3);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == REPL_OFFSET_NONE);
    ep_expect(&c, full, 3);
    /* missing or emptied checkpoint: rebuilt from every header */
    repl_epochs_clear(&c);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == 0);
    ep_expect(&c, full, 3);
    /* crash after flushing epoch 4's records, before the checkpoint: read
     * from the latest entry on */
    repl_epochs_clear(&c);
    ep_fill(&c, stale, 2);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == 20);
    ep_expect(&c, full, 3);
    /* an epoch recorded as leader without a record stays: that broker
     * must never lead it again (a follower drops it) */
    repl_epochs_clear(&c);
    ep_fill(&c, empty_epoch, 4);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == REPL_OFFSET_NONE);
    ep_expect(&c, empty_epoch, 4);
    /* ... unless the cache lags the log too (not reachable through
     * whole checkpoints): then it goes, so the scan can add epoch 4 */
    repl_epochs_clear(&c);
    ep_fill(&c, stale, 2);
    assert_int_equal(repl_epochs_assign(&c, 6, 50), 0);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == 20);
    ep_expect(&c, full, 3);
    /* a latest epoch the log does not end in: not this log's cache */
    repl_epochs_clear(&c);
    ep_fill(&c, foreign, 2);
    assert_true(ep_rebuild(&c, log, 5, 0, 50) == 0);
    ep_expect(&c, full, 3);
    /* retention moved the start past the latest entry's start */
    repl_epochs_clear(&c);
    assert_true(ep_rebuild(&c, kept, 3, 20, 30) == 20);
    ep_expect(&c, kept_epochs, 1);
    /* an empty log has nothing to describe: the cache stays */
    repl_epochs_clear(&c);
    ep_fill(&c, full, 3);
    assert_true(ep_rebuild(&c, log, 0, 40, 40) == REPL_OFFSET_NONE);
    ep_expect(&c, full, 3);
    repl_epochs_fini(&c);
}

static void test_copy_replaces_contents(void **state)
{
    static const struct ep_pair a[] = {{1, 0}, {2, 5}, {3, 9}};
    static const struct ep_pair b[] = {{7, 100}};
    struct repl_epochs x;
    struct repl_epochs y;

    (void)state;
    repl_epochs_init(&x);
    repl_epochs_init(&y);
    ep_fill(&x, a, 3);
    ep_fill(&y, b, 1);
    assert_int_equal(repl_epochs_copy(&y, &x), 0);
    ep_expect(&y, a, 3);
    assert_int_equal(repl_epochs_copy(&y, &y), 0);
    ep_expect(&y, a, 3);
    repl_epochs_clear(&x);
    assert_int_equal(repl_epochs_copy(&y, &x), 0);
    assert_int_equal(repl_epochs_count(&y), 0);
    repl_epochs_fini(&x);
    repl_epochs_fini(&y);
}

static void test_checkpoint_round_trip_is_exact(void **state)
{
    static const struct ep_pair init[] = {
        {0, 0}, {7, 12}, {2147483647, 9223372036854775807LL}};
    static const char want[] = "0\n3\n0 0\n7 12\n"
                               "2147483647 9223372036854775807\n";
    struct repl_epochs c;
    struct repl_epochs d;
    struct err_detail ed;
    struct weir_buf b;

    (void)state;
    repl_epochs_init(&c);
    repl_epochs_init(&d);
    buf_init(&b);
    ep_fill(&c, init, 3);
    assert_int_equal(repl_epochs_encode(&c, &b), 0);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    assert_int_equal(repl_epochs_decode(&d, b.data, b.len, &ed), 0);
    ep_expect(&d, init, 3);

    /* empty cache */
    buf_reset(&b);
    repl_epochs_clear(&c);
    assert_int_equal(repl_epochs_encode(&c, &b), 0);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "0\n0\n", 4);
    assert_int_equal(repl_epochs_decode(&d, b.data, b.len, &ed), 0);
    assert_int_equal(repl_epochs_count(&d), 0);
    buf_fini(&b);
    repl_epochs_fini(&c);
    repl_epochs_fini(&d);
}

static void test_checkpoint_garbage_is_corrupt_and_harmless(void **state)
{
    static const char *const bad[] = {
        "",                                  /* nothing */
        "0",                                 /* no newline */
        "0\n",                               /* no count */
        "1\n0\n",                            /* unknown version */
        "00\n0\n",                           /* leading zero */
        "-0\n0\n",                           /* sign */
        "0\n1\n",                            /* count without entries */
        "0\n1\n1 5",                         /* missing final newline */
        "0\n1\n1 5\n\n",                     /* trailing bytes */
        "0\n1\n1 5\n2 9\n",                  /* more entries than counted */
        "0\n2\n1 5\n",                       /* fewer */
        "0\n1\n1  5\n",                      /* double space */
        "0\n1\n1\t5\n",                      /* tab */
        "0\n1\n1 5\r\n",                     /* CRLF */
        "0\r\n1\n1 5\n",                     /* CRLF on the version */
        "0\n1\n -1 5\n",                     /* leading space */
        "0\n1\n-1 5\n",                      /* negative epoch */
        "0\n1\n1 -5\n",                      /* negative offset */
        "0\n1\n1 +5\n",                      /* plus sign */
        "0\n1\n01 5\n",                      /* leading zero in epoch */
        "0\n1\n1 05\n",                      /* leading zero in offset */
        "0\n1\n2147483648 5\n",              /* epoch > INT32_MAX */
        "0\n1\n1 9223372036854775808\n",     /* offset > INT64_MAX */
        "0\n1\n1 99999999999999999999999\n", /* way past */
        "0\n2\n3 5\n3 9\n",                  /* epoch not increasing */
        "0\n2\n3 5\n2 9\n",                  /* epoch going back */
        "0\n2\n3 5\n4 5\n",                  /* start not increasing */
        "0\n2\n3 5\n4 4\n",                  /* start going back */
        "0\n4294967296\n",                   /* count > UINT32_MAX */
        "0\n4294967295\n0 0\n",              /* count beyond the bytes */
        "0\n3\n0 0\n1 1\n",                  /* count beyond the bytes, close */
        "0\nx\n",                            /* not a number */
        "0\n1\n1 5 7\n",                     /* three fields */
        "0\n1\n1\n",                         /* one field */
    };
    static const struct ep_pair keep[] = {{4, 44}};
    struct repl_epochs c;
    struct err_detail ed;
    size_t i;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, keep, 1);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_detail_clear(&ed);
        if (repl_epochs_decode(&c, (const uint8_t *)bad[i], strlen(bad[i]),
                               &ed) != WEIR_ECORRUPT) {
            fail_msg("input %zu (\"%s\") was not refused as corrupt", i,
                     bad[i]);
        }
        assert_int_equal(ed.code, WEIR_ECORRUPT);
        assert_true(strlen(ed.msg) > 0);
        ep_expect(&c, keep, 1); /* untouched */
    }
    /* an embedded NUL is just another bad byte */
    assert_int_equal(
        repl_epochs_decode(&c, (const uint8_t *)"0\n1\n1\0005\n", 8, &ed),
        WEIR_ECORRUPT);
    ep_expect(&c, keep, 1);
    repl_epochs_fini(&c);
}

static void test_checkpoint_decode_replaces_contents(void **state)
{
    static const struct ep_pair old[] = {{1, 0}, {2, 7}, {3, 9}};
    static const struct ep_pair want[] = {{5, 100}};
    static const char text[] = "0\n1\n5 100\n";
    struct repl_epochs c;
    struct err_detail ed;

    (void)state;
    repl_epochs_init(&c);
    ep_fill(&c, old, 3);
    assert_int_equal(
        repl_epochs_decode(&c, (const uint8_t *)text, strlen(text), &ed), 0);
    ep_expect(&c, want, 1);
    repl_epochs_fini(&c);
}

/* OOM sweep: fail the Nth allocation, N = 1, 2, ... until a run goes
 * through. Every failed run reports ENOMEM and leaves the cache as it
 * was. */
static void test_allocation_failures_leave_cache_unchanged(void **state)
{
    static const char text[] = "0\n5\n1 0\n2 3\n3 6\n4 9\n5 12\n";
    static const struct ep_pair keep[] = {{9, 1}};
    struct repl_epochs c;
    struct err_detail ed;
    unsigned long n;
    int32_t e;
    int rv;

    (void)state;
    for (n = 1;; n++) {
        repl_epochs_init(&c);
        ep_fill(&c, keep, 1);
        mem_fault_set(n, 0);
        rv = repl_epochs_decode(&c, (const uint8_t *)text, strlen(text), &ed);
        mem_fault_set(0, 0);
        if (rv == 0) {
            assert_int_equal(repl_epochs_count(&c), 5);
            repl_epochs_fini(&c);
            break;
        }
        assert_int_equal(rv, WEIR_ENOMEM);
        ep_expect(&c, keep, 1);
        repl_epochs_fini(&c);
        assert_true(n < 100);
    }

    /* growing by assign: a failure keeps every entry */
    repl_epochs_init(&c);
    for (e = 0; e < 64; e++) {
        mem_fault_set(1, 0);
        rv = repl_epochs_assign(&c, e, (int64_t)e * 10);
        mem_fault_set(0, 0);
        if (rv == WEIR_ENOMEM) {
            assert_int_equal(repl_epochs_count(&c), (uint32_t)e);
            assert_int_equal(repl_epochs_assign(&c, e, (int64_t)e * 10), 0);
        } else {
            assert_int_equal(rv, 0);
        }
        assert_int_equal(repl_epochs_count(&c), (uint32_t)e + 1);
        assert_int_equal(repl_epochs_check_invariants(&c), 0);
    }
    repl_epochs_fini(&c);
}

static void test_invariant_check_catches_disorder(void **state)
{
    struct repl_epoch_entry e[2] = {{3, 10}, {2, 20}};
    struct repl_epochs c = {e, 2, 2};

    (void)state;
    assert_int_equal(repl_epochs_check_invariants(&c), WEIR_ECORRUPT);
    e[1].epoch = 4;
    e[1].start_offset = 10;
    assert_int_equal(repl_epochs_check_invariants(&c), WEIR_ECORRUPT);
    e[1].start_offset = 11;
    assert_int_equal(repl_epochs_check_invariants(&c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_appends_newer_epochs),
        cmocka_unit_test(test_assign_ignores_duplicate_and_stale_epochs),
        cmocka_unit_test(test_assign_supersedes_entries_at_or_after_start),
        cmocka_unit_test(test_assign_rejects_negative_values),
        cmocka_unit_test(test_end_offset_for_follows_kafka),
        cmocka_unit_test(test_truncate_from_end_drops_entries_at_or_after),
        cmocka_unit_test(test_truncate_from_start_keeps_covering_entry),
        cmocka_unit_test(test_reconcile_rebuilds_what_the_checkpoint_lacks),
        cmocka_unit_test(test_copy_replaces_contents),
        cmocka_unit_test(test_checkpoint_round_trip_is_exact),
        cmocka_unit_test(test_checkpoint_garbage_is_corrupt_and_harmless),
        cmocka_unit_test(test_checkpoint_decode_replaces_contents),
        cmocka_unit_test(test_allocation_failures_leave_cache_unchanged),
        cmocka_unit_test(test_invariant_check_catches_disorder),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
