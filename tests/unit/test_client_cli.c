/* SPDX-License-Identifier: Apache-2.0 */
/* The weir commands run in-process against the fake broker: exit codes
 * for usage errors and failures, produce --report order, consume output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/cli/cli.h"
#include "client/partitioner.h"
#include "test_client_fake_broker.h"

static struct fake_broker *fb;
static char bs[64];
static char out_path[] = "/tmp/weir-cli-test-out-XXXXXX";
static char in_path[] = "/tmp/weir-cli-test-in-XXXXXX";

typedef int cmd_fn(int argc, char **argv, const char *global_bs);

/* Run a command with stdout (and stdin, if given) redirected to files;
 * *out gets stdout's text (free it). */
static int
run(cmd_fn *cmd, char **argv, int argc, const char *input, char **out)
{
    FILE *f;
    long len;
    int saved_out;
    int saved_in = -1;
    int fd;
    int rv;

    if (input != NULL) {
        f = fopen(in_path, "w");
        assert_non_null(f);
        assert_int_equal(fputs(input, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        fd = open(in_path, O_RDONLY);
        saved_in = dup(0);
        assert_int_equal(dup2(fd, 0), 0);
        (void)close(fd);
    }
    (void)fflush(stdout);
    fd = open(out_path, O_WRONLY | O_TRUNC | O_CREAT, 0600);
    saved_out = dup(1);
    assert_int_equal(dup2(fd, 1), 1);
    (void)close(fd);
    cli_stop = 0;
    rv = cmd(argc, argv, bs);
    (void)fflush(stdout);
    assert_int_equal(dup2(saved_out, 1), 1);
    (void)close(saved_out);
    if (saved_in >= 0) {
        assert_int_equal(dup2(saved_in, 0), 0);
        (void)close(saved_in);
    }
    f = fopen(out_path, "r");
    assert_non_null(f);
    (void)fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    *out = calloc(1, (size_t)len + 1);
    assert_int_equal(fread(*out, 1, (size_t)len, f), (size_t)len);
    (void)fclose(f);
    return rv;
}

static int run0(cmd_fn *cmd, char **argv, int argc)
{
    char *out;
    int rv = run(cmd, argv, argc, NULL, &out);

    free(out);
    return rv;
}

static int setup(void **state)
{
    int fd;

    (void)state;
    if (fake_broker_start(0, &fb) != 0) {
        return -1;
    }
    (void)snprintf(bs, sizeof(bs), "127.0.0.1:%u", fake_broker_port(fb));
    fd = mkstemp(out_path);
    (void)close(fd);
    fd = mkstemp(in_path);
    (void)close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_broker_stop(fb);
    (void)unlink(out_path);
    (void)unlink(in_path);
    return 0;
}

#define ARGV(...)      ((char *[]){__VA_ARGS__})
#define ARGC(...)      ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define RUN0(cmd, ...) run0(cmd, ARGV(__VA_ARGS__), ARGC(__VA_ARGS__))
#define RUN(cmd, input, out, ...)                                              \
    run(cmd, ARGV(__VA_ARGS__), ARGC(__VA_ARGS__), input, out)

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    assert_int_equal(RUN0(cmd_topic, "create", "t"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "create", "t", "--partitions", "zero"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "create", "t", "--partitions", "0"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "frobnicate"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "describe"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "list", "extra"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "list", "--partitions", "3"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_produce, "t", "--acks", "2"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_produce, "t", "--bogus"), CLI_EXIT_USAGE);
    assert_int_equal(run0(cmd_produce, ARGV(NULL), 0), CLI_EXIT_USAGE);
    assert_int_equal(
        RUN0(cmd_consume, "t", "--from-beginning", "--offset", "3"),
        CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_consume, "t", "--from-time", "last tuesday"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_consume, "t", "--format", "%q"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_consume, "t", "--max-messages", "-1"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_offsets, "t", "--time", "noon"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_bench, "produce"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_bench, "sideways", "--topic", "t"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "list", "--bootstrap", "h:99999"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "create", "a b", "--partitions", "1"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_consume, ".."), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "--help"), CLI_EXIT_OK);
}

static void test_runtime_failures_exit_1(void **state)
{
    (void)state;
    assert_int_equal(RUN0(cmd_topic, "describe", "missing"), CLI_EXIT_FAIL);
    assert_int_equal(RUN0(cmd_topic, "delete", "missing"), CLI_EXIT_FAIL);
    assert_int_equal(RUN0(cmd_consume, "missing", "--timeout-ms", "10"),
                     CLI_EXIT_FAIL);
    assert_int_equal(RUN0(cmd_offsets, "missing"), CLI_EXIT_FAIL);
    assert_int_equal(RUN0(cmd_topic, "list", "--bootstrap", "127.0.0.1:1"),
                     CLI_EXIT_FAIL);
}

