/* SPDX-License-Identifier: Apache-2.0 */
/* Shared pieces of the weir CLI: exit codes, error printing, the common
 * options every command takes, client set-up and signal handling. Each
 * command prints exactly one message on failure (prefixed "weir: ") and
 * returns CLI_EXIT_USAGE for bad arguments, CLI_EXIT_FAIL otherwise.
 * Locality: the main thread. */
#ifndef CLIENT_CLI_CLI_H
#define CLIENT_CLI_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "client/cli/args.h"
#include "client/weir.h"

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

/* Options every command accepts (spread into each command's table). */
#define CLI_COMMON_SPECS                                                       \
    {"bootstrap", 0, ARGS_VALUE, "HOST:PORT[,...]",                            \
     "brokers to start from (else $WEIR_BOOTSTRAP, "                           \
     "else " WEIR_DEFAULT_BOOTSTRAP ")"},                                      \
        {"tls", 0, ARGS_FLAG, NULL, "connect with TLS (else $WEIR_TLS=1)"},    \
        {"ca", 0, ARGS_VALUE, "FILE",                                          \
         "TLS: CAs that sign the brokers' certificates (else $WEIR_CA, else "  \
         "the system's)"},                                                     \
        {"cert", 0, ARGS_VALUE, "FILE",                                        \
         "TLS: client certificate for mutual TLS (else $WEIR_CERT)"},          \
        {"key", 0, ARGS_VALUE, "FILE", "TLS: key of --cert (else $WEIR_KEY)"}, \
        {"user", 0, ARGS_VALUE, "NAME",                                        \
         "log in with SASL/SCRAM as NAME (else $WEIR_USER)"},                  \
        {"password-file", 0, ARGS_VALUE, "FILE",                               \
         "--user's password: FILE's first line (else $WEIR_PASSWORD)"},        \
        {"sasl-mechanism", 0, ARGS_VALUE, "M",                                 \
         "SCRAM-SHA-256 (default) or SCRAM-SHA-512 (else "                     \
         "$WEIR_SASL_MECHANISM)"},                                             \
        {"client-id", 0, ARGS_VALUE, "ID",                                     \
         "sent with every request; brokers apply quotas per id (else "         \
         "$WEIR_CLIENT_ID, else weir-cli)"},                                   \
    {                                                                          \
        "help", 'h', ARGS_FLAG, NULL, "show this help"                         \
    }

/* Set by SIGINT/SIGTERM once cli_signals_install ran. */
extern volatile sig_atomic_t cli_stop;
void cli_signals_install(void);

/* Print "weir: <message>" and a hint, return CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) WEIR_PRINTF(2, 3);
/* Print "weir: <message>", return CLI_EXIT_FAIL. */
int cli_fail(const struct err_detail *ed);
int cli_failf(const char *fmt, ...) WEIR_PRINTF(1, 2);

/* Bootstrap list: --bootstrap, $WEIR_BOOTSTRAP, default. global_bs is
 * the value given before the command, if any. */
const char *cli_bootstrap(const struct args *a, const char *global_bs);
/* Take --tls, --ca, --cert, --key, --user, --password-file,
 * --sasl-mechanism and --client-id from parsed options for the client
 * cli_client_open makes (cli_bootstrap does this for a command's). */
void cli_tls_from_args(const struct args *a);

/* A client for the bootstrap list, or CLI_EXIT_* with the message out.
 * With a user (--user, $WEIR_USER) it logs in with SASL/SCRAM: the
 * password comes from --password-file or $WEIR_PASSWORD, never from the
 * command line. */
int cli_client_open(const char *bootstrap, struct weir_client **out);

/* The first line of path (newline stripped) into buf. Returns 0, or -1
 * with a message in err. */
int cli_read_first_line(
    const char *path, char *buf, size_t cap, char *err, size_t err_len);
/* A new password from stdin: on a terminal, prompted for twice without
 * echo (they must match); else stdin's first line. Returns 0 or CLI_EXIT_*
 * with the message out. */
int cli_read_new_password(char *buf, size_t cap);

/* Parse a command's arguments; prints help (*done, CLI_EXIT_OK) or a usage
 * error (*done, CLI_EXIT_USAGE). */
int cli_parse(const char *cmd,
              const char *usage,
              const struct args_spec *specs,
              size_t n,
              int argc,
              char **argv,
              struct args *a,
              bool *done);

/* Integer option with bounds; returns CLI_EXIT_USAGE with a message on a
 * bad value, 0 otherwise (def when absent). */
int cli_opt_int(const char *cmd,
                const struct args *a,
                const char *name,
                int64_t min,
                int64_t max,
                int64_t def,
                int64_t *out);
/* A topic name that passes the naming rules, else CLI_EXIT_USAGE. */
int cli_check_topic(const char *cmd, const char *name);
/* --acks 0|1|all|-1 into 0, 1 or -1. */
int cli_opt_acks(const char *cmd,
                 const struct args *a,
                 int32_t def,
                 int32_t *out);

int cmd_topic(int argc, char **argv, const char *global_bs);
int cmd_produce(int argc, char **argv, const char *global_bs);
int cmd_consume(int argc, char **argv, const char *global_bs);
int cmd_offsets(int argc, char **argv, const char *global_bs);
int cmd_bench(int argc, char **argv, const char *global_bs);
int cmd_cluster(int argc, char **argv, const char *global_bs);
int cmd_group(int argc, char **argv, const char *global_bs);
int cmd_user(int argc, char **argv, const char *global_bs);
int cmd_acl(int argc, char **argv, const char *global_bs);

/* weir group reset-offsets (cmd_group_reset.c): check the options (a
 * usage error, or 0), then run it. */
int cmd_group_reset_check(const struct args *a);
int cmd_group_reset(struct weir_client *c,
                    const char *group,
                    const struct args *a);

/* ISO 8601 duration PnDTnHnMnS (P1D, PT15M, P1DT2H30M10S) in ms.
 * Returns 0, or -1 if malformed. */
int cli_parse_duration(const char *s, int64_t *ms);
/* "TOPIC" or "TOPIC:P[,P...]": the topic into topic (topic_len bytes),
 * up to cap partitions into parts (*n = 0: all). Returns 0 or -1. */
int cli_parse_topic_parts(const char *s,
                          char *topic,
                          size_t topic_len,
                          int32_t *parts,
                          size_t cap,
                          size_t *n);

#endif /* CLIENT_CLI_CLI_H */
