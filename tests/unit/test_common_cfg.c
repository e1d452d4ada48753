/* SPDX-License-Identifier: Apache-2.0 */
/* Options from defaults, INI file, WEIR_* environment and flags, in that
 * order of precedence; every rejection names what was wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cfg.h"
#include "common/mem.h"

struct ct_conf {
    char *data_dir;
    char *rack;
    int64_t port;
    int64_t segment_bytes;
    bool verbose;
    bool fsync;
};

static const struct cfg_option ct_opts[] = {
    {"data-dir", CFG_STR, "/var/lib/weir", "where partitions live",
     offsetof(struct ct_conf, data_dir), 0, 0},
    {"rack", CFG_STR, NULL, "rack id", offsetof(struct ct_conf, rack), 0, 0},
    {"port", CFG_INT, "9092", "listen port", offsetof(struct ct_conf, port), 1,
     65535},
    {"segment-bytes", CFG_INT, "1g", "segment size",
     offsetof(struct ct_conf, segment_bytes), 1024, INT64_MAX},
    {"verbose", CFG_BOOL, "false", "chatty", offsetof(struct ct_conf, verbose),
     0, 0},
    {"fsync", CFG_BOOL, "true", "fsync appends",
     offsetof(struct ct_conf, fsync), 0, 0},
};

#define CT_N (sizeof(ct_opts) / sizeof(ct_opts[0]))

static const char *const ct_env[] = {
    "WEIR_DATA_DIR", "WEIR_RACK",  "WEIR_PORT",  "WEIR_SEGMENT_BYTES",
    "WEIR_VERBOSE",  "WEIR_FSYNC", "WEIR_CONFIG"};

struct ct_fixture {
    struct ct_conf conf;
    char path[64]; /* temporary INI file, "" when none */
};

static int ct_setup(void **state)
{
    struct ct_fixture *f = calloc(1, sizeof(*f));
    size_t i;

    if (f == NULL) {
        return -1;
    }
    for (i = 0; i < sizeof(ct_env) / sizeof(ct_env[0]); i++) {
        (void)unsetenv(ct_env[i]);
    }
    *state = f;
    return 0;
}

static int ct_teardown(void **state)
{
    struct ct_fixture *f = *state;
    size_t i;

    cfg_free(ct_opts, CT_N, &f->conf);
    if (f->path[0] != '\0') {
        (void)unlink(f->path);
    }
    for (i = 0; i < sizeof(ct_env) / sizeof(ct_env[0]); i++) {
        (void)unsetenv(ct_env[i]);
    }
    free(f);
    return 0;
}