static void test_topic_lifecycle(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(RUN0(cmd_topic, "create", "life", "--partitions", "2",
                          "--config", "retention.ms=1000"),
                     CLI_EXIT_OK);
    assert_int_equal(RUN0(cmd_topic, "create", "life", "--partitions", "2"),
                     CLI_EXIT_FAIL);
    assert_int_equal(RUN(cmd_topic, NULL, &out, "list"), 0);
    assert_non_null(strstr(out, "life\n"));
    free(out);
    assert_int_equal(RUN(cmd_topic, NULL, &out, "describe", "life"), 0);
    assert_non_null(strstr(out, "Topic: life  Partitions: 2"));
    free(out);
    assert_int_equal(RUN0(cmd_topic, "delete", "life"), CLI_EXIT_OK);
}

static void test_produce_report_in_input_order(void **state)
{
    const int n = 3000;
    size_t cap = (size_t)n * 24;
    char *input = calloc(1, cap);
    size_t used = 0;
    int64_t next[3] = {0, 0, 0};
    char *out;
    char *line;
    char key[16];
    int i;

    (void)state;
    assert_int_equal(RUN0(cmd_topic, "create", "rep", "--partitions", "3"), 0);
    for (i = 0; i < n; i++) {
        used +=
            (size_t)snprintf(input + used, cap - used, "k%d:v%d\n", i % 97, i);
    }
    assert_int_equal(RUN(cmd_produce, input, &out, "rep", "--key-separator",
                         ":", "--report", "--acks", "1", "--linger-ms", "2"),
                     0);
    line = out;
    for (i = 0; i < n; i++) {
        int part;
        long long off;
        int kl = snprintf(key, sizeof(key), "k%d", i % 97);
        assert_int_equal(sscanf(line, "%d %lld", &part, &off), 2);
        assert_int_equal(part, partitioner_key(key, (size_t)kl, 3));
        assert_int_equal(off, next[part]++);
        line = strchr(line, '\n') + 1;
    }
    assert_int_equal(*line, '\0');
    free(out);
    free(input);

    /* back out, with keys, oldest first */
    assert_int_equal(RUN(cmd_consume, NULL, &out, "rep", "--partition", "1",
                         "--from-beginning", "--timeout-ms", "300", "--format",
                         "%k=%v"),
                     0);
    assert_int_equal(strncmp(out, "k", 1), 0);
    for (i = 0, line = out; *line != '\0'; i++) {
        line = strchr(line, '\n') + 1;
    }
    assert_int_equal(i, next[1]);
    free(out);
    assert_int_equal(RUN(cmd_consume, NULL, &out, "rep", "--from-beginning",
                         "--max-messages", "10", "--format", "%p %o"),
                     0);
    for (i = 0, line = out; *line != '\0'; i++) {
        line = strchr(line, '\n') + 1;
    }
    assert_int_equal(i, 10);
    free(out);
    assert_int_equal(RUN(cmd_offsets, NULL, &out, "rep", "--partition", "2"),
                     0);
    {
        char expect[32];
        (void)snprintf(expect, sizeof(expect), "2 %lld\n", (long long)next[2]);
        assert_string_equal(out, expect);
    }
    free(out);
}

static void test_produce_last_line_without_newline(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(RUN0(cmd_topic, "create", "tail", "--partitions", "1"), 0);
    assert_int_equal(RUN(cmd_produce, "a\n\nb", &out, "tail", "--report"), 0);
    assert_string_equal(out, "0 0\n0 1\n0 2\n");
    free(out);
    assert_int_equal(RUN(cmd_consume, NULL, &out, "tail", "--from-beginning",
                         "--timeout-ms", "200", "--format", "[%v]"),
                     0);
    assert_string_equal(out, "[a]\n[]\n[b]\n");
    free(out);
}

static void test_produce_to_missing_topic_fails(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(RUN(cmd_produce, "x\n", &out, "nowhere"), CLI_EXIT_FAIL);
    free(out);
    assert_int_equal(RUN0(cmd_topic, "create", "one", "--partitions", "1"), 0);
    assert_int_equal(RUN(cmd_produce, "x\n", &out, "one", "--partition", "4"),
                     CLI_EXIT_FAIL);
    free(out);
}

static void test_bench_produce_and_consume(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(RUN(cmd_bench, NULL, &out, "produce", "--topic", "bench",
                         "--partitions", "2", "--records", "2000",
                         "--record-size", "64", "--json"),
                     0);
    assert_non_null(strstr(out, "\"bench\":\"produce\""));
    assert_non_null(strstr(out, "\"records\":2000,"));
    assert_non_null(strstr(out, "\"latency\":\"ack\""));
    free(out);
    assert_int_equal(RUN(cmd_bench, NULL, &out, "consume", "--topic", "bench",
                         "--records", "2000", "--timeout-ms", "2000"),
                     0);
    assert_non_null(strstr(out, "consume: 2000 records"));
    assert_non_null(strstr(out, "end-to-end latency ms: p50"));
    free(out);
}

