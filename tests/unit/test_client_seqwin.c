/* SPDX-License-Identifier: Apache-2.0 */
/* Sequence window: out-of-order completions come out in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "client/cli/seqwin.h"

static void test_pops_in_submission_order(void **state)
{
    struct seqwin w;
    struct seqwin_slot s;
    uint64_t seq;
    int i;

    (void)state;
    seqwin_init(&w);
    for (i = 0; i < 3; i++) {
        assert_int_equal(seqwin_push(&w, (uint64_t)i * 10, &seq), 0);
        assert_int_equal(seq, (uint64_t)i);
    }
    seqwin_complete(&w, 2, 1, 20, 0);
    seqwin_complete(&w, 1, 0, 10, 0);
    assert_false(seqwin_pop(&w, &s)); /* 0 is not done */
    seqwin_complete(&w, 0, 0, 9, 8);
    assert_true(seqwin_pop(&w, &s));
    assert_int_equal(s.offset, 9);
    assert_int_equal(s.err, 8);
    assert_int_equal(s.stamp, 0);
    assert_true(seqwin_pop(&w, &s));
    assert_int_equal(s.offset, 10);
    assert_true(seqwin_pop(&w, &s));
    assert_int_equal(s.partition, 1);
    assert_int_equal(s.stamp, 20);
    assert_false(seqwin_pop(&w, &s));
    assert_int_equal(seqwin_pending(&w), 0);
    seqwin_fini(&w);
}

static void test_grows_across_the_wrap(void **state)
{
    struct seqwin w;
    struct seqwin_slot s;
    uint64_t seq;
    uint64_t expect = 0;
    uint64_t i;

    (void)state;
    seqwin_init(&w);
    /* move head past 0 so the ring wraps, then outgrow it */
    for (i = 0; i < 700; i++) {
        assert_int_equal(seqwin_push(&w, i, &seq), 0);
        seqwin_complete(&w, seq, 0, (int64_t)seq, 0);
        assert_true(seqwin_pop(&w, &s));
        expect++;
    }
    for (i = 0; i < 5000; i++) {
        assert_int_equal(seqwin_push(&w, i, &seq), 0);
    }
    assert_int_equal(seqwin_pending(&w), 5000);
    assert_null(seqwin_at(&w, 699));
    assert_non_null(seqwin_at(&w, 700));
    /* complete newest first */
    for (i = 0; i < 5000; i++) {
        seqwin_complete(&w, 700 + 4999 - i, 0, (int64_t)(700 + 4999 - i), 0);
    }
    while (seqwin_pop(&w, &s)) {
        assert_int_equal(s.offset, (int64_t)expect);
        expect++;
    }
    assert_int_equal(expect, 5700);
    seqwin_fini(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pops_in_submission_order),
        cmocka_unit_test(test_grows_across_the_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
