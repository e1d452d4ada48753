/* SPDX-License-Identifier: Apache-2.0 */
/* Argument parsing: the option parser, integers, ISO 8601 times and
 * bootstrap lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/cli/args.h"
#include "client/cli/isotime.h"
#include "client/metadata.h"

static const struct args_spec specs[] = {
    {"bootstrap", 0, ARGS_VALUE, "B", "brokers"},
    {"help", 'h', ARGS_FLAG, NULL, "help"},
    {"partitions", 0, ARGS_VALUE, "N", "partitions"},
    {"config", 0, ARGS_LIST, "K=V", "configs"},
    {"report", 0, ARGS_FLAG, NULL, "report"},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static int parse(struct args *a, char **argv, int argc, char *err)
{
    return args_parse(specs, NSPECS, argc, argv, false, a, NULL, err, 200);
}

static void test_values_flags_lists_positionals(void **state)
{
    char *argv[] = {"create", "--partitions", "3",
                    "orders", "--config=a=1", "--config",
                    "b=2",    "--report",     "--bootstrap=h:1"};
    struct args a;
    char err[200];
    const char *const *l;
    size_t n;

    (void)state;
    assert_int_equal(parse(&a, argv, 9, err), 0);
    assert_int_equal(a.n_pos, 2);
    assert_string_equal(a.pos[0], "create");
    assert_string_equal(a.pos[1], "orders");
    assert_string_equal(args_get(&a, "partitions"), "3");
    assert_string_equal(args_get(&a, "bootstrap"), "h:1");
    assert_true(args_has(&a, "report"));
    assert_false(args_has(&a, "help"));
    assert_null(args_get(&a, "help"));
    l = args_list(&a, "config", &n);
    assert_int_equal(n, 2);
    assert_string_equal(l[0], "a=1");
    assert_string_equal(l[1], "b=2");
}

static void test_last_value_wins_and_dashdash_ends_options(void **state)
{
    char *argv[] = {"--partitions", "1", "--partitions", "2", "--",
                    "--report",     "-h"};
    struct args a;
    char err[200];

    (void)state;
    assert_int_equal(parse(&a, argv, 7, err), 0);
    assert_string_equal(args_get(&a, "partitions"), "2");
    assert_false(args_has(&a, "report"));
    assert_int_equal(a.n_pos, 2);
    assert_string_equal(a.pos[0], "--report");
}

static void test_short_flag_and_dash_value(void **state)
{
    char *argv[] = {"-h", "--partitions", "-5", "-"};
    struct args a;
    char err[200];

    (void)state;
    assert_int_equal(parse(&a, argv, 4, err), 0);
    assert_true(args_has(&a, "help"));
    assert_string_equal(args_get(&a, "partitions"), "-5");
    assert_int_equal(a.n_pos, 1);
    assert_string_equal(a.pos[0], "-");
}

static void test_errors_name_the_option(void **state)
{
    char *unknown[] = {"--nope"};
    char *missing[] = {"x", "--partitions"};
    char *flagval[] = {"--report=yes"};
    char *shortunk[] = {"-x"};
    struct args a;
    char err[200];

    (void)state;
    assert_int_equal(parse(&a, unknown, 1, err), -1);
    assert_string_equal(err, "unknown option '--nope'");
    assert_int_equal(parse(&a, missing, 2, err), -1);
    assert_string_equal(err, "option '--partitions' needs a value");
    assert_int_equal(parse(&a, flagval, 1, err), -1);
    assert_string_equal(err, "option '--report' takes no value");
    assert_int_equal(parse(&a, shortunk, 1, err), -1);
}

static void test_stop_at_first_positional(void **state)
{
    char *argv[] = {"--bootstrap", "h:2", "topic", "list", "--report"};
    struct args a;
    char err[200];
    int used;

    (void)state;
    assert_int_equal(
        args_parse(specs, NSPECS, 5, argv, true, &a, &used, err, sizeof(err)),
        0);
    assert_int_equal(used, 2);
    assert_string_equal(args_get(&a, "bootstrap"), "h:2");
    assert_false(args_has(&a, "report"));
}

static void test_integers_with_bounds_and_suffixes(void **state)
{
    char err[200];
    int64_t v;

    (void)state;
    assert_int_equal(args_int("42", "--n", 0, 100, false, &v, err, 200), 0);
    assert_int_equal(v, 42);
    assert_int_equal(args_int("64k", "--n", 0, 1 << 20, true, &v, err, 200), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(args_int("1m", "--n", 0, 1 << 21, true, &v, err, 200), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(args_int("64k", "--n", 0, 1 << 20, false, &v, err, 200),
                     -1);
    assert_int_equal(args_int("101", "--n", 0, 100, false, &v, err, 200), -1);
    assert_string_equal(err, "--n must be an integer from 0 to 100, not '101'");
    assert_int_equal(args_int("", "--n", 0, 100, false, &v, err, 200), -1);
    assert_int_equal(args_int("1x", "--n", 0, 100, true, &v, err, 200), -1);
    assert_int_equal(args_int("99999999999999999999", "--n", 0, INT64_MAX,
                              false, &v, err, 200),
                     -1);
}

static void test_iso8601_times(void **state)
{
    int64_t ms;

    (void)state;
    assert_int_equal(isotime_parse("1970-01-01T00:00:00Z", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(isotime_parse("2023-11-14T22:13:20Z", &ms), 0);
    assert_int_equal(ms, 1700000000000LL);
    assert_int_equal(isotime_parse("2023-11-14T22:13:20.5Z", &ms), 0);
    assert_int_equal(ms, 1700000000500LL);
    assert_int_equal(isotime_parse("2023-11-14 22:13:20.123", &ms), 0);
    assert_int_equal(ms, 1700000000123LL);
    assert_int_equal(isotime_parse("2023-11-15T00:13:20+02:00", &ms), 0);
    assert_int_equal(ms, 1700000000000LL);
    assert_int_equal(isotime_parse("2023-11-14T17:13:20-0500", &ms), 0);
    assert_int_equal(ms, 1700000000000LL);
    assert_int_equal(isotime_parse("2024-02-29", &ms), 0);
    assert_int_equal(ms, 1709164800000LL);
    assert_int_equal(isotime_parse("2000-03-01T00:00Z", &ms), 0);
    assert_int_equal(ms, 951868800000LL);
    assert_int_equal(isotime_parse("2023-02-29", &ms), -1);
    assert_int_equal(isotime_parse("2023-13-01", &ms), -1);
    assert_int_equal(isotime_parse("2023-1-01", &ms), -1);
    assert_int_equal(isotime_parse("2023-01-01T25:00", &ms), -1);
    assert_int_equal(isotime_parse("2023-01-01T10:00Zjunk", &ms), -1);
    assert_int_equal(isotime_parse("yesterday", &ms), -1);
    assert_int_equal(isotime_parse("", &ms), -1);
    assert_int_equal(isotime_parse("2023", &ms), -1);
}

static void test_bootstrap_lists(void **state)
{
    struct md_addr *a;
    struct err_detail ed;
    size_t n;

    (void)state;
    assert_int_equal(metadata_parse_bootstrap("127.0.0.1:9092", &a, &n, &ed),
                     0);
    assert_int_equal(n, 1);
    assert_string_equal(a[0].host, "127.0.0.1");
    assert_int_equal(a[0].port, 9092);
    metadata_addrs_free(a, n);
    assert_int_equal(
        metadata_parse_bootstrap("a:1, b ,[::1]:3,,c:65535", &a, &n, &ed), 0);
    assert_int_equal(n, 4);
    assert_string_equal(a[1].host, "b");
    assert_int_equal(a[1].port, 9092);
    assert_string_equal(a[2].host, "::1");
    assert_int_equal(a[2].port, 3);
    assert_int_equal(a[3].port, 65535);
    metadata_addrs_free(a, n);
    assert_int_equal(metadata_parse_bootstrap("h:0", &a, &n, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(metadata_parse_bootstrap("h:x", &a, &n, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(metadata_parse_bootstrap(":9092", &a, &n, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(metadata_parse_bootstrap(" , ", &a, &n, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_non_null(strstr(ed.msg, "names no broker"));
    assert_int_equal(metadata_parse_bootstrap("[::1", &a, &n, &ed),
                     WEIR_EINVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_flags_lists_positionals),
        cmocka_unit_test(test_last_value_wins_and_dashdash_ends_options),
        cmocka_unit_test(test_short_flag_and_dash_value),
        cmocka_unit_test(test_errors_name_the_option),
        cmocka_unit_test(test_stop_at_first_positional),
        cmocka_unit_test(test_integers_with_bounds_and_suffixes),
        cmocka_unit_test(test_iso8601_times),
        cmocka_unit_test(test_bootstrap_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
