/* SPDX-License-Identifier: Apache-2.0 */
/* weir: command-line client for Weir. Global options, then a command;
 * this file only dispatches. */
#include <stdio.h>
#include <string.h>

#include "client/cli/cli.h"

static const struct args_spec main_specs[] = {
    CLI_COMMON_SPECS,
    {"version", 'V', ARGS_FLAG, NULL, "print the version"},
};

static void main_usage(FILE *f)
{
    (void)fprintf(
        f, "Usage: weir [--bootstrap HOST:PORT[,...]] [--tls [--ca FILE]\n"
           "            [--cert FILE --key FILE]] [--user NAME\n"
           "            --password-file FILE [--sasl-mechanism M]] COMMAND "
           "[ARGS]\n"
           "\n"
           "Commands:\n"
           "  topic create NAME --partitions N   create a topic\n"
           "  topic list                         list topics\n"
           "  topic describe NAME                partitions, leaders, offsets, "
           "configs\n"
           "  topic delete NAME                  delete a topic\n"
           "  produce TOPIC                      write stdin lines as records\n"
           "  consume TOPIC                      print records\n"
           "  offsets TOPIC                      partition offsets by time\n"
           "  cluster                            controller, brokers, leaders, "
           "ISRs\n"
           "  bench produce|consume --topic T    measure throughput and "
           "latency\n"
           "  group list|describe|delete|reset-offsets\n"
           "                                     consumer groups and their "
           "offsets\n"
           "  user create|delete|list            SCRAM users (password on "
           "stdin)\n"
           "  acl add|remove|list                access control rules\n"
           "\n"
           "Global options:\n");
    args_print_options(f, main_specs,
                       sizeof(main_specs) / sizeof(main_specs[0]));
    (void)fprintf(f, "\nRun 'weir COMMAND --help' for a command's options.\n"
                     "Exit status: 0 ok, 1 failure, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
    struct args a;
    char err[300];
    const char *cmd;
    const char *bs;
    int used;

    if (args_parse(main_specs, sizeof(main_specs) / sizeof(main_specs[0]),
                   argc - 1, argv + 1, true, &a, &used, err,
                   sizeof(err)) != 0) {
        return cli_usage(NULL, "%s", err);
    }
    if (args_has(&a, "version")) {
        (void)printf("weir %s\n", weir_version());
        return CLI_EXIT_OK;
    }
    if (args_has(&a, "help")) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (used >= argc - 1) {
        main_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    bs = args_get(&a, "bootstrap");
    cli_tls_from_args(&a);
    cmd = argv[used + 1];
    argc -= used + 2;
    argv += used + 2;
    if (strcmp(cmd, "topic") == 0) {
        return cmd_topic(argc, argv, bs);
    }
    if (strcmp(cmd, "produce") == 0) {
        return cmd_produce(argc, argv, bs);
    }
    if (strcmp(cmd, "consume") == 0) {
        return cmd_consume(argc, argv, bs);
    }
    if (strcmp(cmd, "offsets") == 0) {
        return cmd_offsets(argc, argv, bs);
    }
    if (strcmp(cmd, "bench") == 0) {
        return cmd_bench(argc, argv, bs);
    }
    if (strcmp(cmd, "cluster") == 0) {
        return cmd_cluster(argc, argv, bs);
    }
    if (strcmp(cmd, "group") == 0) {
        return cmd_group(argc, argv, bs);
    }
    if (strcmp(cmd, "user") == 0) {
        return cmd_user(argc, argv, bs);
    }
    if (strcmp(cmd, "acl") == 0) {
        return cmd_acl(argc, argv, bs);
    }
    if (strcmp(cmd, "help") == 0) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "version") == 0) {
        (void)printf("weir %s\n", weir_version());
        return CLI_EXIT_OK;
    }
    return cli_usage(NULL, "unknown command '%s'", cmd);
}
