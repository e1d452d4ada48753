/* SPDX-License-Identifier: Apache-2.0 */
/* Trace lines: logfmt prefix, level filtering, and one bounded line per
 * call however long the subsystem name or message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/trace.h"

/* Run fn with trace output going to a pipe; returns the bytes written. */
static size_t tt_capture(char *out, size_t cap, void (*fn)(void))
{
    int fds[2];
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    trace_set_fd(fds[1]);
    fn();
    trace_set_fd(2);
    assert_int_equal(close(fds[1]), 0);
    n = read(fds[0], out, cap - 1);
    assert_true(n >= 0);
    out[n] = '\0';
    assert_int_equal(close(fds[0]), 0);
    return (size_t)n;
}

static void tt_emit_info(void)
{
    trace_info("storage", "event=roll topic=%s partition=%d", "t", 3);
    trace_debug("storage", "event=hidden");
}

static void test_line_format_and_level_filter(void **state)
{
    char out[4096];
    size_t n;

    (void)state;
    trace_set_level(TRACE_INFO);
    n = tt_capture(out, sizeof(out), tt_emit_info);
    assert_true(n > 0);
    assert_memory_equal(out, "ts=", 3);
    assert_non_null(strstr(out, "Z level=info sub=storage event=roll "
                                "topic=t partition=3\n"));
    assert_null(strstr(out, "hidden"));
    assert_int_equal(out[n - 1], '\n');
    assert_null(memchr(out, '\n', n - 1)); /* one line */
}

static char tt_long[5000];

static void tt_emit_long_sub(void)
{
    trace_error(tt_long, "event=x");
}

static void tt_emit_long_msg(void)
{
    trace_warn("net", "msg=%s", tt_long);
}

static void test_long_lines_are_cut_not_overflowed(void **state)
{
    char out[8192];
    size_t n;

    (void)state;
    memset(tt_long, 's', sizeof(tt_long) - 1);
    n = tt_capture(out, sizeof(out), tt_emit_long_sub);
    assert_true(n > 100 && n <= 2048);
    assert_int_equal(out[n - 1], '\n');
    n = tt_capture(out, sizeof(out), tt_emit_long_msg);
    assert_true(n > 100 && n <= 2048);
    assert_int_equal(out[n - 1], '\n');
    assert_non_null(strstr(out, "level=warn sub=net msg=sss"));
}

static void test_level_parse(void **state)
{
    enum trace_level l;

    (void)state;
    assert_int_equal(trace_level_parse("debug", &l), 0);
    assert_int_equal(l, TRACE_DEBUG);
    assert_int_equal(trace_level_parse("error", &l), 0);
    assert_int_equal(l, TRACE_ERROR);
    assert_int_equal(trace_level_parse("loud", &l), WEIR_ECONFIG);
    trace_set_level(TRACE_WARN);
    assert_false(trace_enabled(TRACE_INFO));
    assert_true(trace_enabled(TRACE_ERROR));
    trace_set_level(TRACE_INFO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_format_and_level_filter),
        cmocka_unit_test(test_long_lines_are_cut_not_overflowed),
        cmocka_unit_test(test_level_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
