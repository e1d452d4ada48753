/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX storage and the layers above it on real files in a temporary
 * directory: system call errors, atomic writes, a partition log with
 * rolls, reopen and recovery, and a log manager's idle memory. */
#define _GNU_SOURCE /* mallinfo2, nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"
#include "broker/storage/storage_ops.h"
#include "common/trace.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/log_model.h"

struct fx {
    char root[64];
    char dir[128];
    const struct storage_ops *ops;
    struct err_detail ed;
};

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof(f));
    strcpy(f.root, "/tmp/weir-storage-XXXXXX");
    if (mkdtemp(f.root) == NULL) {
        return -1;
    }
    (void)snprintf(f.dir, sizeof(f.dir), "%s/t-0", f.root);
    f.ops = storage_posix();
    *state = &f;
    return 0;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fx *f = *state;

    return nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_posix_file_ops_and_errors(void **state)
{
    struct fx *f = *state;
    struct storage_file *file;
    char path[256];
    char path2[256];
    char buf[16];
    uint64_t size;
    size_t got;

    (void)snprintf(path, sizeof(path), "%s/a", f->root);
    (void)snprintf(path2, sizeof(path2), "%s/b", f->root);
    /* a missing file: not found, and the message names call and path */
    assert_int_equal(f->ops->open(f->ops->ctx, path, false, &file, &f->ed),
                     WEIR_ENOT_FOUND);
    assert_null(file);
    assert_int_equal(f->ed.sys_errno, ENOENT);
    assert_non_null(strstr(f->ed.msg, "open "));
    assert_non_null(strstr(f->ed.msg, path));
    assert_non_null(strstr(f->ed.msg, "No such file or directory"));

    assert_int_equal(f->ops->open(f->ops->ctx, path, true, &file, &f->ed), 0);
    assert_true(f->ops->fd(f->ops->ctx, file) >= 0);
    assert_int_equal(
        f->ops->pwrite(f->ops->ctx, file, "hello world", 11, 0, &f->ed), 0);
    assert_int_equal(f->ops->pwrite(f->ops->ctx, file, "W", 1, 6, &f->ed), 0);
    assert_int_equal(f->ops->fsync(f->ops->ctx, file, &f->ed), 0);
    assert_int_equal(f->ops->size(f->ops->ctx, file, &size, &f->ed), 0);
    assert_true(size == 11);
    /* short read at the end of file */
    assert_int_equal(
        f->ops->pread(f->ops->ctx, file, buf, sizeof(buf), 6, &got, &f->ed), 0);
    assert_int_equal(got, 5);
    assert_memory_equal(buf, "World", 5);
    assert_int_equal(f->ops->truncate(f->ops->ctx, file, 5, &f->ed), 0);
    assert_int_equal(f->ops->size(f->ops->ctx, file, &size, &f->ed), 0);
    assert_true(size == 5);
    f->ops->close(f->ops->ctx, file);

    assert_int_equal(f->ops->rename(f->ops->ctx, path, path2, &f->ed), 0);
    assert_int_equal(f->ops->exists(f->ops->ctx, path), 0);
    assert_int_equal(f->ops->exists(f->ops->ctx, path2), 1);
    assert_int_equal(f->ops->unlink(f->ops->ctx, path2, &f->ed), 0);
    assert_int_equal(f->ops->unlink(f->ops->ctx, path2, &f->ed),
                     WEIR_ENOT_FOUND);
    assert_non_null(strstr(f->ed.msg, "unlink "));

    /* directories: mkdir is idempotent, rmdir, fsync_dir, list */
    assert_int_equal(f->ops->mkdir(f->ops->ctx, f->dir, &f->ed), 0);
    assert_int_equal(f->ops->mkdir(f->ops->ctx, f->dir, &f->ed), 0);
    assert_int_equal(f->ops->fsync_dir(f->ops->ctx, f->dir, &f->ed), 0);
    assert_int_equal(f->ops->rmdir(f->ops->ctx, f->dir, &f->ed), 0);
    assert_int_equal(f->ops->fsync_dir(f->ops->ctx, f->dir, &f->ed),
                     WEIR_ENOT_FOUND);
}

