/* SPDX-License-Identifier: Apache-2.0 */
/* Strict decimal reader: digits only, '-' only when allowed, overflow is
 * an error, the whole input must be the number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/decimal.h"

static int dec(const char *s, size_t len, enum decimal_sign sign, int64_t *v)
{
    return decimal_parse_i64(s, len, sign, v, NULL);
}

static void test_good_numbers(void **state)
{
    int64_t v = -7;

    (void)state;
    assert_int_equal(dec("0", 1, DECIMAL_UNSIGNED, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(dec("42", 2, DECIMAL_UNSIGNED, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(dec("007", 3, DECIMAL_UNSIGNED, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(dec("9223372036854775807", 19, DECIMAL_UNSIGNED, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(dec("-9223372036854775808", 20, DECIMAL_SIGNED, &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(dec("-15", 3, DECIMAL_SIGNED, &v), 0);
    assert_int_equal(v, -15);
    assert_int_equal(dec("-0", 2, DECIMAL_SIGNED, &v), 0);
    assert_int_equal(v, 0);
    /* only len bytes are read */
    assert_int_equal(dec("123456", 3, DECIMAL_UNSIGNED, &v), 0);
    assert_int_equal(v, 123);
}

static void
check_bad(const char *s, size_t len, enum decimal_sign sign, size_t at)
{
    struct decimal_error de = {99, NULL};
    int64_t v = 77;

    assert_int_equal(decimal_parse_i64(s, len, sign, &v, &de), WEIR_EMALFORMED);
    assert_int_equal(v, 77); /* untouched on failure */
    assert_int_equal(de.at, at);
    assert_non_null(de.why);
}

static void test_refuses_plus_space_junk_nul(void **state)
{
    (void)state;
    check_bad("+5", 2, DECIMAL_SIGNED, 0);
    check_bad("+5", 2, DECIMAL_UNSIGNED, 0);
    check_bad(" 5", 2, DECIMAL_UNSIGNED, 0);
    check_bad("\t5", 2, DECIMAL_SIGNED, 0);
    check_bad("5 ", 2, DECIMAL_UNSIGNED, 1);
    check_bad("5x", 2, DECIMAL_UNSIGNED, 1);
    check_bad("12\n", 3, DECIMAL_UNSIGNED, 2);
    check_bad("1\0002", 3, DECIMAL_UNSIGNED, 1);
    check_bad("\0001", 2, DECIMAL_UNSIGNED, 0);
    check_bad("0x10", 4, DECIMAL_UNSIGNED, 1);
    check_bad("1e3", 3, DECIMAL_UNSIGNED, 1);
    check_bad("--1", 3, DECIMAL_SIGNED, 1);
    check_bad("-+1", 3, DECIMAL_SIGNED, 1);
}

static void test_refuses_sign_when_unsigned(void **state)
{
    (void)state;
    check_bad("-1", 2, DECIMAL_UNSIGNED, 0);
    check_bad("-0", 2, DECIMAL_UNSIGNED, 0);
}

static void test_refuses_empty(void **state)
{
    (void)state;
    check_bad("", 0, DECIMAL_UNSIGNED, 0);
    check_bad("", 0, DECIMAL_SIGNED, 0);
    check_bad("-", 1, DECIMAL_SIGNED, 1);
}

static void test_refuses_overflow(void **state)
{
    (void)state;
    check_bad("9223372036854775808", 19, DECIMAL_UNSIGNED, 18);
    check_bad("-9223372036854775809", 20, DECIMAL_SIGNED, 19);
    check_bad("99999999999999999999", 20, DECIMAL_UNSIGNED, 18);
    check_bad("18446744073709551616", 20, DECIMAL_UNSIGNED, 19);
    check_bad("100000000000000000000000000000", 30, DECIMAL_SIGNED, 19);
}

static void test_scan_stops_at_separator(void **state)
{
    struct decimal_error de;
    size_t used = 0;
    int64_t v = 0;

    (void)state;
    assert_int_equal(
        decimal_scan_i64("12 34", 5, DECIMAL_UNSIGNED, &v, &used, &de), 0);
    assert_int_equal(v, 12);
    assert_int_equal(used, 2);
    assert_int_equal(
        decimal_scan_i64("-3\n", 3, DECIMAL_SIGNED, &v, &used, &de), 0);
    assert_int_equal(v, -3);
    assert_int_equal(used, 2);
    assert_int_equal(decimal_scan_i64(" 3", 2, DECIMAL_SIGNED, &v, &used, &de),
                     WEIR_EMALFORMED);
    assert_int_equal(de.at, 0);
}

static void test_cstr(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_int_equal(decimal_parse_cstr("31", DECIMAL_UNSIGNED, &v, NULL), 0);
    assert_int_equal(v, 31);
    assert_int_equal(decimal_parse_cstr("", DECIMAL_UNSIGNED, &v, NULL),
                     WEIR_EMALFORMED);
    assert_int_equal(decimal_parse_cstr("3 ", DECIMAL_UNSIGNED, &v, NULL),
                     WEIR_EMALFORMED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_numbers),
        cmocka_unit_test(test_refuses_plus_space_junk_nul),
        cmocka_unit_test(test_refuses_sign_when_unsigned),
        cmocka_unit_test(test_refuses_empty),
        cmocka_unit_test(test_refuses_overflow),
        cmocka_unit_test(test_scan_stops_at_separator),
        cmocka_unit_test(test_cstr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
