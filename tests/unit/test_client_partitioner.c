/* SPDX-License-Identifier: Apache-2.0 */
/* Partitioner: Kafka-compatible murmur2 for keys, sticky for keyless. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/partitioner.h"

static void test_murmur2_matches_kafka_vectors(void **state)
{
    /* Kafka's UtilsTest.testMurmur2 */
    static const struct {
        const char *key;
        int32_t hash;
    } v[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        assert_int_equal(partitioner_murmur2(v[i].key, strlen(v[i].key)),
                         v[i].hash);
    }
}

static void test_same_key_same_partition(void **state)
{
    char key[32];
    int i;

    (void)state;
    for (i = 0; i < 1000; i++) {
        int32_t p;
        (void)snprintf(key, sizeof(key), "user-%d", i);
        p = partitioner_key(key, strlen(key), 12);
        assert_true(p >= 0 && p < 12);
        assert_int_equal(partitioner_key(key, strlen(key), 12), p);
    }
    /* the positive-modulo rule: "abc" hashes positive, "21" negative */
    assert_int_equal(partitioner_key("abc", 3, 7), 479470107 % 7);
    assert_int_equal(partitioner_key("21", 2, 7),
                     (int32_t)(((uint32_t)-973932308 & 0x7fffffffu) % 7));
}

static void test_keys_spread_evenly(void **state)
{
    int counts[8] = {0};
    char key[32];
    int i;

    (void)state;
    for (i = 0; i < 80000; i++) {
        (void)snprintf(key, sizeof(key), "k%d", i);
        counts[partitioner_key(key, strlen(key), 8)]++;
    }
    for (i = 0; i < 8; i++) {
        assert_in_range(counts[i], 9000, 11000); /* 10000 +- 10% */
    }
}

static void test_empty_key_is_a_key(void **state)
{
    (void)state;
    assert_int_equal(partitioner_key("", 0, 5), partitioner_key("", 0, 5));
}

static void test_sticky_stays_until_batch_sent(void **state)
{
    struct partitioner_sticky s;
    int i;

    (void)state;
    partitioner_sticky_init(&s, 7, 4); /* starts at 7 mod 4 = 3 */
    for (i = 0; i < 100; i++) {
        assert_int_equal(partitioner_sticky_next(&s, 4), 3);
    }
    partitioner_sticky_batch_sent(&s, 1, 4); /* another partition: stay */
    assert_int_equal(partitioner_sticky_next(&s, 4), 3);
    partitioner_sticky_batch_sent(&s, 3, 4); /* ours: move on, wrapping */
    assert_int_equal(partitioner_sticky_next(&s, 4), 0);
    partitioner_sticky_batch_sent(&s, 0, 4);
    assert_int_equal(partitioner_sticky_next(&s, 4), 1);
}

static void test_sticky_round_robin_covers_all(void **state)
{
    struct partitioner_sticky s;
    int seen[5] = {0};
    int i;

    (void)state;
    partitioner_sticky_init(&s, 0, 5);
    for (i = 0; i < 10; i++) {
        int32_t p = partitioner_sticky_next(&s, 5);
        seen[p]++;
        partitioner_sticky_batch_sent(&s, p, 5);
    }
    for (i = 0; i < 5; i++) {
        assert_int_equal(seen[i], 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_murmur2_matches_kafka_vectors),
        cmocka_unit_test(test_same_key_same_partition),
        cmocka_unit_test(test_keys_spread_evenly),
        cmocka_unit_test(test_empty_key_is_a_key),
        cmocka_unit_test(test_sticky_stays_until_batch_sent),
        cmocka_unit_test(test_sticky_round_robin_covers_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