static int count_entry(void *arg, const char *name)
{
    int *n = arg;

    assert_true(strcmp(name, ".") != 0 && strcmp(name, "..") != 0);
    (*n)++;
    return 0;
}

static void test_write_atomic_and_read_small(void **state)
{
    struct fx *f = *state;
    char path[256];
    char *text;
    size_t len;
    int n = 0;

    (void)snprintf(path, sizeof(path), "%s/cp", f->root);
    assert_int_equal(storage_read_small(f->ops, path, 100, &text, &len, &f->ed),
                     WEIR_ENOT_FOUND);
    assert_int_equal(
        storage_write_atomic(f->ops, f->root, path, "first", 5, &f->ed), 0);
    assert_int_equal(
        storage_write_atomic(f->ops, f->root, path, "2nd", 3, &f->ed), 0);
    assert_int_equal(storage_read_small(f->ops, path, 100, &text, &len, &f->ed),
                     0);
    assert_int_equal(len, 3);
    assert_string_equal(text, "2nd");
    free(text);
    assert_int_equal(storage_read_small(f->ops, path, 2, &text, &len, &f->ed),
                     WEIR_ECORRUPT);
    /* no temp file left behind */
    assert_int_equal(
        f->ops->list(f->ops->ctx, f->root, count_entry, &n, &f->ed), 0);
    assert_int_equal(n, 1);
    assert_int_equal(f->ops->list(f->ops->ctx, "/nonexistent-weir-dir",
                                  count_entry, &n, &f->ed),
                     WEIR_ENOT_FOUND);
}

static void
append_batches(struct plog *log, struct log_model *m, int count, uint32_t id0)
{
    struct weir_buf b;
    struct err_detail ed;
    int64_t base;
    int64_t last;
    int i;

    buf_init(&b);
    for (i = 0; i < count; i++) {
        int32_t n = 1 + i % 4;
        buf_reset(&b);
        assert_int_equal(batch_gen_make(&b, id0 + (uint32_t)i, n, i, 1,
                                        50 + (size_t)(i % 7) * 30),
                         0);
        assert_int_equal(
            plog_append(log, b.data, b.len, 1, 1000, &base, &last, &ed), 0);
        log_model_add(m, id0 + (uint32_t)i, n, i, 1);
    }
    buf_fini(&b);
}

static void test_plog_on_real_files(void **state)
{
    struct fx *f = *state;
    struct plog_config cfg;
    struct plog_read_result r;
    struct log_model m;
    struct plog *log;
    struct weir_buf b;
    struct stat st;
    char path[256];
    char raw[4096];

    plog_config_defaults(&cfg);
    cfg.segment_bytes = 2000;
    cfg.index_interval_bytes = 300;
    log_model_init(&m, 0);
    assert_int_equal(plog_open(f->ops, f->dir, &cfg, 1000, &log, &f->ed), 0);
    append_batches(log, &m, 100, 1);
    assert_true(plog_segment_count(log) > 5);
    assert_int_equal(plog_flush(log, &f->ed), 0);
    assert_int_equal(plog_check_invariants(log, &f->ed), 0);
    assert_int_equal(log_model_verify(&m, log, 0, 500), 0);

    /* the descriptor serves the same bytes as the copy (sendfile path) */
    assert_int_equal(plog_read(log, 10, INT64_MAX, sizeof(raw), &r, &f->ed), 0);
    assert_true(r.fd >= 0);
    buf_init(&b);
    assert_int_equal(plog_read_copy(log, &r, &b, &f->ed), 0);
    assert_int_equal(pread(r.fd, raw, r.bytes, (off_t)r.position),
                     (ssize_t)r.bytes);
    assert_memory_equal(raw, b.data, r.bytes);
    buf_fini(&b);

    plog_close(log);
    (void)snprintf(path, sizeof(path), "%s/00000000000000000000.log", f->dir);
    assert_int_equal(stat(path, &st), 0);
    (void)snprintf(path, sizeof(path), "%s/00000000000000000000.timeindex",
                   f->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size % 12 == 0 && st.st_size > 0);
    (void)snprintf(path, sizeof(path), "%s/clean-shutdown", f->dir);
    assert_int_equal(stat(path, &st), 0);

    assert_int_equal(plog_open(f->ops, f->dir, &cfg, 1000, &log, &f->ed), 0);
    assert_false(plog_recovered(log));
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(plog_check_invariants(log, &f->ed), 0);
    assert_int_equal(log_model_verify(&m, log, 0, 1 << 20), 0);
    append_batches(log, &m, 10, 500);
    assert_int_equal(log_model_verify(&m, log, 0, 1 << 20), 0);
    plog_close(log);
    log_model_fini(&m);
}

