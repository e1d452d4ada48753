/* SPDX-License-Identifier: Apache-2.0 */
/* A leader cut off from the controller (broker/cluster/cluster_watch.c):
 * silent for longer than the session timeout while leading -> a warning,
 * repeated every CLUSTER_WATCH_EVERY_MS at most; an answer after a warning
 * -> one "restored"; nothing while not leading or within the session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker/cluster/cluster_watch.h"

#define SESSION 3000

static void test_quiet_while_answered_or_not_leading(void **state)
{
    struct cluster_watch w;

    (void)state;
    cluster_watch_init(&w, 1000);
    assert_int_equal(cluster_watch_tick(&w, 1000 + SESSION, SESSION, 4),
                     CLUSTER_WATCH_QUIET); /* not longer than the session */
    assert_int_equal(cluster_watch_tick(&w, 60000, SESSION, 0),
                     CLUSTER_WATCH_QUIET); /* silent, but leads nothing */
    assert_int_equal(cluster_watch_contact(&w, 60000), CLUSTER_WATCH_QUIET);
    assert_int_equal(cluster_watch_tick(&w, 62000, SESSION, 4),
                     CLUSTER_WATCH_QUIET);
}

static void test_warns_rate_limited_then_restored(void **state)
{
    struct cluster_watch w;
    uint64_t t;
    int warns = 0;

    (void)state;
    cluster_watch_init(&w, 0);
    assert_int_equal(cluster_watch_tick(&w, SESSION + 1, SESSION, 2),
                     CLUSTER_WATCH_WARN);
    assert_int_equal(cluster_watch_silent_ms(&w, SESSION + 1), SESSION + 1);
    /* ticks every 500 ms for 20 s: one warning per 5 s */
    for (t = SESSION + 501; t <= SESSION + 1 + 20000; t += 500) {
        warns += cluster_watch_tick(&w, t, SESSION, 2) == CLUSTER_WATCH_WARN;
    }
    assert_int_equal(warns, 4);
    assert_int_equal(cluster_watch_contact(&w, 30000), CLUSTER_WATCH_RESTORED);
    assert_int_equal(cluster_watch_contact(&w, 30500), CLUSTER_WATCH_QUIET);
    assert_int_equal(cluster_watch_tick(&w, 31000, SESSION, 2),
                     CLUSTER_WATCH_QUIET);
    /* cut off again: warns at once, not 5 s after the old warning */
    assert_int_equal(cluster_watch_tick(&w, 30500 + SESSION + 1, SESSION, 2),
                     CLUSTER_WATCH_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_while_answered_or_not_leading),
        cmocka_unit_test(test_warns_rate_limited_then_restored),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
