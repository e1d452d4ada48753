/* SPDX-License-Identifier: Apache-2.0 */
/* storage_ops over POSIX files. errno stops here: every failure becomes an
 * enum weir_err whose message names the call, the path and, for reads and
 * writes, the byte position ("pwrite /d/x.log at 4096: No space left on
 * device"); sys_errno keeps the raw value. Locality: any thread, but a
 * storage_file is used by one thread at a time. */
#include "broker/storage/storage_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/mem.h"

struct storage_file {
    int fd;
    char *path; /* for error messages */
};

/* Sets ed to "<what>: <strerror>" with the code err_from_errno picks
 * (ENOSPC -> WEIR_ESTORAGE, ENOENT -> WEIR_ENOT_FOUND, ...). */
static int
posix_err(struct err_detail *ed, int errno_value, const char *fmt, ...)
    WEIR_PRINTF(3, 4);

static int
posix_err(struct err_detail *ed, int errno_value, const char *fmt, ...)
{
    int code = err_from_errno(errno_value);
    char what[400];
    char ebuf[128];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (strerror_r(errno_value, ebuf, sizeof(ebuf)) != 0) {
        (void)snprintf(ebuf, sizeof(ebuf), "errno %d", errno_value);
    }
    (void)err_set(ed, code, "%s: %s", what, ebuf);
    if (ed != NULL) {
        ed->sys_errno = errno_value;
    }
    return code;
}

static int posix_open(void *ctx,
                      const char *path,
                      bool create,
                      struct storage_file **out,
                      struct err_detail *ed)
{
    struct storage_file *f;
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
    int fd;

    (void)ctx;
    *out = NULL;
    f = mem_calloc(1, sizeof(*f));
    if (f == NULL) {
        return err_set(ed, WEIR_ENOMEM, "open %s: out of memory", path);
    }
    f->path = mem_strdup(path);
    if (f->path == NULL) {
        mem_free(f);
        return err_set(ed, WEIR_ENOMEM, "open %s: out of memory", path);
    }
    do {
        fd = open(path, flags, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        mem_free(f->path);
        mem_free(f);
        return posix_err(ed, e, "open %s", path);
    }
    f->fd = fd;
    *out = f;
    return 0;
}

static void posix_close(void *ctx, struct storage_file *f)
{
    (void)ctx;
    if (f == NULL) {
        return;
    }
    /* close(2) is not retried on EINTR: on Linux the descriptor is gone
     * either way, and a retry could close a reused descriptor. */
    (void)close(f->fd);
    mem_free(f->path);
    mem_free(f);
}

static int posix_pread(void *ctx,
                       struct storage_file *f,
                       void *buf,
                       size_t n,
                       uint64_t off,
                       size_t *got,
                       struct err_detail *ed)
{
    size_t done = 0;

    (void)ctx;
    while (done < n) {
        ssize_t r =
            pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            *got = done;
            return posix_err(ed, errno, "pread %s at %llu", f->path,
                             (unsigned long long)(off + done));
        }
        if (r == 0) {
            break; /* end of file */
        }
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

static int posix_pwrite(void *ctx,
                        struct storage_file *f,
                        const void *buf,
                        size_t n,
                        uint64_t off,
                        struct err_detail *ed)
{
    size_t done = 0;

    (void)ctx;
    while (done < n) {
        ssize_t w = pwrite(f->fd, (const char *)buf + done, n - done,
                           (off_t)(off + done));
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return posix_err(ed, errno, "pwrite %s at %llu", f->path,
                             (unsigned long long)(off + done));
        }
        if (w == 0) {
            /* no progress and no errno: treat as a full disk rather than
             * spin */
            return posix_err(ed, ENOSPC, "pwrite %s at %llu", f->path,
                             (unsigned long long)(off + done));
        }
        done += (size_t)w;
    }
    return 0;
}

static int posix_fsync(void *ctx, struct storage_file *f, struct err_detail *ed)
{
    (void)ctx;
    /* No EINTR retry: a failed fsync may have dropped dirty pages, so
     * retrying could report success for lost data. The caller treats any
     * failure as fatal for the file. */
    if (fdatasync(f->fd) != 0) {
        return posix_err(ed, errno, "fdatasync %s", f->path);
    }
    return 0;
}

static int posix_truncate(void *ctx,
                          struct storage_file *f,
                          uint64_t size,
                          struct err_detail *ed)
{
    int rv;