static const char *ct_write_ini(struct ct_fixture *f, const char *text)
{
    int fd;
    size_t n = strlen(text);

    (void)snprintf(f->path, sizeof(f->path), "/tmp/weir-cfg-test-XXXXXX");
    fd = mkstemp(f->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
    return f->path;
}

/* cfg_load over a NULL-terminated argument list (argv[0] is the program) */
static int ct_load(struct ct_fixture *f, bool *help, struct err_detail *ed, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;

    argv[argc++] = "weir-test";
    va_start(ap, ed);
    for (;;) {
        char *a = va_arg(ap, char *);
        if (a == NULL) {
            break;
        }
        assert_true(argc < 15);
        argv[argc++] = a;
    }
    va_end(ap);
    argv[argc] = NULL;
    cfg_free(ct_opts, CT_N, &f->conf);
    return cfg_load(ct_opts, CT_N, &f->conf, argc, argv, 1, help, NULL, ed);
}

static void test_defaults(void **state)
{
    struct ct_fixture *f = *state;
    bool help;

    assert_int_equal(ct_load(f, &help, NULL, NULL), 0);
    assert_false(help);
    assert_string_equal(f->conf.data_dir, "/var/lib/weir");
    assert_null(f->conf.rack);
    assert_int_equal(f->conf.port, 9092);
    assert_int_equal(f->conf.segment_bytes, 1024 * 1024 * 1024);
    assert_false(f->conf.verbose);
    assert_true(f->conf.fsync);
}

static void test_ini_file(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    const char *path = ct_write_ini(f, "; comment\n"
                                       "[broker]\n"
                                       "data_dir = /data\n"
                                       "port=19092\n"
                                       "SEGMENT-BYTES = 64m\n"
                                       "verbose = yes\n"
                                       "rack = r1\n");
    bool help;

    assert_int_equal(ct_load(f, &help, &ed, "--config", path, NULL), 0);
    assert_string_equal(f->conf.data_dir, "/data");
    assert_int_equal(f->conf.port, 19092);
    assert_int_equal(f->conf.segment_bytes, 64 * 1024 * 1024);
    assert_true(f->conf.verbose);
    assert_string_equal(f->conf.rack, "r1");
    /* --config=path and WEIR_CONFIG work too */
    {
        char arg[96];
        (void)snprintf(arg, sizeof(arg), "--config=%s", path);
        assert_int_equal(ct_load(f, &help, &ed, arg, NULL), 0);
        assert_int_equal(f->conf.port, 19092);
    }
    assert_int_equal(setenv("WEIR_CONFIG", path, 1), 0);
    assert_int_equal(ct_load(f, &help, &ed, NULL), 0);
    assert_int_equal(f->conf.port, 19092);
}

static void test_ini_errors_name_the_key_and_line(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    const char *path = ct_write_ini(f, "port = 1\nbogus_key = 3\n");
    bool help;

    assert_int_equal(ct_load(f, &help, &ed, "--config", path, NULL),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "bogus_key"));
    assert_non_null(strstr(ed.msg, path));
    assert_int_equal(
        cfg_load_file(ct_opts, CT_N, &f->conf, "/nonexistent/weir.ini", &ed),
        WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "/nonexistent/weir.ini"));
    assert_int_equal(cfg_load_string(ct_opts, CT_N, &f->conf,
                                     "port = 1\nthis line is not ini\n", "mem",
                                     &ed),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "mem:2"));
    assert_int_equal(cfg_load_string(ct_opts, CT_N, &f->conf,
                                     "config = x.ini\n", "mem", &ed),
                     WEIR_ECONFIG);
}

static void test_environment(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    bool help;

    assert_int_equal(setenv("WEIR_DATA_DIR", "/env", 1), 0);
    assert_int_equal(setenv("WEIR_SEGMENT_BYTES", "2k", 1), 0);
    assert_int_equal(setenv("WEIR_FSYNC", "off", 1), 0);
    assert_int_equal(setenv("WEIR_BOGUS", "ignored", 1), 0);
    assert_int_equal(ct_load(f, &help, &ed, NULL), 0);
    assert_string_equal(f->conf.data_dir, "/env");
    assert_int_equal(f->conf.segment_bytes, 2048);
    assert_false(f->conf.fsync);
    (void)unsetenv("WEIR_BOGUS");
    assert_int_equal(setenv("WEIR_PORT", "seventy", 1), 0);
    assert_int_equal(ct_load(f, &help, &ed, NULL), WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "WEIR_PORT"));
}

static void test_flags(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    bool help;

    assert_int_equal(ct_load(f, &help, &ed, "--port", "1", "--data-dir=/f",
                             "--verbose", "--fsync", "false", "--rack=", NULL),
                     0);
    assert_int_equal(f->conf.port, 1);
    assert_string_equal(f->conf.data_dir, "/f");
    assert_true(f->conf.verbose);
    assert_false(f->conf.fsync);
    assert_string_equal(f->conf.rack, "");
    /* a bool flag at the end, or before another flag, means true */
    assert_int_equal(ct_load(f, &help, &ed, "--fsync", "--verbose", NULL), 0);
    assert_true(f->conf.fsync);
    assert_true(f->conf.verbose);
    assert_int_equal(ct_load(f, &help, &ed, "--verbose=0", NULL), 0);
    assert_false(f->conf.verbose);
    /* underscores are accepted in flag names */
    assert_int_equal(ct_load(f, &help, &ed, "--segment_bytes", "4KiB", NULL),
                     0);
    assert_int_equal(f->conf.segment_bytes, 4096);
}

