/* SPDX-License-Identifier: Apache-2.0 */
/* Accumulator: batching by size and linger, retries, expiry, on an
 * explicit clock (times are arguments). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/accum.h"
#include "common/mem.h"

static const struct accum_config cfg = {
    .linger_ms = 10,
    .batch_size_bytes = 1024,
    .delivery_timeout_ms = 5000,
};

static void add(struct accum_queue *q, uint64_t now, size_t vlen)
{
    static char v[4096];

    memset(v, 'v', sizeof(v));
    assert_int_equal(accum_append(q, &cfg, now, 1000, "k", 1, v, vlen, NULL),
                     0);
}

static void test_small_batch_waits_for_linger(void **state)
{
    struct accum_queue q;
    uint64_t wake = UINT64_MAX;

    (void)state;
    accum_queue_init(&q, "t", 0);
    add(&q, 100, 10);
    add(&q, 105, 10);
    assert_false(accum_ready(&q, &cfg, 109, false, &wake));
    assert_int_equal(wake, 110); /* first record's time + linger */
    wake = UINT64_MAX;
    assert_true(accum_ready(&q, &cfg, 110, false, &wake));
    assert_int_equal(wake, UINT64_MAX);
    assert_int_equal(q.n_batches, 1);
    accum_queue_fini(&q);
}

static void test_full_batch_is_ready_at_once(void **state)
{
    struct accum_queue q;
    uint64_t wake = UINT64_MAX;
    struct accum_batch *b;
    int err;
    int i;

    (void)state;
    accum_queue_init(&q, "t", 3);
    for (i = 0; i < 10; i++) {
        add(&q, 100, 200); /* ~232 bytes each: 4 fit in 1024 */
    }
    assert_int_equal(q.n_batches, 3);
    assert_true(accum_ready(&q, &cfg, 100, false, &wake));
    b = accum_pop(&q, &err);
    assert_non_null(b);
    assert_true(b->closed);
    assert_true(b->bytes.len <= cfg.batch_size_bytes);
    assert_int_equal(b->count, 4);
    accum_batch_free(b);
    /* the second is closed too: it has a successor */
    assert_true(accum_ready(&q, &cfg, 100, false, &wake));
    b = accum_pop(&q, &err);
    assert_int_equal(b->count, 4);
    accum_batch_free(b);
    /* the open tail still lingers */
    wake = UINT64_MAX;
    assert_false(accum_ready(&q, &cfg, 105, false, &wake));
    assert_int_equal(wake, 110);
    accum_queue_fini(&q);
}

static void test_batch_closes_when_it_reaches_size(void **state)
{
    struct accum_queue q;
    uint64_t wake = UINT64_MAX;

    (void)state;
    accum_queue_init(&q, "t", 0);
    add(&q, 0, 2000); /* alone over the size: its own, closed batch */
    assert_int_equal(q.n_batches, 1);
    assert_true(q.head->closed);
    assert_true(accum_ready(&q, &cfg, 0, false, &wake));
    add(&q, 0, 10);
    assert_int_equal(q.n_batches, 2);
    accum_queue_fini(&q);
}

static void test_flush_makes_open_batch_ready(void **state)
{
    struct accum_queue q;
    uint64_t wake = UINT64_MAX;
    struct accum_batch *b;
    int err;

    (void)state;
    accum_queue_init(&q, "t", 0);
    add(&q, 100, 10);
    assert_false(accum_ready(&q, &cfg, 100, false, &wake));
    assert_true(accum_ready(&q, &cfg, 100, true, &wake));
    b = accum_pop(&q, &err);
    assert_non_null(b);
    assert_int_equal(err, 0);
    assert_true(b->closed); /* encoded on pop */
    assert_int_equal(b->bytes.len, accum_batch_bytes(b));
    assert_null(q.head);
    accum_batch_free(b);
    accum_queue_fini(&q);
}

static void test_retry_waits_and_keeps_order(void **state)
{
    struct accum_queue q;
    struct accum_batch *first;
    struct accum_batch *b;
    uint64_t wake = UINT64_MAX;
    int err;

    (void)state;
    accum_queue_init(&q, "t", 0);
    add(&q, 0, 10);
    first = accum_pop(&q, &err);
    add(&q, 1, 10); /* a newer batch arrives while the first is in flight */
    accum_requeue(&q, first, 200);
    assert_ptr_equal(q.head, first);
    assert_false(accum_ready(&q, &cfg, 50, false, &wake));
    assert_int_equal(wake, 200);
    assert_true(accum_ready(&q, &cfg, 200, false, &wake));
    b = accum_pop(&q, &err);
    assert_ptr_equal(b, first);
    accum_batch_free(b);
    b = accum_pop(&q, &err);
    assert_int_equal(b->seq, 1);
    accum_batch_free(b);
    accum_queue_fini(&q);
}

