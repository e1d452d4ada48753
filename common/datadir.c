/* SPDX-License-Identifier: Apache-2.0 */
#include "common/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int datadir_mkdirs(const char *dir, struct err_detail *ed)
{
    char path[4096];
    size_t i;

    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
        return err_set(ed, WEIR_EIO, "data dir path too long: %s", dir);
    }
    for (i = 1; path[i] != '\0'; i++) {
        if (path[i] != '/') {
            continue;
        }
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            return err_sys(ed, WEIR_EIO, errno, "mkdir",
                           "cannot create data dir %s", path);
        }
        path[i] = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        return err_sys(ed, WEIR_EIO, errno, "mkdir",
                       "cannot create data dir %s", path);
    }
    return 0;
}

int datadir_lock(const char *dir, int *fd_out, struct err_detail *ed)
{
    char path[4096];
    int fd;
    int rv;

    *fd_out = -1;
    rv = datadir_mkdirs(dir, ed);
    if (rv != 0) {
        return rv;
    }
    (void)snprintf(path, sizeof(path), "%s/.lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return err_sys(ed, WEIR_EIO, errno, "open", "cannot open %s", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        rv = err_sys(ed, WEIR_ECONFIG, errno, "flock",
                     "data dir %s is in use by another process", dir);
        (void)close(fd);
        return rv;
    }
    *fd_out = fd;
    return 0;
}
