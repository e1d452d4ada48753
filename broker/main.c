/* SPDX-License-Identifier: Apache-2.0 */
/* weir-broker: arguments and wiring only. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/server.h"
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

/* mkdir -p */
static int main_mkdirs(const char *dir)
{
    char path[4096];
    size_t i;

    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (i = 1; path[i] != '\0'; i++) {
        if (path[i] == '/') {
            path[i] = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST) {
                return -1;
            }
            path[i] = '/';
        }
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        return -1;
    }
    return 0;
}

/* One broker per data directory: an flock held for the process lifetime. */
static int main_lock_data_dir(const char *dir, int *fd_out)
{
    char path[4096];
    int fd;

    if (main_mkdirs(dir) != 0) {
        (void)fprintf(stderr, "weir-broker: cannot create data dir %s: %s\n",
                      dir, strerror(errno));
        return -1;
    }
    (void)snprintf(path, sizeof(path), "%s/.lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        (void)fprintf(stderr, "weir-broker: cannot open %s: %s\n", path,
                      strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        (void)fprintf(stderr,
                      "weir-broker: data dir %s is in use by another "
                      "process (flock %s: %s)\n",
                      dir, path, strerror(errno));
        (void)close(fd);
        return -1;
    }
    *fd_out = fd;
    return 0;
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
    if (main_lock_data_dir(b.cfg.data_dir, &lock_fd) != 0) {
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
