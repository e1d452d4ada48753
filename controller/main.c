/* SPDX-License-Identifier: Apache-2.0 */
/* weir-controller: arguments and wiring only. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/datadir.h"
#include "common/trace.h"
#include "controller/ctl_io.h"

#ifndef WEIR_VERSION
#define WEIR_VERSION "dev"
#endif

static void main_usage(FILE *f)
{
    (void)fprintf(f, "usage: weir-controller [--config FILE] [--listen "
                     "HOST:PORT] [--data-dir DIR] [OPTION VALUE]...\n"
                     "       weir-controller --format [--data-dir DIR] "
                     "[--cluster-id ID]\n\n"
                     "Weir controller: decides cluster metadata (brokers, "
                     "topics, leaders, ISRs)\nand keeps it in a metadata log "
                     "that brokers tail.\n"
                     "Every option is also a config-file key (INI, e.g. "
                     "data-dir = /var/lib/weir/controller)\nand an environment "
                     "variable WEIR_<OPTION> (e.g. WEIR_SESSION_TIMEOUT_MS).\n"
                     "Precedence: default < config file < environment < flag."
                     "\n\n--format creates a new cluster: it writes the data "
                     "dir's meta.properties\n(cluster id: --cluster-id, or "
                     "random) and exits. It refuses a dir that holds\n"
                     "metadata. A controller does not start on an empty data "
                     "dir unless it was\nformatted (or auto-format is set)."
                     "\n\noptions:\n");
    cfg_print_help(f, ctl_options, ctl_options_count);
}

/* --format is an action, not a setting (an environment variable or a
 * config key saying "format" would re-run it at every start): it is taken
 * out of argv before the options are read. */
static bool main_take_format(int *argc, char **argv)
{
    bool found = false;
    int i;
    int j = 1;

    for (i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--format") == 0) {
            found = true;
        } else {
            argv[j++] = argv[i];
        }
    }
    *argc = j;
    argv[j] = NULL;
    return found;
}

static int main_format(struct ctl_server *s)
{
    char id[CTL_CLUSTER_ID_CAP];
    struct err_detail ed;
    int lock_fd = -1;
    int rv;

    err_detail_clear(&ed);
    if (datadir_lock(s->cfg.data_dir, &lock_fd, &ed) != 0) {
        (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        return 1;
    }
    rv = ctl_ident_format(s->cfg.data_dir, s->cfg.cluster_id, id, &ed);
    (void)close(lock_fd);
    if (rv != 0) {
        (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        return rv == WEIR_ECONFIG ? 2 : 1;
    }
    (void)printf("weir-controller: formatted %s as a new cluster, "
                 "cluster.id=%s\n",
                 s->cfg.data_dir, id);
    return 0;
}

int main(int argc, char **argv)
{
    struct ctl_server s;
    struct err_detail ed;
    enum trace_level lvl;
    bool help = false;
    int lock_fd = -1;
    bool format;
    int rv;

    memset(&s, 0, sizeof(s));
    err_detail_clear(&ed);
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        (void)printf("weir-controller %s\n", WEIR_VERSION);
        return 0;
    }
    format = main_take_format(&argc, argv);
    rv = cfg_load(ctl_options, ctl_options_count, &s.cfg, argc, argv, 1, &help,
                  NULL, &ed);
    if (rv != 0 || help) {
        if (rv != 0) {
            (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        } else {
            main_usage(stdout);
        }
        cfg_free(ctl_options, ctl_options_count, &s.cfg);
        return rv != 0 ? 2 : 0;
    }
    if (trace_level_parse(s.cfg.log_level, &lvl) != 0) {
        (void)fprintf(stderr,
                      "weir-controller: log-level '%s' is not one of "
                      "debug, info, warn, error\n",
                      s.cfg.log_level);
        cfg_free(ctl_options, ctl_options_count, &s.cfg);
        return 2;
    }
    trace_set_level(lvl);
    if (!format && ctl_server_quorum_config(&s.cfg, &s.voters, &ed) != 0) {
        (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        cfg_free(ctl_options, ctl_options_count, &s.cfg);
        return 2;
    }
    if (format) {
        rv = main_format(&s);
        cfg_free(ctl_options, ctl_options_count, &s.cfg);
        return rv;
    }
    (void)signal(SIGPIPE, SIG_IGN);
    if (datadir_lock(s.cfg.data_dir, &lock_fd, &ed) != 0) {
        (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        cfg_free(ctl_options, ctl_options_count, &s.cfg);
        return 1;
    }
    rv = ctl_server_open(&s, &ed);
    if (rv != 0) {
        trace_error("controller", "event=start_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), ed.msg);
        (void)fprintf(stderr, "weir-controller: %s\n", ed.msg);
        rv = rv == WEIR_ECONFIG ? 2 : 1;
    } else {
        rv = ctl_server_run(&s);
    }
    ctl_server_close(&s);
    cfg_free(ctl_options, ctl_options_count, &s.cfg);
    (void)close(lock_fd);
    return rv;
}
