/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's start decision (controller/ctl_start_decide.c): every
 * combination of the five facts against the table in its header, and a
 * reason for every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "controller/ctl_start_decide.h"

#define F  1  /* formatted */
#define L  2  /* has a log */
#define H  4  /* has raft-state */
#define V  8  /* --voters */
#define AF 16 /* auto-format */

/* The header's table, written out for each combination (fact bits). */
static enum ctl_start_kind tsd_expect(unsigned bits, bool *format)
{
    bool f = bits & F, l = bits & L, h = bits & H, af = bits & AF;

    *format = false;
    if (!(bits & V)) {
        if (h) {
            return CTL_START_REFUSE;
        }
        if (f || l) {
            return CTL_START_RESTART;
        }
        *format = af;
        return af ? CTL_START_NEW : CTL_START_REFUSE;
    }
    if (h) {
        return f ? CTL_START_RESTART : CTL_START_REFUSE;
    }
    if (l) {
        return f ? CTL_START_UPGRADE : CTL_START_REFUSE;
    }
    if (f) {
        return CTL_START_NEW;
    }
    *format = af;
    return af ? CTL_START_NEW : CTL_START_REJOIN;
}

static void test_every_combination(void **state)
{
    unsigned bits;

    (void)state;
    for (bits = 0; bits < 32; bits++) {
        struct ctl_start_facts facts = {
            .formatted = bits & F,
            .has_log = bits & L,
            .has_hardstate = bits & H,
            .has_voters = bits & V,
            .auto_format = bits & AF,
        };
        struct ctl_start_decision d;
        bool format;
        enum ctl_start_kind want = tsd_expect(bits, &format);

        memset(&d, 0, sizeof(d));
        ctl_start_decide(&facts, &d);
        if (d.kind != want || d.format != format) {
            fail_msg("facts 0x%02x: got %s format=%d, want %s format=%d", bits,
                     ctl_start_kind_str(d.kind), d.format,
                     ctl_start_kind_str(want), format);
        }
        assert_non_null(d.reason);
        assert_true(strlen(d.reason) > 10);
    }
}

/* The cases that matter most, spelled out. */
static void test_named_cases(void **state)
{
    struct ctl_start_facts facts;
    struct ctl_start_decision d;

    (void)state;
    /* today's single controller restarting: unchanged */
    memset(&facts, 0, sizeof(facts));
    facts.formatted = facts.has_log = true;
    ctl_start_decide(&facts, &d);
    assert_int_equal(d.kind, CTL_START_RESTART);
    /* the same dir given --voters: its history is sealed */
    facts.has_voters = true;
    ctl_start_decide(&facts, &d);
    assert_int_equal(d.kind, CTL_START_UPGRADE);
    /* a quorum member's dir without --voters: refused, saying why */
    facts.has_hardstate = true;
    facts.has_voters = false;
    ctl_start_decide(&facts, &d);
    assert_int_equal(d.kind, CTL_START_REFUSE);
    assert_non_null(strstr(d.reason, "--voters"));
    /* a member that lost its disk */
    memset(&facts, 0, sizeof(facts));
    facts.has_voters = true;
    ctl_start_decide(&facts, &d);
    assert_int_equal(d.kind, CTL_START_REJOIN);
    assert_string_equal(ctl_start_kind_str(d.kind), "rejoin");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_combination),
        cmocka_unit_test(test_named_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
