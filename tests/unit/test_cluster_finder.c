/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the active controller (broker/cluster/cluster_finder.c): the
 * --controller list parsed strictly; NOT_CONTROLLER hints followed (and
 * learned); failures and timeouts move on; a good answer stays; stale
 * reports from the second connection ignored; moves past one round of the
 * list back off with seeded jitter, bounded; all on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/cluster/cluster_finder.h"
#include "tests/lib/fake_clock.h"

#define MIN_MS 100
#define MAX_MS 2000

static void finder_open(struct cluster_finder *f, const char *list)
{
    struct err_detail ed;

    err_detail_clear(&ed);
    assert_int_equal(cluster_finder_init(f, list, MIN_MS, MAX_MS, 42, &ed), 0);
}

static void expect_refused(const char *list, const char *needle)
{
    struct cluster_finder f;
    struct err_detail ed;

    err_detail_clear(&ed);
    assert_int_equal(cluster_finder_init(&f, list, MIN_MS, MAX_MS, 1, &ed),
                     WEIR_ECONFIG);
    if (strstr(ed.msg, needle) == NULL) {
        fail_msg("'%s': message \"%s\" does not name \"%s\"", list, ed.msg,
                 needle);
    }
}

static void test_list_parsed_strictly(void **state)
{
    struct cluster_finder f;
    char many[2000] = "";
    int i;

    (void)state;
    finder_open(&f, "a:1, b:2 ,[::1]:3");
    assert_int_equal(f.n, 3);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    assert_string_equal(f.addrs[1], "b:2");
    assert_string_equal(f.addrs[2], "[::1]:3");
    finder_open(&f, "127.0.0.1:9090"); /* one address, as before */
    assert_int_equal(f.n, 1);

    expect_refused("", "element 1 of the list is empty");
    expect_refused("a:1,", "element 2 of the list is empty");
    expect_refused("a:1,,b:2", "element 2 of the list is empty");
    expect_refused("a:1,b", "element 2 of the list, 'b', is not HOST:PORT");
    expect_refused("a:1,b:0", "'b:0'");
    expect_refused("a:1,b:70000", "'b:70000'");
    expect_refused("a:x", "element 1 of the list, 'a:x'");
    expect_refused("a:1, a:1", "'a:1' is listed twice");
    for (i = 0; i <= CLUSTER_FINDER_MAX_CONFIGURED; i++) {
        char one[32];
        (void)snprintf(one, sizeof(one), "%sh%d:1", i > 0 ? "," : "", i);
        strcat(many, one);
    }
    expect_refused(many, "more than 16 addresses");
}

static void test_hint_followed_and_learned(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;

    (void)state;
    finder_open(&f, "a:1,b:2,c:3");
    /* a knows the active one is c: go straight there */
    cluster_finder_on_not_controller(&f, "a:1", "c:3", 0, &mv);
    assert_true(mv.moved);
    assert_int_equal(mv.reason, CLUSTER_FINDER_HINT);
    assert_string_equal(mv.from, "a:1");
    assert_string_equal(cluster_finder_current(&f), "c:3");
    assert_int_equal(mv.delay_ms, 0);
    cluster_finder_on_success(&f, "c:3");
    /* the active controller moved to a member nobody listed: learned */
    cluster_finder_on_not_controller(&f, "c:3", "d:4", 10, &mv);
    assert_true(mv.moved);
    assert_string_equal(cluster_finder_current(&f), "d:4");
    assert_int_equal(f.n, 4);
    assert_int_equal(f.n_configured, 3);
    /* the same hint again is not added twice */
    cluster_finder_on_not_controller(&f, "d:4", "c:3", 20, &mv);
    cluster_finder_on_not_controller(&f, "c:3", "d:4", 30, &mv);
    assert_int_equal(f.n, 4);
    assert_string_equal(cluster_finder_current(&f), "d:4");
}