    (void)ctx;
    do {
        rv = ftruncate(f->fd, (off_t)size);
    } while (rv != 0 && errno == EINTR);
    if (rv != 0) {
        return posix_err(ed, errno, "ftruncate %s to %llu", f->path,
                         (unsigned long long)size);
    }
    return 0;
}

static int posix_size(void *ctx,
                      struct storage_file *f,
                      uint64_t *out,
                      struct err_detail *ed)
{
    struct stat st;

    (void)ctx;
    if (fstat(f->fd, &st) != 0) {
        return posix_err(ed, errno, "fstat %s", f->path);
    }
    *out = (uint64_t)st.st_size;
    return 0;
}

static int posix_fd(void *ctx, struct storage_file *f)
{
    (void)ctx;
    return f->fd;
}

static int posix_mkdir(void *ctx, const char *path, struct err_detail *ed)
{
    struct stat st;

    (void)ctx;
    if (mkdir(path, 0755) == 0) {
        return 0;
    }
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        return 0; /* already there: mkdir is idempotent for callers */
    }
    return posix_err(ed, errno, "mkdir %s", path);
}

static int
posix_rename(void *ctx, const char *from, const char *to, struct err_detail *ed)
{
    (void)ctx;
    if (rename(from, to) != 0) {
        return posix_err(ed, errno, "rename %s to %s", from, to);
    }
    return 0;
}

static int posix_unlink(void *ctx, const char *path, struct err_detail *ed)
{
    (void)ctx;
    if (unlink(path) != 0) {
        return posix_err(ed, errno, "unlink %s", path);
    }
    return 0;
}

static int posix_rmdir(void *ctx, const char *path, struct err_detail *ed)
{
    (void)ctx;
    if (rmdir(path) != 0) {
        return posix_err(ed, errno, "rmdir %s", path);
    }
    return 0;
}

static int posix_fsync_dir(void *ctx, const char *path, struct err_detail *ed)
{
    int fd;
    int e;

    (void)ctx;
    do {
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return posix_err(ed, errno, "open %s", path);
    }
    if (fsync(fd) != 0) {
        e = errno;
        (void)close(fd);
        return posix_err(ed, e, "fsync %s", path);
    }
    (void)close(fd);
    return 0;
}

static int posix_list(void *ctx,
                      const char *dir,
                      storage_list_fn fn,
                      void *arg,
                      struct err_detail *ed)
{
    DIR *d;
    struct dirent *de;
    int rv = 0;

    (void)ctx;
    d = opendir(dir);
    if (d == NULL) {
        return posix_err(ed, errno, "opendir %s", dir);
    }
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rv = posix_err(ed, errno, "readdir %s", dir);
            }
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        if (fn(arg, de->d_name) != 0) {
            break;
        }
    }
    (void)closedir(d);
    return rv;
}

static int posix_exists(void *ctx, const char *path)
{
    struct stat st;

    (void)ctx;
    return stat(path, &st) == 0 ? 1 : 0;
}

static int posix_free_bytes(void *ctx,
                            const char *path,
                            uint64_t *out,
                            struct err_detail *ed)
{
    struct statvfs sv;

    (void)ctx;
    *out = 0;
    if (statvfs(path, &sv) != 0) {
        return posix_err(ed, errno, "statvfs %s", path);
    }
    *out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    return 0;
}

static const struct storage_ops storage_posix_ops = {
    .ctx = NULL,
    .open = posix_open,
    .close = posix_close,
    .pread = posix_pread,
    .pwrite = posix_pwrite,
    .fsync = posix_fsync,
    .truncate = posix_truncate,
    .size = posix_size,
    .fd = posix_fd,
    .mkdir = posix_mkdir,
    .rename = posix_rename,
    .unlink = posix_unlink,
    .rmdir = posix_rmdir,
    .fsync_dir = posix_fsync_dir,
    .list = posix_list,
    .exists = posix_exists,
    .free_bytes = posix_free_bytes,
};

const struct storage_ops *storage_posix(void)
{
    return &storage_posix_ops;
}