/* A new leader: the retry waiting out its backoff goes at once, still
 * ahead of the newer batch, and is still a retry. */
static void test_retry_now_after_leader_change(void **state)
{
    struct accum_queue q;
    struct accum_batch *first;
    struct accum_batch *b;
    uint64_t wake = UINT64_MAX;
    int err;

    (void)state;
    accum_queue_init(&q, "t", 0);
    assert_int_equal(q.stale_leader, -1);
    add(&q, 0, 10);
    first = accum_pop(&q, &err);
    add(&q, 1, 10);
    accum_requeue(&q, first, 1000);
    assert_false(accum_ready(&q, &cfg, 50, false, &wake));
    accum_retry_now(&q);
    assert_true(first->retry_at_ms != 0);
    assert_true(accum_ready(&q, &cfg, 50, false, &wake));
    b = accum_pop(&q, &err);
    assert_ptr_equal(b, first);
    accum_batch_free(b);
    b = accum_pop(&q, &err);
    assert_int_equal(b->seq, 1);
    assert_int_equal(b->retry_at_ms, 0); /* never sent: untouched */
    accum_batch_free(b);
    accum_queue_fini(&q);
}

static void test_expired_batches_come_out(void **state)
{
    struct accum_queue q;
    struct accum_batch *b;

    (void)state;
    accum_queue_init(&q, "t", 0);
    add(&q, 1000, 10);
    assert_null(accum_pop_expired(&q, 5999));
    b = accum_pop_expired(&q, 6000);
    assert_non_null(b);
    assert_int_equal(b->count, 1);
    accum_batch_free(b);
    assert_null(q.head);
    accum_queue_fini(&q);
}

static void test_batch_decodes_with_records_in_order(void **state)
{
    struct accum_queue q;
    struct accum_batch *b;
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    struct err_detail ed;
    int err;
    int i;

    (void)state;
    accum_queue_init(&q, "t", 0);
    for (i = 0; i < 3; i++) {
        add(&q, 0, (size_t)(i + 1));
    }
    b = accum_pop(&q, &err);
    assert_int_equal(batch_validate(b->bytes, 1u << 20, &h, &ed), 0);
    assert_int_equal(h.record_count, 3);
    assert_int_equal(batch_iter_init(&it, b->bytes, &ed), 0);
    for (i = 0; i < 3; i++) {
        assert_int_equal(batch_iter_next(&it, &rec), 1);
        assert_int_equal(rec.offset, i);
        assert_int_equal(rec.value.len, i + 1);
    }
    accum_batch_free(b);
    accum_queue_fini(&q);
}

/* Fail the Nth allocation for every N: appends either succeed or report
 * ENOMEM with nothing half-done (the count of records matches), and
 * nothing leaks (the sanitizer build checks). */
static void test_out_of_memory_sweep(void **state)
{
    static char v[300];
    unsigned long n;

    (void)state;
    for (n = 1; n < 200; n++) {
        struct accum_queue q;
        struct accum_batch *b;
        int32_t stored = 0;
        int ok = 0;
        int err;
        int i;

        accum_queue_init(&q, "t", 0);
        mem_fault_set(n, 0);
        for (i = 0; i < 20; i++) {
            int rv = accum_append(&q, &cfg, 0, 0, NULL, 0, v, sizeof(v), NULL);
            assert_true(rv == 0 || rv == WEIR_ENOMEM);
            ok += rv == 0;
        }
        mem_fault_set(0, 0);
        while ((b = accum_pop(&q, &err)) != NULL) {
            stored += b->count;
            accum_batch_free(b);
        }
        assert_int_equal(stored, ok);
        accum_queue_fini(&q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_batch_waits_for_linger),
        cmocka_unit_test(test_full_batch_is_ready_at_once),
        cmocka_unit_test(test_batch_closes_when_it_reaches_size),
        cmocka_unit_test(test_flush_makes_open_batch_ready),
        cmocka_unit_test(test_retry_waits_and_keeps_order),
        cmocka_unit_test(test_retry_now_after_leader_change),
        cmocka_unit_test(test_expired_batches_come_out),
        cmocka_unit_test(test_batch_decodes_with_records_in_order),
        cmocka_unit_test(test_out_of_memory_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
