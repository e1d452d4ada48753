/* SPDX-License-Identifier: Apache-2.0 */
/* consume --format rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/cli/fmt.h"

static char out[512];

static const char *render(const char *fmt, const struct weir_record *r)
{
    struct weir_buf b;
    char err[200];

    assert_int_equal(fmt_check(fmt, err, sizeof(err)), 0);
    buf_init(&b);
    fmt_render(fmt, r, &b);
    assert_true(buf_ok(&b));
    assert_true(b.len < sizeof(out));
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    buf_fini(&b);
    return out;
}

static struct weir_record rec(void)
{
    struct weir_record r;

    memset(&r, 0, sizeof(r));
    r.topic = "t";
    r.partition = 3;
    r.offset = 1234567890123LL;
    r.timestamp = 1700000000000LL;
    r.key = "user-1";
    r.key_len = 6;
    r.value = "hello";
    r.value_len = 5;
    return r;
}

static void test_default_prints_value_and_newline(void **state)
{
    struct weir_record r = rec();

    (void)state;
    assert_string_equal(render("%v", &r), "hello\n");
}

static void test_all_fields(void **state)
{
    struct weir_record r = rec();

    (void)state;
    assert_string_equal(render("%p %o %t %k=%v", &r),
                        "3 1234567890123 1700000000000 user-1=hello\n");
}

static void test_escapes_and_percent(void **state)
{
    struct weir_record r = rec();

    (void)state;
    assert_string_equal(render("%k\\t%v\\t100%%", &r), "user-1\thello\t100%\n");
    assert_string_equal(render("a\\\\b", &r), "a\\b\n");
}

static void test_trailing_newline_escape_is_not_doubled(void **state)
{
    struct weir_record r = rec();

    (void)state;
    assert_string_equal(render("%v\\n", &r), "hello\n");
    assert_string_equal(render("%v\\n\\n", &r), "hello\n\n");
    /* an escaped backslash followed by n is not a newline escape */
    assert_string_equal(render("%v\\\\n", &r), "hello\\n\n");
}

static void test_null_key_and_value_print_nothing(void **state)
{
    struct weir_record r = rec();

    (void)state;
    r.key_null = true;
    r.key = NULL;
    r.key_len = 0;
    r.value_null = true;
    r.value = NULL;
    r.value_len = 0;
    assert_string_equal(render("[%k][%v]", &r), "[][]\n");
}

static void test_binary_value_is_copied_raw(void **state)
{
    struct weir_record r = rec();
    struct weir_buf b;

    (void)state;
    r.value = "a\0b";
    r.value_len = 3;
    buf_init(&b);
    fmt_render("%v", &r, &b);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "a\0b\n", 4);
    buf_fini(&b);
}

static void test_bad_formats_are_rejected(void **state)
{
    char err[200];

    (void)state;
    assert_int_equal(fmt_check("%x", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "%x"));
    assert_int_equal(fmt_check("abc%", err, sizeof(err)), -1);
    assert_int_equal(fmt_check("\\q", err, sizeof(err)), -1);
    assert_int_equal(fmt_check("trailing\\", err, sizeof(err)), -1);
    assert_int_equal(fmt_check("", err, sizeof(err)), 0);
    assert_int_equal(fmt_check("plain text", err, sizeof(err)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_prints_value_and_newline),
        cmocka_unit_test(test_all_fields),
        cmocka_unit_test(test_escapes_and_percent),
        cmocka_unit_test(test_trailing_newline_escape_is_not_doubled),
        cmocka_unit_test(test_null_key_and_value_print_nothing),
        cmocka_unit_test(test_binary_value_is_copied_raw),
        cmocka_unit_test(test_bad_formats_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