static void test_no_hint_or_bad_hint_tries_next(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;

    (void)state;
    finder_open(&f, "a:1,b:2");
    cluster_finder_on_not_controller(&f, "a:1", NULL, 0, &mv);
    assert_true(mv.moved);
    assert_int_equal(mv.reason, CLUSTER_FINDER_NOT_ACTIVE);
    assert_string_equal(cluster_finder_current(&f), "b:2");
    /* a hint naming the member itself, or not an address: no hint */
    cluster_finder_on_not_controller(&f, "b:2", "b:2", 0, &mv);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    cluster_finder_on_not_controller(&f, "a:1", "garbage", 0, &mv);
    assert_int_equal(mv.reason, CLUSTER_FINDER_NOT_ACTIVE);
    assert_string_equal(cluster_finder_current(&f), "b:2");
    cluster_finder_on_not_controller(&f, "b:2", "x:0", 0, &mv);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    assert_int_equal(f.n, 2);
}

static void test_failure_moves_on_success_stays(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;

    (void)state;
    finder_open(&f, "dead:1,live:2");
    cluster_finder_on_failure(&f, "dead:1", false, 0, &mv);
    assert_true(mv.moved);
    assert_int_equal(mv.reason, CLUSTER_FINDER_UNREACHABLE);
    assert_string_equal(cluster_finder_current(&f), "live:2");
    cluster_finder_on_success(&f, "live:2");
    /* the other connection's report about dead:1 comes late: stale */
    cluster_finder_on_failure(&f, "dead:1", false, 5, &mv);
    assert_false(mv.moved);
    assert_string_equal(cluster_finder_current(&f), "live:2");
    cluster_finder_on_not_controller(&f, "dead:1", "x:9", 5, &mv);
    assert_false(mv.moved);
    /* a timeout at the current one moves, and wraps around */
    cluster_finder_on_failure(&f, "live:2", true, 10, &mv);
    assert_true(mv.moved);
    assert_int_equal(mv.reason, CLUSTER_FINDER_TIMEOUT);
    assert_string_equal(cluster_finder_current(&f), "dead:1");
}

static void test_single_address_never_moves(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    int i;

    (void)state;
    finder_open(&f, "only:1");
    for (i = 0; i < 10; i++) {
        cluster_finder_on_failure(&f, "only:1", i % 2 == 0, 0, &mv);
        assert_false(mv.moved);
        cluster_finder_on_not_controller(&f, "only:1", "", 0, &mv);
        assert_false(mv.moved);
    }
    assert_string_equal(cluster_finder_current(&f), "only:1");
    /* but the next call waits a bounded backoff, as a move would */
    assert_in_range(cluster_finder_not_before(&f), 1, MAX_MS);
    cluster_finder_on_success(&f, "only:1");
    assert_int_equal(cluster_finder_not_before(&f), 0);
}

/* A member that died silently (a host gone) is still named by the others
 * until they elect a new one, and every call to it costs a timeout: once
 * a call to it timed out, hints naming it are ignored and rounds pass it
 * over, for CLUSTER_FINDER_SHUN_MS or until it answers. */
static void test_failed_member_passed_over_for_a_while(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    uint64_t t = 1000;

    (void)state;
    finder_open(&f, "a:1,b:2,c:3");
    cluster_finder_on_failure(&f, "a:1", true, t, &mv); /* a timed out */
    assert_string_equal(cluster_finder_current(&f), "b:2");
    cluster_finder_on_not_controller(&f, "b:2", "a:1", t + 10, &mv);
    assert_true(mv.moved);
    assert_int_equal(mv.reason, CLUSTER_FINDER_NOT_ACTIVE);
    assert_string_equal(cluster_finder_current(&f), "c:3");
    /* a round without a hint skips a as well */
    cluster_finder_on_not_controller(&f, "c:3", NULL, t + 20, &mv);
    assert_string_equal(cluster_finder_current(&f), "b:2");
    /* the hint that matters is followed */
    cluster_finder_on_not_controller(&f, "b:2", "c:3", t + 30, &mv);
    assert_int_equal(mv.reason, CLUSTER_FINDER_HINT);
    assert_string_equal(cluster_finder_current(&f), "c:3");
    /* once the time is over, a is named and called again */
    cluster_finder_on_not_controller(&f, "c:3", "a:1",
                                     t + CLUSTER_FINDER_SHUN_MS, &mv);
    assert_int_equal(mv.reason, CLUSTER_FINDER_HINT);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    /* an answer ends it at once: a fails again, b then names it, and a
     * answers NOT_CONTROLLER itself (alive), so hints to it count again */
    t += 3 * CLUSTER_FINDER_SHUN_MS;
    cluster_finder_on_failure(&f, "a:1", true, t, &mv);
    assert_string_equal(cluster_finder_current(&f), "b:2");
    cluster_finder_on_not_controller(&f, "b:2", NULL, t + 1, &mv);
    assert_string_equal(cluster_finder_current(&f), "c:3");
    cluster_finder_on_failure(&f, "c:3", true, t + 2, &mv);
    /* a still passed over, b answered: b */
    assert_string_equal(cluster_finder_current(&f), "b:2");
    cluster_finder_on_failure(&f, "b:2", true, t + 3, &mv);
    /* all three failed: the next one in turn all the same */
    assert_string_equal(cluster_finder_current(&f), "c:3");
    cluster_finder_on_not_controller(&f, "c:3", NULL, t + 4, &mv);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    cluster_finder_on_not_controller(&f, "a:1", NULL, t + 5, &mv);
    assert_string_equal(cluster_finder_current(&f), "c:3"); /* not b */
    cluster_finder_on_not_controller(&f, "c:3", "a:1", t + 6, &mv);
    assert_int_equal(mv.reason, CLUSTER_FINDER_HINT);
    assert_string_equal(cluster_finder_current(&f), "a:1");
    /* a refused connection (a member restarting, say) costs nothing: a
     * hint naming it is followed at once */
    cluster_finder_on_failure(&f, "a:1", false, t + 7, &mv);
    assert_string_equal(cluster_finder_current(&f), "c:3"); /* b timed out */
    cluster_finder_on_not_controller(&f, "c:3", "a:1", t + 8, &mv);
    assert_int_equal(mv.reason, CLUSTER_FINDER_HINT);
    assert_string_equal(cluster_finder_current(&f), "a:1");
}

