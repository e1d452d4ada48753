/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"

volatile sig_atomic_t cli_stop;

static void cli_on_signal(int sig)
{
    (void)sig;
    cli_stop = 1;
}

void cli_signals_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cli_on_signal;
    (void)sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns EINTR */
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    (void)fputs("weir: ", stderr);
    va_start(ap, fmt);
    (void)vfprintf(stderr, fmt, ap);
    va_end(ap);
    (void)fprintf(stderr, "\nTry 'weir %s%s--help'.\n", cmd != NULL ? cmd : "",
                  cmd != NULL ? " " : "");
    return CLI_EXIT_USAGE;
}

int cli_fail(const struct err_detail *ed)
{
    (void)fprintf(stderr, "weir: %s\n",
                  ed->msg[0] != '\0' ? ed->msg : weir_err_str(ed->code));
    return CLI_EXIT_FAIL;
}

int cli_failf(const char *fmt, ...)
{
    va_list ap;

    (void)fputs("weir: ", stderr);
    va_start(ap, fmt);
    (void)vfprintf(stderr, fmt, ap);
    va_end(ap);
    (void)fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

/* Connection settings: global options, then the command's, then WEIR_TLS,
 * WEIR_CA, WEIR_CERT, WEIR_KEY, WEIR_CLIENT_ID, WEIR_USER, WEIR_PASSWORD,
 * WEIR_SASL_MECHANISM. */
static struct {
    bool tls;
    const char *ca;
    const char *cert;
    const char *key;
    const char *client_id;
    const char *user;
    const char *password_file;
    const char *sasl_mechanism;
} cli_tls;

void cli_tls_from_args(const struct args *a)
{
    cli_tls.tls = cli_tls.tls || args_has(a, "tls");
    if (args_get(a, "ca") != NULL) {
        cli_tls.ca = args_get(a, "ca");
    }
    if (args_get(a, "cert") != NULL) {
        cli_tls.cert = args_get(a, "cert");
    }
    if (args_get(a, "key") != NULL) {
        cli_tls.key = args_get(a, "key");
    }
    if (args_get(a, "client-id") != NULL) {
        cli_tls.client_id = args_get(a, "client-id");
    }
    if (args_get(a, "user") != NULL) {
        cli_tls.user = args_get(a, "user");
    }
    if (args_get(a, "password-file") != NULL) {
        cli_tls.password_file = args_get(a, "password-file");
    }
    if (args_get(a, "sasl-mechanism") != NULL) {
        cli_tls.sasl_mechanism = args_get(a, "sasl-mechanism");
    }
}

static const char *cli_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *cli_bootstrap(const struct args *a, const char *global_bs)
{
    const char *bs = args_get(a, "bootstrap");
    const char *env;

    cli_tls_from_args(a);
    if (bs != NULL) {
        return bs;
    }
    if (global_bs != NULL) {
        return global_bs;
    }
    env = getenv("WEIR_BOOTSTRAP");
    return env != NULL && env[0] != '\0' ? env : WEIR_DEFAULT_BOOTSTRAP;
}

int cli_read_first_line(
    const char *path, char *buf, size_t cap, char *err, size_t err_len)
{
    FILE *f = fopen(path, "r");
    size_t len;
    int e;

    if (f == NULL) {
        e = errno;
        (void)snprintf(err, err_len, "cannot open %s: %s", path, strerror(e));
        return -1;
    }
    if (fgets(buf, (int)cap, f) == NULL) {
        buf[0] = '\0';
    }
    (void)fclose(f);
    len = strcspn(buf, "\r\n");
    if (buf[len] == '\0' && len + 1 == cap) {
        explicit_bzero(buf, cap);
        (void)snprintf(err, err_len, "%s: the first line is too long", path);
        return -1;
    }
    buf[len] = '\0';
    return 0;
}

/* SASL settings: --user/$WEIR_USER, the password from --password-file or
 * $WEIR_PASSWORD, --sasl-mechanism/$WEIR_SASL_MECHANISM. */
static int cli_sasl(struct weir_client_config *cfg, char *pw, size_t cap)
{
    char err[400];

    cfg->sasl_user = cli_tls.user != NULL ? cli_tls.user : cli_env("WEIR_USER");
    if (cfg->sasl_user == NULL) {
        if (cli_tls.password_file != NULL) {
            return cli_usage(NULL, "--password-file goes with --user");
        }
        return 0;
    }
    cfg->sasl_mechanism = cli_tls.sasl_mechanism != NULL
                              ? cli_tls.sasl_mechanism
                              : cli_env("WEIR_SASL_MECHANISM");
    if (cli_tls.password_file != NULL) {
        if (cli_read_first_line(cli_tls.password_file, pw, cap, err,
                                sizeof(err)) != 0) {
            return cli_failf("%s", err);
        }
        cfg->sasl_password = pw;
    } else if (getenv("WEIR_PASSWORD") != NULL) {
        cfg->sasl_password = getenv("WEIR_PASSWORD");
    } else {
        return cli_usage(NULL,
                         "--user %s needs --password-file FILE or "
                         "$WEIR_PASSWORD",
                         cfg->sasl_user);
    }
    return 0;
}

int cli_client_open(const char *bootstrap, struct weir_client **out)
{
    struct weir_client_config cfg;
    struct err_detail ed;
    char pw[1024];
    int rv;

    weir_client_config_init(&cfg);
    cfg.bootstrap = bootstrap;
    cfg.client_id = cli_tls.client_id != NULL ? cli_tls.client_id
                    : cli_env("WEIR_CLIENT_ID") != NULL
                        ? cli_env("WEIR_CLIENT_ID")
                        : "weir-cli";
    cfg.tls = cli_tls.tls || (cli_env("WEIR_TLS") != NULL &&
                              strcmp(cli_env("WEIR_TLS"), "0") != 0);
    cfg.tls_ca = cli_tls.ca != NULL ? cli_tls.ca : cli_env("WEIR_CA");
    cfg.tls_cert = cli_tls.cert != NULL ? cli_tls.cert : cli_env("WEIR_CERT");
    cfg.tls_key = cli_tls.key != NULL ? cli_tls.key : cli_env("WEIR_KEY");
    if (!cfg.tls && (cfg.tls_ca != NULL || cfg.tls_cert != NULL)) {
        cfg.tls = true; /* a CA or a certificate means TLS */
    }
    *out = NULL;
    pw[0] = '\0';
    rv = cli_sasl(&cfg, pw, sizeof(pw));
    if (rv == 0 && weir_client_new(&cfg, out, &ed) != 0) {
        rv = ed.code == WEIR_EINVALID_ARGUMENT ? cli_usage(NULL, "%s", ed.msg)
                                               : cli_fail(&ed);
    }
    explicit_bzero(pw, sizeof(pw));
    return rv;
}

int cli_parse(const char *cmd,
              const char *usage,
              const struct args_spec *specs,
              size_t n,
              int argc,
              char **argv,
              struct args *a,
              bool *done)
{
    char err[300];

    *done = true;
    if (args_parse(specs, n, argc, argv, false, a, NULL, err, sizeof(err)) !=
        0) {
        return cli_usage(cmd, "%s", err);
    }
    if (args_has(a, "help")) {
        (void)printf("Usage: weir %s\n\nOptions:\n", usage);
        args_print_options(stdout, specs, n);
        return CLI_EXIT_OK;
    }
    *done = false;
    return 0;
}

int cli_opt_int(const char *cmd,
                const struct args *a,
                const char *name,
                int64_t min,
                int64_t max,
                int64_t def,
                int64_t *out)
{
    const char *v = args_get(a, name);
    char what[64];
    char err[300];

    *out = def;
    if (v == NULL) {
        return 0;
    }
    (void)snprintf(what, sizeof(what), "--%s", name);
    if (args_int(v, what, min, max, true, out, err, sizeof(err)) != 0) {
        return cli_usage(cmd, "%s", err);
    }
    return 0;
}

int cli_opt_acks(const char *cmd,
                 const struct args *a,
                 int32_t def,
                 int32_t *out)
{
    const char *v = args_get(a, "acks");

    *out = def;
    if (v == NULL) {
        return 0;
    }
    if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) {
        *out = v[0] - '0';
    } else if (strcmp(v, "all") == 0 || strcmp(v, "-1") == 0) {
        *out = -1;
    } else {
        return cli_usage(cmd, "--acks must be 0, 1 or all, not '%s'", v);
    }
    return 0;
}

int cli_check_topic(const char *cmd, const char *name)
{
    struct err_detail ed;

    if (names_topic_check(name, strlen(name), &ed) != 0) {
        return cli_usage(cmd, "%s", ed.msg);
    }
    return 0;
}
