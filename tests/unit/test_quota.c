/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-rate quotas: the token bucket's arithmetic on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "broker/quota.h"

/* Within one second of burst nothing is held; past it, the answer waits
 * until the bucket is back at zero. */
static void test_burst_then_throttle(void **state)
{
    struct quota *q;

    (void)state;
    assert_int_equal(quota_new(1000, &q), 0);
    assert_int_equal(quota_charge(q, "a", 600, 0), 0);
    assert_int_equal(quota_charge(q, "a", 400, 0), 0);
    /* 500 bytes owed at 1000 B/s: held 500 ms (rounded up) */
    assert_int_equal(quota_charge(q, "a", 500, 0), 501);
    /* 500 ms later the debt is paid; 100 more are owed again */
    assert_int_equal(quota_charge(q, "a", 100, 500), 101);
    quota_free(q);
}

/* Keys are independent: a heavy client does not slow another. */
static void test_keys_are_independent(void **state)
{
    struct quota *q;

    (void)state;
    assert_int_equal(quota_new(1000, &q), 0);
    assert_true(quota_charge(q, "heavy", 5000, 0) > 0);
    assert_int_equal(quota_charge(q, "light", 10, 0), 0);
    assert_int_equal(quota_keys(q), 2);
    quota_free(q);
}

/* Sustained sending at twice the rate is held for about what the excess
 * takes at the rate; the hold is capped. */
static void test_sustained_rate_and_cap(void **state)
{
    struct quota *q;
    uint64_t t = 0;
    uint64_t held = 0;
    int i;

    (void)state;
    assert_int_equal(quota_new(1000, &q), 0);
    for (i = 0; i < 100; i++) {
        held = quota_charge(q, "a", 2000, t);
        t += held; /* the client waits for each answer */
    }
    /* 200,000 bytes at 1000 B/s: about 199 s after the first second */
    assert_true(t >= 198000 && t <= 200500);
    assert_int_equal(quota_charge(q, "b", 1000000, t), QUOTA_MAX_THROTTLE_MS);
    quota_free(q);
}

/* The bucket refills to one second at most: idling does not bank an
 * unlimited burst. */
static void test_refill_capped(void **state)
{
    struct quota *q;

    (void)state;
    assert_int_equal(quota_new(1000, &q), 0);
    assert_int_equal(quota_charge(q, "a", 1, 0), 0);
    assert_int_equal(quota_charge(q, "a", 1999, 3600000), 1000);
    quota_free(q);
}

/* At the key limit, buckets that owe nothing are forgotten to make room;
 * when every bucket owes, a new key is not throttled (never refused). */
static void test_key_limit(void **state)
{
    struct quota *q;
    char key[32];
    uint32_t i;

    (void)state;
    assert_int_equal(quota_new(1000, &q), 0);
    for (i = 0; i < QUOTA_MAX_KEYS; i++) {
        (void)snprintf(key, sizeof(key), "k%u", i);
        assert_true(quota_charge(q, key, 2000, 0) > 0);
    }
    assert_int_equal(quota_charge(q, "new", 5000, 0), 0); /* untracked */
    assert_int_equal(quota_keys(q), QUOTA_MAX_KEYS);
    /* two seconds on, every bucket is full again and can go */
    assert_true(quota_charge(q, "new", 5000, 2000) > 0);
    assert_int_equal(quota_keys(q), 1);
    quota_free(q);
    assert_int_equal(quota_new(0, &q), WEIR_EINVALID_ARGUMENT);
    assert_null(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_throttle),
        cmocka_unit_test(test_keys_are_independent),
        cmocka_unit_test(test_sustained_rate_and_cap),
        cmocka_unit_test(test_refill_capped),
        cmocka_unit_test(test_key_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
