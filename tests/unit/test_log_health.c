/* SPDX-License-Identifier: Apache-2.0 */
/* When an offline partition log may come back (broker/log_health.c), on a
 * broker alone: only with log-min-free-bytes free, and never when it is
 * corrupt (the only copy: nothing to copy the cut records from). The
 * cluster rules (not while leading; a corrupt one out of the ISR, with a
 * leader, once reported) are exercised by tests/faults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/broker.h"
#include "broker/log_health.h"
#include "tests/lib/plog_fixture.h"

static void test_alone_comes_back_only_with_room(void **state)
{
    static struct plog_fixture f;
    static struct broker b;
    char why[256];

    (void)state;
    memset(&b, 0, sizeof(b));
    b.cfg.log_min_free_bytes = 1 << 20;
    plog_fixture_init(&f);
    assert_int_equal(plog_fixture_open(&f, 1000), 0);
    plog_mark_offline(f.log, WEIR_ESTORAGE, "pwrite: No space left on device");
    assert_false(log_health_may_recover(&b, "t", 0, f.log, (1 << 20) - 1, 0,
                                        why, sizeof(why)));
    assert_non_null(strstr(why, "below log-min-free-bytes"));
    assert_true(log_health_may_recover(&b, "t", 0, f.log, 1 << 20, 0, why,
                                       sizeof(why)));
    plog_fixture_fini(&f);
}

static void test_alone_never_cuts_a_corrupt_only_copy(void **state)
{
    static struct plog_fixture f;
    static struct broker b;
    char why[256];

    (void)state;
    memset(&b, 0, sizeof(b));
    plog_fixture_init(&f);
    assert_int_equal(plog_fixture_open(&f, 1000), 0);
    plog_mark_offline(f.log, WEIR_ECORRUPT, "CRC-32C mismatch");
    assert_false(log_health_may_recover(&b, "t", 0, f.log, UINT64_MAX, 3600000,
                                        why, sizeof(why)));
    assert_non_null(strstr(why, "only copy"));
    plog_fixture_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone_comes_back_only_with_room),
        cmocka_unit_test(test_alone_never_cuts_a_corrupt_only_copy),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
