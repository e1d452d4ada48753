/* SPDX-License-Identifier: Apache-2.0 */
/* weir-broker: arguments and wiring only. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/server.h"
#include "common/datadir.h"
#include "common/trace.h"

#ifndef WEIR_VERSION
#define WEIR_VERSION "dev"
#endif

static void main_usage(FILE *f)
{
    (void)fprintf(f,
                  "usage: weir-broker [--config FILE] [--listen HOST:PORT] "
                  "[--data-dir DIR] [OPTION VALUE]...\n\n"
                  "Weir broker: stores partitioned logs and serves clients.\n"
                  "Every option is also a config-file key (INI, e.g. "
                  "data-dir = /var/lib/weir)\nand an environment variable "
                  "WEIR_<OPTION> (e.g. WEIR_DATA_DIR).\n"
                  "Precedence: default < config file < environment < flag."
                  "\n\noptions:\n");
    cfg_print_help(f, broker_options, broker_options_count);
}

int main(int argc, char **argv)
{
    struct broker b;
    struct err_detail ed;
    enum trace_level lvl;
    bool help = false;
    int lock_fd = -1;
    int rv;

    memset(&b, 0, sizeof(b));
    err_detail_clear(&ed);
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        (void)printf("weir-broker %s\n", WEIR_VERSION);
        return 0;
    }
    rv = cfg_load(broker_options, broker_options_count, &b.cfg, argc, argv, 1,
                  &help, NULL, &ed);
    if (rv != 0) {
        (void)fprintf(stderr, "weir-broker: %s\n", ed.msg);
        cfg_free(broker_options, broker_options_count, &b.cfg);
        return 2;
    }
    if (help) {
        main_usage(stdout);
        cfg_free(broker_options, broker_options_count, &b.cfg);
        return 0;
    }
    if (trace_level_parse(b.cfg.log_level, &lvl) != 0) {
        (void)fprintf(stderr,
                      "weir-broker: log-level '%s' is not one of "
                      "debug, info, warn, error\n",
                      b.cfg.log_level);
        cfg_free(broker_options, broker_options_count, &b.cfg);
        return 2;
    }
    trace_set_level(lvl);
    (void)signal(SIGPIPE, SIG_IGN);
    if (datadir_lock(b.cfg.data_dir, &lock_fd, &ed) != 0) {
        (void)fprintf(stderr, "weir-broker: %s\n", ed.msg);
        cfg_free(broker_options, broker_options_count, &b.cfg);
        return 1;
    }
    rv = server_open(&b, &ed);
    if (rv != 0) {
        trace_error("broker", "event=start_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), ed.msg);
        (void)fprintf(stderr, "weir-broker: %s\n", ed.msg);
    } else {
        rv = server_run(&b);
    }
    server_close(&b);
    cfg_free(broker_options, broker_options_count, &b.cfg);
    (void)close(lock_fd);
    return rv == 0 ? 0 : 1;
}