static void test_flag_errors_name_the_flag(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    bool help;

    assert_int_equal(ct_load(f, &help, &ed, "--no-such-flag", "1", NULL),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "--no-such-flag"));
    assert_int_equal(ct_load(f, &help, &ed, "--port", NULL), WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "--port"));
    assert_int_equal(ct_load(f, &help, &ed, "stray", NULL), WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "stray"));
    assert_int_equal(ct_load(f, &help, &ed, "--verbose=maybe", NULL),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "verbose"));
    assert_int_equal(ct_load(f, &help, &ed, "--port", "12x", NULL),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "--port"));
    assert_non_null(strstr(ed.msg, "12x"));
    /* --config without a file is an error, not silently ignored */
    assert_int_equal(ct_load(f, &help, &ed, "--config", NULL), WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "--config"));
}

static void test_precedence(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    const char *path = ct_write_ini(f, "port = 1000\nrack = file\n");
    bool help;

    assert_int_equal(setenv("WEIR_PORT", "2000", 1), 0);
    assert_int_equal(
        ct_load(f, &help, &ed, "--config", path, "--port", "3000", NULL), 0);
    assert_int_equal(f->conf.port, 3000); /* flag beats all */
    assert_string_equal(f->conf.rack, "file");
    assert_int_equal(ct_load(f, &help, &ed, "--config", path, NULL), 0);
    assert_int_equal(f->conf.port, 2000); /* env beats file */
    (void)unsetenv("WEIR_PORT");
    assert_int_equal(ct_load(f, &help, &ed, "--config", path, NULL), 0);
    assert_int_equal(f->conf.port, 1000); /* file beats default */
    assert_int_equal(ct_load(f, &help, &ed, NULL), 0);
    assert_int_equal(f->conf.port, 9092);
    /* the flag may come before --config and still wins */
    assert_int_equal(
        ct_load(f, &help, &ed, "--port", "3001", "--config", path, NULL), 0);
    assert_int_equal(f->conf.port, 3001);
}

