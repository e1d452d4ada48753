/* SPDX-License-Identifier: Apache-2.0 */
/* LD_PRELOAD shim for fault tests (never linked into a daemon): makes
 * fsync/fdatasync or write/pwrite fail with EIO or ENOSPC for files under
 * a path prefix, while a control file says so. WEIR_FAULTFS_CTL names the
 * control file; each line is
 *     <fsync|write> <EIO|ENOSPC> <absolute path prefix>
 * and an empty or missing file injects nothing. The file is read again
 * whenever its modification time or size changes, so a test switches
 * faults on and off by rewriting it (atomically: write, then rename).
 * A failing write writes nothing. Each injected failure is counted in
 * "<control file>.hits" (one line per failure: op, errno, path).
 * Locality: single-threaded daemons (one event loop). */
#undef _FILE_OFFSET_BITS /* pwrite and pwrite64 are two symbols to wrap */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FAULTFS_RULES 8

struct faultfs_rule {
    int op; /* 0 fsync, 1 write */
    int err_no;
    char prefix[512];
};

static struct faultfs_rule faultfs_rules[FAULTFS_RULES];
static int faultfs_n;
static struct timespec faultfs_mtime;
static off_t faultfs_size = -1;

typedef int (*faultfs_sync_fn)(int);
typedef ssize_t (*faultfs_pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*faultfs_write_fn)(int, const void *, size_t);

static void *faultfs_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void faultfs_parse(FILE *f)
{
    char line[700];
    char op[16];
    char err[16];

    faultfs_n = 0;
    while (faultfs_n < FAULTFS_RULES && fgets(line, sizeof(line), f) != NULL) {
        struct faultfs_rule *r = &faultfs_rules[faultfs_n];
        if (sscanf(line, "%15s %15s %511s", op, err, r->prefix) != 3) {
            continue;
        }
        r->op = strcmp(op, "write") == 0 ? 1 : 0;
        r->err_no = strcmp(err, "ENOSPC") == 0 ? ENOSPC : EIO;
        faultfs_n++;
    }
}

/* Re-read the control file when it changed; false when it injects
 * nothing. */
static int faultfs_load(void)
{
    const char *ctl = getenv("WEIR_FAULTFS_CTL");
    struct stat st;
    FILE *f;

    if (ctl == NULL || stat(ctl, &st) != 0) {
        faultfs_n = 0;
        faultfs_size = -1;
        return 0;
    }
    if (st.st_size == faultfs_size &&
        st.st_mtim.tv_sec == faultfs_mtime.tv_sec &&
        st.st_mtim.tv_nsec == faultfs_mtime.tv_nsec) {
        return faultfs_n > 0;
    }
    faultfs_size = st.st_size;
    faultfs_mtime = st.st_mtim;
    f = fopen(ctl, "r");
    if (f == NULL) {
        faultfs_n = 0;
        return 0;
    }
    faultfs_parse(f);
    (void)fclose(f);
    return faultfs_n > 0;
}

static void faultfs_hit(const char *op, int err_no, const char *path)
{
    const char *ctl = getenv("WEIR_FAULTFS_CTL");
    char hits[600];
    FILE *f;

    if (ctl == NULL) {
        return;
    }
    (void)snprintf(hits, sizeof(hits), "%s.hits", ctl);
    f = fopen(hits, "a");
    if (f != NULL) {
        (void)fprintf(f, "%s %s %s\n", op, err_no == ENOSPC ? "ENOSPC" : "EIO",
                      path);
        (void)fclose(f);
    }
}

/* The errno to fail fd's call of kind op with, or 0. */
static int faultfs_check(int fd, int op, const char *opname)
{
    char link[64];
    char path[600];
    ssize_t n;
    int i;

    if (!faultfs_load()) {
        return 0;
    }
    (void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0) {
        return 0;
    }
    path[n] = '\0';
    for (i = 0; i < faultfs_n; i++) {
        const struct faultfs_rule *r = &faultfs_rules[i];
        if (r->op == op && strncmp(path, r->prefix, strlen(r->prefix)) == 0) {
            faultfs_hit(opname, r->err_no, path);
            return r->err_no;
        }
    }
    return 0;
}

static int faultfs_sync(int fd, const char *name)
{
    faultfs_sync_fn real;
    int e = faultfs_check(fd, 0, name);

    if (e != 0) {
        errno = e;
        return -1;
    }
    *(void **)&real = faultfs_next(name);
    return real(fd);
}

int fsync(int fd)
{
    return faultfs_sync(fd, "fsync");
}

int fdatasync(int fd)
{
    return faultfs_sync(fd, "fdatasync");
}

static ssize_t
faultfs_pwrite(const char *name, int fd, const void *buf, size_t n, off_t off)
{
    faultfs_pwrite_fn real;
    int e = faultfs_check(fd, 1, name);

    if (e != 0) {
        errno = e;
        return -1;
    }
    *(void **)&real = faultfs_next(name);
    return real(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return faultfs_pwrite("pwrite", fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return faultfs_pwrite("pwrite64", fd, buf, n, (off_t)off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    faultfs_write_fn real;
    int e = faultfs_check(fd, 1, "write");

    if (e != 0) {
        errno = e;
        return -1;
    }
    *(void **)&real = faultfs_next("write");
    return real(fd, buf, n);
}