/* Every member dead: the first round goes at once, then each move waits
 * 3/4 to 5/4 of a backoff that doubles up to MAX_MS; the fake clock
 * follows the delays. A good answer resets it. */
static void test_dead_list_backs_off_bounded(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    struct fake_clock fc;
    uint64_t b = MIN_MS;
    int i;

    (void)state;
    fake_clock_init(&fc, 1000, 0);
    finder_open(&f, "a:1,b:2,c:3");
    for (i = 0; i < 40; i++) {
        uint64_t now = clock_now_ms(&fc.clock);
        cluster_finder_on_failure(&f, cluster_finder_current(&f), false, now,
                                  &mv);
        assert_true(mv.moved);
        if (i < 3) {
            assert_int_equal(mv.delay_ms, 0);
        } else {
            uint64_t lo = b - b / 4;
            uint64_t hi = b + b / 4 > MAX_MS ? MAX_MS : b + b / 4;
            assert_in_range(mv.delay_ms, lo, hi);
            b = b * 2 > MAX_MS ? MAX_MS : b * 2;
        }
        assert_int_equal(cluster_finder_not_before(&f), now + mv.delay_ms);
        fake_clock_advance(&fc, mv.delay_ms);
    }
    assert_int_equal(f.backoff_ms, MAX_MS);
    cluster_finder_on_success(&f, cluster_finder_current(&f));
    assert_int_equal(cluster_finder_not_before(&f), 0);
    cluster_finder_on_failure(&f, cluster_finder_current(&f), false,
                              clock_now_ms(&fc.clock), &mv);
    assert_int_equal(mv.delay_ms, 0);
}

/* Two members naming each other (a stale hint during an election) do not
 * make a busy loop: past one round the moves wait; but a hint is news, so
 * a move to it waits at most the smallest backoff (3/4 to 5/4 of it) and
 * does not grow the backoff, even after failures grew it. */
static void test_hint_ping_pong_backs_off(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    uint64_t waited = 0;
    int i;

    (void)state;
    finder_open(&f, "a:1,b:2");
    for (i = 0; i < 20; i++) {
        const char *cur = cluster_finder_current(&f);
        cluster_finder_on_not_controller(
            &f, cur, strcmp(cur, "a:1") == 0 ? "b:2" : "a:1", waited, &mv);
        assert_true(mv.moved);
        assert_true(mv.delay_ms <= MIN_MS + MIN_MS / 4);
        waited += mv.delay_ms;
    }
    assert_true(waited > 10 * MIN_MS);
    for (i = 0; i < 10; i++) { /* failures grow the backoff */
        cluster_finder_on_failure(&f, cluster_finder_current(&f), false, waited,
                                  &mv);
    }
    assert_int_equal(f.backoff_ms, MAX_MS);
    cluster_finder_on_not_controller(&f, cluster_finder_current(&f), "c:3",
                                     waited, &mv);
    assert_true(mv.moved);
    assert_true(mv.delay_ms <= MIN_MS + MIN_MS / 4);
    assert_int_equal(f.backoff_ms, MAX_MS);
}

