/* SPDX-License-Identifier: Apache-2.0 */
/* Topic names: [A-Za-z0-9._-], 1..249 characters, never "." or "..", so a
 * name can always be used as a path component inside the data directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/names.h"

static int nt_check(const char *s)
{
    return names_topic_check(s, strlen(s), NULL);
}

static void test_valid_names(void **state)
{
    static const char *const ok[] = {
        "a",
        "orders",
        "Orders.v2",
        "__consumer_offsets",
        "a-b_c.d",
        "0",
        "...",
        "..a",
        "a..",
        ".hidden",
        "-",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(nt_check(ok[i]), 0);
    }
}

static void test_invalid_names(void **state)
{
    static const char *const bad[] = {
        "",    ".",  "..", "a/b",       "a\\b", "/",   "../x",
        "a b", " a", "a ", "t\xc3\xa9", "\xff", "a\n", "a\t",
        "a:b", "a*", "a?", "$topic",    "a,b",  "a+b", "%2e%2e"};
    struct err_detail ed;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(names_topic_check(bad[i], strlen(bad[i]), &ed),
                         WEIR_EINVALID_TOPIC);
        assert_int_equal(ed.code, WEIR_EINVALID_TOPIC);
        assert_true(strlen(ed.msg) > 0);
    }
}

static void test_length_limit(void **state)
{
    char name[300];
    struct err_detail ed;

    (void)state;
    memset(name, 'x', sizeof(name));
    assert_int_equal(names_topic_check(name, 249, NULL), 0);
    assert_int_equal(names_topic_check(name, 250, &ed), WEIR_EINVALID_TOPIC);
    assert_non_null(strstr(ed.msg, "249"));
    assert_int_equal(names_topic_check(name, sizeof(name), NULL),
                     WEIR_EINVALID_TOPIC);
    assert_int_equal(names_topic_check(name, 1, NULL), 0);
    assert_int_equal(names_topic_check(name, 0, NULL), WEIR_EINVALID_TOPIC);
}

static void test_nul_inside_rejected(void **state)
{
    static const char nul[] = {'a', '\0', 'b'};
    static const char dotnul[] = {'.', '\0'};
    struct err_detail ed;

    (void)state;
    /* the length is explicit, so a NUL cannot cut the name short */
    assert_int_equal(names_topic_check(nul, sizeof(nul), &ed),
                     WEIR_EINVALID_TOPIC);
    assert_non_null(strstr(ed.msg, "0x00"));
    assert_int_equal(names_topic_check(dotnul, sizeof(dotnul), NULL),
                     WEIR_EINVALID_TOPIC);
    /* the name is not read past len */
    assert_int_equal(names_topic_check("ab/", 2, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_names),
        cmocka_unit_test(test_invalid_names),
        cmocka_unit_test(test_length_limit),
        cmocka_unit_test(test_nul_inside_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