static void test_user_and_acl_commands(void **state)
{
    char *out;

    (void)state;
    assert_int_equal(RUN0(cmd_user, "create"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_user, "create", "u", "--mechanism", "PLAIN"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_user, "create", "u", "--iterations", "10"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_user, "list", "--iterations", "5000"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:x"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:x", "--resource",
                          "cluster", "--name", "n", "--operation", "alter"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:x", "--resource",
                          "topic", "--operation", "fly"),
                     CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:x", "--resource",
                          "topic", "--operation", "read"),
                     CLI_EXIT_USAGE); /* topic needs --name */

    assert_int_equal(RUN(cmd_user, "pw1\n", &out, "create", "carol"), 0);
    free(out);
    assert_int_equal(RUN(cmd_user, "pw2\n", &out, "create", "carol",
                         "--mechanism", "SCRAM-SHA-512", "--iterations",
                         "5000"),
                     0);
    free(out);
    assert_int_equal(RUN(cmd_user, NULL, &out, "list"), 0);
    assert_non_null(strstr(out, "NAME"));
    assert_non_null(
        strstr(out, "carol                    SCRAM-SHA-256  4096"));
    assert_non_null(
        strstr(out, "carol                    SCRAM-SHA-512  5000"));
    free(out);
    assert_int_equal(
        RUN0(cmd_user, "delete", "carol", "--mechanism", "SCRAM-SHA-512"), 0);
    assert_int_equal(
        RUN0(cmd_user, "delete", "carol", "--mechanism", "SCRAM-SHA-512"),
        CLI_EXIT_FAIL);

    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:carol",
                          "--resource", "topic", "--name", "orders-",
                          "--pattern", "prefixed", "--operation", "write"),
                     0);
    assert_int_equal(RUN0(cmd_acl, "add", "--principal", "User:eve",
                          "--resource", "cluster", "--operation", "alter",
                          "--deny"),
                     0);
    assert_int_equal(
        RUN(cmd_acl, NULL, &out, "list", "--principal", "User:carol"), 0);
    assert_non_null(strstr(out, "PRINCIPAL"));
    assert_non_null(strstr(out, "User:carol"));
    assert_non_null(strstr(out, "prefixed"));
    assert_non_null(strstr(out, "orders-"));
    assert_non_null(strstr(out, "write"));
    assert_null(strstr(out, "User:eve"));
    free(out);
    assert_int_equal(RUN(cmd_acl, NULL, &out, "list", "--resource", "cluster"),
                     0);
    assert_non_null(strstr(out, "User:eve"));
    assert_non_null(strstr(out, "deny"));
    free(out);
    assert_int_equal(RUN0(cmd_acl, "remove", "--principal", "User:eve",
                          "--resource", "cluster", "--operation", "alter",
                          "--deny"),
                     0);
    assert_int_equal(RUN0(cmd_acl, "remove", "--principal", "User:eve",
                          "--resource", "cluster", "--operation", "alter",
                          "--deny"),
                     CLI_EXIT_FAIL);
}

/* Last: --user sticks for the rest of the process, like --tls. */
static void test_login_with_user_option(void **state)
{
    char pw_path[] = "/tmp/weir-cli-test-pw-XXXXXX";
    int fd = mkstemp(pw_path);
    char *out;

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hunter2\n", 8), 8);
    (void)close(fd);
    assert_int_equal(RUN(cmd_user, "hunter2\n", &out, "create", "dave"), 0);
    free(out);
    /* no password given */
    assert_int_equal(RUN0(cmd_topic, "list", "--user", "dave"), CLI_EXIT_USAGE);
    assert_int_equal(RUN0(cmd_topic, "list", "--password-file", pw_path,
                          "--sasl-mechanism", "SCRAM-SHA-512"),
                     CLI_EXIT_FAIL); /* dave has no SHA-512 credential */
    assert_int_equal(
        RUN0(cmd_topic, "list", "--sasl-mechanism", "SCRAM-SHA-256"), 0);
    fd = open(pw_path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "wrong\n", 6), 6);
    (void)close(fd);
    assert_int_equal(RUN0(cmd_topic, "list", "--password-file", pw_path),
                     CLI_EXIT_FAIL);
    (void)unlink(pw_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_runtime_failures_exit_1),
        cmocka_unit_test(test_topic_lifecycle),
        cmocka_unit_test(test_produce_report_in_input_order),
        cmocka_unit_test(test_produce_last_line_without_newline),
        cmocka_unit_test(test_produce_to_missing_topic_fails),
        cmocka_unit_test(test_bench_produce_and_consume),
        cmocka_unit_test(test_user_and_acl_commands),
        cmocka_unit_test(test_login_with_user_option),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
