/* SPDX-License-Identifier: Apache-2.0 */
/* Chain values of metadata histories (controller/meta/meta_chain.c): the
 * same records in the same order give the same value, anything else
 * another; values are never negative; and the function is pinned by a
 * known value, since brokers and controllers of different builds must
 * agree on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "controller/meta/meta_chain.h"

static const uint8_t rec_a[] = {4, 0, 0, 0, 0, 3, 'a', 'b', 'c'};
static const uint8_t rec_b[] = {4, 0, 0, 0, 0, 3, 'a', 'b', 'd'};

static void test_same_history_same_value(void **state)
{
    int64_t x = meta_chain_fold(META_CHAIN_ZERO, rec_a, sizeof(rec_a));
    int64_t y = meta_chain_fold(META_CHAIN_ZERO, rec_a, sizeof(rec_a));

    (void)state;
    assert_int_equal(x, y);
    assert_true(x >= 0);
    assert_int_equal(meta_chain_fold(x, rec_b, sizeof(rec_b)),
                     meta_chain_fold(y, rec_b, sizeof(rec_b)));
}

static void test_any_difference_changes_the_value(void **state)
{
    int64_t ab =
        meta_chain_fold(meta_chain_fold(META_CHAIN_ZERO, rec_a, sizeof(rec_a)),
                        rec_b, sizeof(rec_b));
    int64_t ba =
        meta_chain_fold(meta_chain_fold(META_CHAIN_ZERO, rec_b, sizeof(rec_b)),
                        rec_a, sizeof(rec_a));
    int64_t aa =
        meta_chain_fold(meta_chain_fold(META_CHAIN_ZERO, rec_a, sizeof(rec_a)),
                        rec_a, sizeof(rec_a));

    (void)state;
    assert_int_not_equal(ab, ba); /* order */
    assert_int_not_equal(ab, aa); /* one byte of one record */
    assert_int_not_equal(meta_chain_fold(0, rec_a, sizeof(rec_a)),
                         meta_chain_fold(1, rec_a, sizeof(rec_a)));
    assert_int_not_equal(meta_chain_fold(0, rec_a, sizeof(rec_a) - 1),
                         meta_chain_fold(0, rec_a, sizeof(rec_a)));
}

/* Computed apart from this code (Python: hashlib.sha256 of the u64be 0 and
 * sha256(rec_a), first 8 bytes big-endian, top bit cleared). */
static void test_value_is_pinned(void **state)
{
    (void)state;
    assert_int_equal(meta_chain_fold(META_CHAIN_ZERO, rec_a, sizeof(rec_a)),
                     INT64_C(8570882025441300474));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_history_same_value),
        cmocka_unit_test(test_any_difference_changes_the_value),
        cmocka_unit_test(test_value_is_pinned),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