static void test_integer_ranges_and_suffixes(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    int64_t v;
    bool help;

    assert_int_equal(ct_load(f, &help, &ed, "--port", "0", NULL), WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "port"));
    assert_non_null(strstr(ed.msg, "65535"));
    assert_int_equal(ct_load(f, &help, &ed, "--port", "65536", NULL),
                     WEIR_ECONFIG);
    assert_int_equal(ct_load(f, &help, &ed, "--port", "65535", NULL), 0);
    assert_int_equal(ct_load(f, &help, &ed, "--port", "-1", NULL),
                     WEIR_ECONFIG);
    assert_int_equal(ct_load(f, &help, &ed, "--segment-bytes", "1023", NULL),
                     WEIR_ECONFIG);

    assert_int_equal(cfg_parse_int("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(cfg_parse_int("-5", &v), 0);
    assert_int_equal(v, -5);
    assert_int_equal(cfg_parse_int("3k", &v), 0);
    assert_int_equal(v, 3072);
    assert_int_equal(cfg_parse_int("3K", &v), 0);
    assert_int_equal(v, 3072);
    assert_int_equal(cfg_parse_int("2m", &v), 0);
    assert_int_equal(v, 2 * 1024 * 1024);
    assert_int_equal(cfg_parse_int("5g", &v), 0);
    assert_int_equal(v, 5ll * 1024 * 1024 * 1024);
    assert_int_equal(cfg_parse_int("1GiB", &v), 0);
    assert_int_equal(v, 1024 * 1024 * 1024);
    assert_int_equal(cfg_parse_int("-2k", &v), 0);
    assert_int_equal(v, -2048);
    assert_int_equal(cfg_parse_int("9223372036854775807", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(cfg_parse_int("9223372036854775808", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("8589934592g", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("-8589934593g", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("k", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("1t", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("1kk", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("1 k", &v), WEIR_ECONFIG);
    assert_int_equal(cfg_parse_int("0x10", &v), WEIR_ECONFIG);
}

static void test_bools(void **state)
{
    static const char *const yes[] = {"true", "TRUE", "1", "yes", "on", "On"};
    static const char *const no[] = {"false", "0", "no", "OFF"};
    static const char *const bad[] = {"", "2", "y", "truee", "enabled"};
    bool v;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        assert_int_equal(cfg_parse_bool(yes[i], &v), 0);
        assert_true(v);
    }
    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        assert_int_equal(cfg_parse_bool(no[i], &v), 0);
        assert_false(v);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(cfg_parse_bool(bad[i], &v), WEIR_ECONFIG);
    }
}

static void test_help(void **state)
{
    struct ct_fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *mf;
    bool help;

    assert_int_equal(ct_load(f, &help, NULL, "--help", NULL), 0);
    assert_true(help);
    assert_int_equal(ct_load(f, &help, NULL, "--port", "5", "-h", NULL), 0);
    assert_true(help);
    mf = open_memstream(&text, &len);
    assert_non_null(mf);
    cfg_print_help(mf, ct_opts, CT_N);
    assert_int_equal(fclose(mf), 0);
    assert_non_null(strstr(text, "--data-dir"));
    assert_non_null(strstr(text, "WEIR_SEGMENT_BYTES"));
    assert_non_null(strstr(text, "default: 9092"));
    assert_non_null(strstr(text, "--config FILE"));
    free(text);
}

static void test_rest_stops_at_first_argument(void **state)
{
    struct ct_fixture *f = *state;
    char *argv[] = {"weir", "--port", "7", "produce", "--port", "8", NULL};
    char *argv2[] = {"weir", "--verbose", "--", "--port", NULL};
    bool help;
    int rest = -1;

    assert_int_equal(
        cfg_load(ct_opts, CT_N, &f->conf, 6, argv, 1, &help, &rest, NULL), 0);
    assert_int_equal(rest, 3);
    assert_int_equal(f->conf.port, 7);
    cfg_free(ct_opts, CT_N, &f->conf);
    assert_int_equal(
        cfg_load(ct_opts, CT_N, &f->conf, 4, argv2, 1, &help, &rest, NULL), 0);
    assert_int_equal(rest, 3);
    assert_true(f->conf.verbose);
    cfg_free(ct_opts, CT_N, &f->conf);
    assert_int_equal(
        cfg_load(ct_opts, CT_N, &f->conf, 3, argv, 1, &help, &rest, NULL), 0);
    assert_int_equal(rest, 3);
}

static void test_set_and_dump(void **state)
{
    struct ct_fixture *f = *state;
    struct err_detail ed;
    char *text = NULL;
    size_t len = 0;
    FILE *mf;

    assert_int_equal(cfg_defaults(ct_opts, CT_N, &f->conf, &ed), 0);
    assert_int_equal(
        cfg_set(ct_opts, CT_N, &f->conf, "RACK", "r9", "test", &ed), 0);
    assert_int_equal(cfg_set(ct_opts, CT_N, &f->conf, "nope", "1", "test", &ed),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "nope"));
    mf = open_memstream(&text, &len);
    assert_non_null(mf);
    cfg_dump(mf, ct_opts, CT_N, &f->conf);
    assert_int_equal(fclose(mf), 0);
    assert_non_null(strstr(text, "rack = r9\n"));
    assert_non_null(strstr(text, "port = 9092\n"));
    assert_non_null(strstr(text, "fsync = true\n"));
    free(text);
}

#define CT_TEST(t) cmocka_unit_test_setup_teardown(t, ct_setup, ct_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        CT_TEST(test_defaults),
        CT_TEST(test_ini_file),
        CT_TEST(test_ini_errors_name_the_key_and_line),
        CT_TEST(test_environment),
        CT_TEST(test_flags),
        CT_TEST(test_flag_errors_name_the_flag),
        CT_TEST(test_precedence),
        CT_TEST(test_integer_ranges_and_suffixes),
        CT_TEST(test_bools),
        CT_TEST(test_help),
        CT_TEST(test_rest_stops_at_first_argument),
        CT_TEST(test_set_and_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
