/* SPDX-License-Identifier: Apache-2.0 */
/* weir user create|delete|list: SCRAM credentials. The password is read
 * from stdin (prompted for twice, without echo, on a terminal); the
 * client derives the credential and only that goes to the broker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "client/cli/cli.h"

#define USER_USAGE                                                             \
    "user create NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] "              \
    "[--iterations N]   (password on stdin)\n"                                 \
    "       weir user delete NAME [--mechanism M]\n"                           \
    "       weir user list"

static const struct args_spec user_specs[] = {
    CLI_COMMON_SPECS,
    {"mechanism", 0, ARGS_VALUE, "M",
     "create, delete: SCRAM-SHA-256 (default) or SCRAM-SHA-512"},
    {"iterations", 0, ARGS_VALUE, "N",
     "create: PBKDF2 iterations (default 4096)"},
};

#define USER_NSPECS       (sizeof(user_specs) / sizeof(user_specs[0]))
#define USER_MAX_PASSWORD 1024

/* One line from the terminal with echo off; false on EOF. */
static bool user_prompt(const char *prompt, char *buf, size_t cap)
{
    struct termios old;
    struct termios quiet;
    bool echo_off;
    bool ok;

    (void)fputs(prompt, stderr);
    (void)fflush(stderr);
    echo_off = tcgetattr(STDIN_FILENO, &old) == 0;
    if (echo_off) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    ok = fgets(buf, (int)cap, stdin) != NULL;
    if (echo_off) {
        (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    }
    (void)fputc('\n', stderr);
    if (ok) {
        buf[strcspn(buf, "\r\n")] = '\0';
    }
    return ok;
}

int cli_read_new_password(char *buf, size_t cap)
{
    char again[USER_MAX_PASSWORD];
    bool same;

    buf[0] = '\0';
    if (!isatty(STDIN_FILENO)) {
        if (fgets(buf, (int)cap, stdin) == NULL) {
            buf[0] = '\0';
        }
        buf[strcspn(buf, "\r\n")] = '\0';
    } else {
        if (!user_prompt("New password: ", buf, cap) ||
            !user_prompt("Again: ", again, sizeof(again))) {
            explicit_bzero(buf, cap);
            return cli_failf("no password given");
        }
        same = strcmp(buf, again) == 0;
        explicit_bzero(again, sizeof(again));
        if (!same) {
            explicit_bzero(buf, cap);
            return cli_failf("the passwords do not match");
        }
    }
    if (buf[0] == '\0') {
        return cli_failf("empty password (give it on stdin)");
    }
    return 0;
}

static int
user_create(struct weir_client *c, const char *name, const struct args *a)
{
    char pw[USER_MAX_PASSWORD];
    struct err_detail ed;
    int64_t iter;
    int rv;

    rv = cli_opt_int("user", a, "iterations", 4096, 1000000, 4096, &iter);
    if (rv != 0) {
        return rv;
    }
    rv = cli_read_new_password(pw, sizeof(pw));
    if (rv != 0) {
        return rv;
    }
    rv = weir_admin_user_upsert(c, name, args_get(a, "mechanism"),
                                (uint32_t)iter, pw, &ed);
    explicit_bzero(pw, sizeof(pw));
    if (rv != 0) {
        return cli_fail(&ed);
    }
    (void)printf("set the %s credential of user %s\n",
                 args_get(a, "mechanism") != NULL ? args_get(a, "mechanism")
                                                  : "SCRAM-SHA-256",
                 name);
    return CLI_EXIT_OK;
}

static int
user_delete(struct weir_client *c, const char *name, const struct args *a)
{
    struct err_detail ed;

    if (weir_admin_user_delete(c, name, args_get(a, "mechanism"), &ed) != 0) {
        return cli_fail(&ed);
    }
    (void)printf("deleted the %s credential of user %s\n",
                 args_get(a, "mechanism") != NULL ? args_get(a, "mechanism")
                                                  : "SCRAM-SHA-256",
                 name);
    return CLI_EXIT_OK;
}

static int user_list(struct weir_client *c)
{
    struct weir_user_list *l;
    struct err_detail ed;
    size_t i;

    if (weir_admin_user_list(c, &l, &ed) != 0) {
        return cli_fail(&ed);
    }
    (void)printf("%-24s %-14s %s\n", "NAME", "MECHANISM", "ITERATIONS");
    for (i = 0; i < l->n; i++) {
        (void)printf("%-24s %-14s %u\n", l->users[i].name,
                     l->users[i].mechanism, l->users[i].iterations);
    }
    weir_user_list_free(l);
    return CLI_EXIT_OK;
}

static int user_check_args(const struct args *a, const char **action)
{
    const char *m = args_get(a, "mechanism");
    size_t want;

    if (a->n_pos == 0) {
        return cli_usage("user", "user needs an action: create, delete or "
                                 "list");
    }
    *action = a->pos[0];
    if (strcmp(*action, "list") == 0) {
        want = 1;
    } else if (strcmp(*action, "create") == 0 ||
               strcmp(*action, "delete") == 0) {
        want = 2;
    } else {
        return cli_usage("user", "unknown user action '%s'", *action);
    }
    if (a->n_pos < want) {
        return cli_usage("user", "user %s needs a user name", *action);
    }
    if (a->n_pos > want) {
        return cli_usage("user", "unexpected argument '%s'", a->pos[want]);
    }
    if (m != NULL && strcmp(m, "SCRAM-SHA-256") != 0 &&
        strcmp(m, "SCRAM-SHA-512") != 0) {
        return cli_usage("user",
                         "--mechanism must be SCRAM-SHA-256 or "
                         "SCRAM-SHA-512, not '%s'",
                         m);
    }
    if ((want == 1 && m != NULL) ||
        (strcmp(*action, "create") != 0 && args_has(a, "iterations"))) {
        return cli_usage("user", "--mechanism goes with create and delete, "
                                 "--iterations with create");
    }
    return 0;
}

int cmd_user(int argc, char **argv, const char *global_bs)
{
    struct weir_client *c;
    const char *action = NULL;
    struct args a;
    bool done;
    int64_t iter;
    int rv;

    rv = cli_parse("user", USER_USAGE, user_specs, USER_NSPECS, argc, argv, &a,
                   &done);
    if (done) {
        return rv;
    }
    rv = user_check_args(&a, &action);
    if (rv == 0) {
        rv = cli_opt_int("user", &a, "iterations", 4096, 1000000, 4096, &iter);
    }
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    if (strcmp(action, "create") == 0) {
        rv = user_create(c, a.pos[1], &a);
    } else if (strcmp(action, "delete") == 0) {
        rv = user_delete(c, a.pos[1], &a);
    } else {
        rv = user_list(c);
    }
    weir_client_free(c);
    return rv;
}