static void test_recovery_on_real_files(void **state)
{
    struct fx *f = *state;
    struct plog_config cfg;
    struct log_model m;
    struct plog *log;
    char path[256];
    char garbage[777];
    struct stat st;
    off_t size;
    int fd;

    plog_config_defaults(&cfg);
    log_model_init(&m, 0);
    assert_int_equal(plog_open(f->ops, f->dir, &cfg, 1000, &log, &f->ed), 0);
    append_batches(log, &m, 30, 1);
    plog_free(log); /* killed: no clean marker */
    /* a torn tail on the (only) segment */
    (void)snprintf(path, sizeof(path), "%s/00000000000000000000.log", f->dir);
    assert_int_equal(stat(path, &st), 0);
    size = st.st_size;
    memset(garbage, 0x17, sizeof(garbage));
    fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, garbage, sizeof(garbage)),
                     (ssize_t)sizeof(garbage));
    (void)close(fd);
    trace_set_level(TRACE_ERROR);
    assert_int_equal(plog_open(f->ops, f->dir, &cfg, 1000, &log, &f->ed), 0);
    trace_set_level(TRACE_INFO);
    assert_true(plog_recovered(log));
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size == size);
    assert_int_equal(plog_check_invariants(log, &f->ed), 0);
    assert_int_equal(log_model_verify(&m, log, 0, 1 << 20), 0);
    plog_close(log);
    log_model_fini(&m);
}

/* 100 idle partitions should cost little memory: no big buffers per log. */
static void test_logmgr_idle_memory_is_small(void **state)
{
    struct fx *f = *state;
    struct plog_config cfg;
    struct logmgr *m;
    struct mallinfo2 before;
    struct mallinfo2 after;
    char name[32];
    int i;

    plog_config_defaults(&cfg);
    before = mallinfo2();
    trace_set_level(TRACE_WARN);
    assert_int_equal(logmgr_open(f->ops, f->dir, &cfg, 1000, &m, &f->ed), 0);
    for (i = 0; i < 10; i++) {
        (void)snprintf(name, sizeof(name), "topic-%d", i);
        assert_int_equal(
            logmgr_create_topic(m, name, 10, 1, NULL, 0, false, 1000, &f->ed),
            0);
    }
    after = mallinfo2();
    /* a few KB per partition at most */
    assert_true(after.uordblks - before.uordblks < 1024 * 1024);
    logmgr_close(m);
    /* reopen: same topics, same small footprint */
    before = mallinfo2();
    assert_int_equal(logmgr_open(f->ops, f->dir, &cfg, 1000, &m, &f->ed), 0);
    trace_set_level(TRACE_INFO);
    after = mallinfo2();
    assert_int_equal(logmgr_topic_count(m), 10);
    assert_true(after.uordblks - before.uordblks < 1024 * 1024);
    logmgr_close(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_posix_file_ops_and_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_and_read_small, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_plog_on_real_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recovery_on_real_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_logmgr_idle_memory_is_small, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