static void delays(uint64_t seed, uint64_t out[8])
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    struct err_detail ed;
    int i;

    assert_int_equal(cluster_finder_init(&f, "a:1,b:2", 1000, 60000, seed, &ed),
                     0);
    for (i = 0; i < 10; i++) {
        cluster_finder_on_failure(&f, cluster_finder_current(&f), false, 0,
                                  &mv);
        if (i >= 2) {
            out[i - 2] = mv.delay_ms;
        }
    }
}

static void test_jitter_repeats_from_seed(void **state)
{
    uint64_t x[8], y[8], z[8];

    (void)state;
    delays(7, x);
    delays(7, y);
    delays(8, z);
    assert_memory_equal(x, y, sizeof(x));
    assert_memory_not_equal(x, z, sizeof(x));
}

/* Hints past the list's capacity replace learned entries in turn, never
 * a configured one or the current one. */
static void test_learned_addresses_bounded(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    char hint[32];
    int i;

    (void)state;
    finder_open(&f, "a:1,b:2");
    for (i = 0; i < 3 * CLUSTER_FINDER_MAX_ADDRS; i++) {
        (void)snprintf(hint, sizeof(hint), "h%d:7", i);
        cluster_finder_on_not_controller(&f, cluster_finder_current(&f), hint,
                                         0, &mv);
        assert_true(mv.moved);
        assert_string_equal(cluster_finder_current(&f), hint);
        assert_true(f.n <= CLUSTER_FINDER_MAX_ADDRS);
        assert_string_equal(f.addrs[0], "a:1");
        assert_string_equal(f.addrs[1], "b:2");
    }
    assert_int_equal(f.n, CLUSTER_FINDER_MAX_ADDRS);
}

/* The integration scenario in small: a dead member first, then one that
 * is not active and names the active controller, then the active one. */
static void test_dead_then_standby_then_active(void **state)
{
    struct cluster_finder f;
    struct cluster_finder_move mv;
    struct fake_clock fc;

    (void)state;
    fake_clock_init(&fc, 0, 0);
    finder_open(&f, "dead:1,standby:2");
    cluster_finder_on_failure(&f, "dead:1", false, clock_now_ms(&fc.clock),
                              &mv);
    assert_string_equal(cluster_finder_current(&f), "standby:2");
    fake_clock_advance(&fc, 3);
    cluster_finder_on_not_controller(&f, "standby:2", "active:3",
                                     clock_now_ms(&fc.clock), &mv);
    assert_string_equal(mv.from, "standby:2");
    assert_string_equal(cluster_finder_current(&f), "active:3");
    assert_int_equal(mv.delay_ms, 0);
    cluster_finder_on_success(&f, "active:3");
    assert_int_equal(f.moves, 0);
    /* the active controller restarts on another port; the standby's hint
     * changes, and the failure at active:3 leads there */
    cluster_finder_on_failure(&f, "active:3", false, 100, &mv);
    assert_string_equal(cluster_finder_current(&f), "dead:1");
    cluster_finder_on_failure(&f, "dead:1", false, 101, &mv);
    cluster_finder_on_not_controller(&f, "standby:2", "active:4", 102, &mv);
    assert_string_equal(cluster_finder_current(&f), "active:4");
    assert_int_equal(mv.delay_ms, 0); /* still the first round */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_parsed_strictly),
        cmocka_unit_test(test_hint_followed_and_learned),
        cmocka_unit_test(test_no_hint_or_bad_hint_tries_next),
        cmocka_unit_test(test_failure_moves_on_success_stays),
        cmocka_unit_test(test_single_address_never_moves),
        cmocka_unit_test(test_failed_member_passed_over_for_a_while),
        cmocka_unit_test(test_dead_list_backs_off_bounded),
        cmocka_unit_test(test_hint_ping_pong_backs_off),
        cmocka_unit_test(test_jitter_repeats_from_seed),
        cmocka_unit_test(test_learned_addresses_bounded),
        cmocka_unit_test(test_dead_then_standby_then_active),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
