/* SPDX-License-Identifier: Apache-2.0 */
#include "common/datadir.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"

int datadir_mkdirs(const char *dir, struct err_detail *ed)
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

static int
datadir_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);

    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int datadir_fsync_dir(const char *dir, struct err_detail *ed)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rv = 0;

    if (fd < 0) {
        return err_sys(ed, WEIR_EIO, errno, "open", "%s", dir);
    }
    if (fsync(fd) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "fsync", "%s", dir);
    }
    (void)close(fd);
    return rv;
}

static int datadir_read_fd(
    int fd, const char *path, char **out, size_t *len, struct err_detail *ed)
{
    struct stat st;
    size_t got = 0;
    char *p;

    if (fstat(fd, &st) != 0) {
        return err_sys(ed, WEIR_EIO, errno, "fstat", "%s", path);
    }
    if (st.st_size < 0 || st.st_size > DATADIR_SMALL_MAX) {
        return err_set(ed, WEIR_ECORRUPT, "%s is %lld bytes, more than %d",
                       path, (long long)st.st_size, DATADIR_SMALL_MAX);
    }
    p = mem_malloc((size_t)st.st_size + 1);
    if (p == NULL) {
        return err_set(ed, WEIR_ENOMEM, "reading %s", path);
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            mem_free(p);
            return err_sys(ed, WEIR_EIO, e, "read", "%s", path);
        }
        got += (size_t)r;
    }
    p[got] = '\0';
    *out = p;
    *len = got;
    return 0;
}

int datadir_read(const char *dir,
                 const char *name,
                 char **out,
                 size_t *len,
                 bool *found,
                 struct err_detail *ed)
{
    char path[4096];
    int fd;
    int rv;

    *out = NULL;
    *len = 0;
    *found = false;
    if (datadir_path(path, sizeof(path), dir, name) != 0) {
        return err_set(ed, WEIR_EIO, "path too long: %s/%s", dir, name);
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT
                   ? 0
                   : err_sys(ed, WEIR_EIO, errno, "open", "%s", path);
    }
    rv = datadir_read_fd(fd, path, out, len, ed);
    (void)close(fd);
    *found = rv == 0;
    return rv;
}

static int datadir_write_all(
    int fd, const char *path, const uint8_t *p, size_t n, struct err_detail *ed)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return err_sys(ed, WEIR_EIO, w < 0 ? errno : EIO, "write", "%s",
                           path);
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int datadir_write(const char *dir,
                  const char *name,
                  const void *p,
                  size_t n,
                  struct err_detail *ed)
{
    char tmp[4096];
    char dst[4096];
    int fd;
    int rv;

    if (datadir_path(dst, sizeof(dst), dir, name) != 0 ||
        snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp)) {
        return err_set(ed, WEIR_EIO, "path too long: %s/%s", dir, name);
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return err_sys(ed, WEIR_EIO, errno, "open", "%s", tmp);
    }
    rv = datadir_write_all(fd, tmp, p, n, ed);
    if (rv == 0 && fsync(fd) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "fsync", "%s", tmp);
    }
    (void)close(fd);
    if (rv == 0 && rename(tmp, dst) != 0) {
        rv = err_sys(ed, WEIR_EIO, errno, "rename", "%s to %s", tmp, dst);
    }
    if (rv == 0) {
        rv = datadir_fsync_dir(dir, ed);
    }
    if (rv != 0) {
        (void)unlink(tmp);
    }
    return rv;
}

int datadir_remove(const char *dir, const char *name, struct err_detail *ed)
{
    char path[4096];

    if (datadir_path(path, sizeof(path), dir, name) != 0) {
        return err_set(ed, WEIR_EIO, "path too long: %s/%s", dir, name);
    }
    if (unlink(path) != 0) {
        return errno == ENOENT
                   ? 0
                   : err_sys(ed, WEIR_EIO, errno, "unlink", "%s", path);
    }
    return datadir_fsync_dir(dir, ed);
}

bool datadir_exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;

    if (datadir_path(path, sizeof(path), dir, name) != 0) {
        return true;
    }
    return stat(path, &st) == 0 || errno != ENOENT;
}
