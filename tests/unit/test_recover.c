/* SPDX-License-Identifier: Apache-2.0 */
/* Recovery: torn, garbage and zero-filled tails are cut with a trace;
 * crashes lose nothing that was flushed; clean shutdowns skip the scan;
 * doubtful indexes are rebuilt; and anything odd in closed segments or
 * names refuses the open without deleting a byte. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "common/trace.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/plog_fixture.h"

static uint32_t rng_state = 777;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state % n;
}

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    rng_state = 777;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    trace_set_fd(2);
    return 0;
}

static void append_random(struct plog_fixture *f, int count)
{
    int i;

    for (i = 0; i < count; i++) {
        assert_int_equal(plog_fixture_append(f, 1 + (int32_t)rnd(6), 5000 + i,
                                             1, 1 + rnd(200), 1000),
                         0);
    }
}

/* Trace lines go to a temp file while `capture` runs. */
static FILE *trace_file;

static void trace_capture(void)
{
    trace_file = tmpfile();
    assert_non_null(trace_file);
    trace_set_fd(fileno(trace_file));
}

static char *trace_collect(void)
{
    static char text[16384];
    size_t n;

    trace_set_fd(2);
    rewind(trace_file);
    n = fread(text, 1, sizeof(text) - 1, trace_file);
    text[n] = '\0';
    (void)fclose(trace_file);
    return text;
}

static const char *active_log_path(const struct plog_fixture *f)
{
    static char path[256];

    (void)snprintf(path, sizeof(path), "%s",
                   plog_fixture_path(plog_fixture_seg(
                       plog_active(f->log)->base_offset, ".log")));
    return path;
}

/* Reopen after an unclean stop and expect the log cut back to `end`, with
 * a trace naming the file, the position and the offset. */
static void reopen_expect_cut(struct plog_fixture *f,
                              const char *path,
                              int64_t end,
                              int64_t size)
{
    char want[300];
    char *text;

    plog_fixture_kill(f);
    trace_capture();
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    text = trace_collect();
    assert_true(plog_recovered(f->log));
    assert_true(plog_end_offset(f->log) == end);
    assert_true(mem_storage_size_of(f->ms, path) == size);
    (void)snprintf(want, sizeof(want),
                   "event=recovery_truncate file=%s position=%lld offset=%lld",
                   path, (long long)size, (long long)end);
    if (strstr(text, want) == NULL) {
        printf("missing trace '%s' in:\n%s\n", want, text);
        fail();
    }
    assert_non_null(strstr(text, "reason="));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_torn_write_is_cut(void **state)
{
    struct plog_fixture *f = *state;
    const size_t keeps[] = {1, 11, 12, 60, 61, 100};
    size_t i;

    for (i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
        char path[256];
        int64_t end;
        int64_t size;

        plog_fixture_fini(f);
        plog_fixture_init(f);
        struct plog_read_result r;

        assert_int_equal(plog_fixture_open(f, 1000), 0);
        append_random(f, 30 + (int)i);
        assert_int_equal(plog_fixture_append(f, 5, 1, 1, 150, 1000), 0);
        /* the last batch, wherever it went (maybe a new segment) */
        end = plog_end_offset(f->log) - 5;
        assert_int_equal(plog_read(f->log, end, INT64_MAX, 1, &r, &f->ed), 0);
        size = (int64_t)r.position;
        strcpy(path, active_log_path(f));
        assert_int_equal(mem_storage_tear_last_write(f->ms, keeps[i]), 0);
        assert_true(mem_storage_size_of(f->ms, path) ==
                    size + (int64_t)keeps[i]);
        log_model_truncate(&f->model, end);
        reopen_expect_cut(f, path, end, size);
    }
}

static void test_garbage_tail_is_cut(void **state)
{
    struct plog_fixture *f = *state;
    char path[256];
    int64_t end;
    int64_t size;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 30);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    end = plog_end_offset(f->log);
    strcpy(path, active_log_path(f));
    size = mem_storage_size_of(f->ms, path);
    assert_int_equal(mem_storage_garbage(f->ms, path, (uint64_t)size, 3000, 9),
                     0);
    reopen_expect_cut(f, path, end, size);
    /* appends continue right after the last valid batch */
    append_random(f, 5);
    assert_int_equal(plog_fixture_check(f, 300), 0);
}

static void test_zero_tail_is_cut(void **state)
{
    struct plog_fixture *f = *state;
    static const uint8_t zeros[4096];
    char path[256];
    int64_t end;
    int64_t size;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 20);
    end = plog_end_offset(f->log);
    strcpy(path, active_log_path(f));
    size = mem_storage_size_of(f->ms, path);
    /* a file system that extended the file before the data reached it */
    assert_int_equal(
        mem_storage_write_raw(f->ms, path, (uint64_t)size, zeros, 4096), 0);
    reopen_expect_cut(f, path, end, size);
}

static void test_batch_with_wrong_offset_is_cut(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf b;
    char path[256];
    int64_t end;
    int64_t size;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 10);
    end = plog_end_offset(f->log);
    strcpy(path, active_log_path(f));
    size = mem_storage_size_of(f->ms, path);
    /* a valid batch (CRC fine) whose base offset repeats offset 0 */
    buf_init(&b);
    assert_int_equal(batch_gen_make(&b, 99, 2, 1, 1, 10), 0);
    assert_int_equal(
        mem_storage_write_raw(f->ms, path, (uint64_t)size, b.data, b.len), 0);
    buf_fini(&b);
    reopen_expect_cut(f, path, end, size);
}

/* Flushed data survives a power loss, whatever else was in flight. */
static void test_crash_keeps_everything_flushed(void **state)
{
    struct plog_fixture *f = *state;
    int round;
    int i;

    f->cfg.flush_policy = PLOG_FLUSH_ACK;
    for (round = 0; round < 8; round++) {
        int64_t acked;
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
        acked = plog_end_offset(f->log);
        for (i = 0; i < 40; i++) {
            assert_int_equal(plog_fixture_append(f, 1 + (int32_t)rnd(5), i, 1,
                                                 1 + rnd(200), 1000),
                             0);
            if (rnd(3) == 0) {
                assert_int_equal(plog_flush(f->log, &f->ed), 0);
                acked = plog_end_offset(f->log);
                assert_true(plog_durable_offset(f->log) == acked);
            }
        }
        plog_fixture_kill(f);
        mem_storage_crash(f->ms);
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        assert_true(plog_recovered(f->log));
        /* everything acknowledged after a flush is there; what was never
         * synced is gone (memory storage drops all of it) */
        assert_true(plog_end_offset(f->log) >= acked);
        log_model_truncate(&f->model, plog_end_offset(f->log));
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
        plog_fixture_kill(f);
    }
}

/* Random operations, then a power loss at a random point, many times. */
static void test_random_crashes_keep_log_consistent(void **state)
{
    struct plog_fixture *f = *state;
    uint32_t seed;

    for (seed = 1; seed <= 40; seed++) {
        int64_t durable;
        int ops = 5 + (int)rnd(60);
        int i;

        plog_fixture_fini(f);
        plog_fixture_init(f);
        rng_state = seed * 7919;
        f->cfg.segment_bytes = 600 + rnd(2000);
        f->cfg.flush_policy = (enum plog_flush_policy)rnd(3);
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        for (i = 0; i < ops; i++) {
            uint32_t op = rnd(10);
            if (op < 7) {
                assert_int_equal(plog_fixture_append(f, 1 + (int32_t)rnd(4), i,
                                                     1, rnd(300), 1000),
                                 0);
            } else if (op < 9) {
                assert_int_equal(plog_flush(f->log, &f->ed), 0);
            } else if (plog_end_offset(f->log) > 0) {
                int64_t to = (int64_t)rnd((uint32_t)plog_end_offset(f->log));
                assert_int_equal(plog_truncate_to(f->log, to, &f->ed), 0);
                log_model_truncate(&f->model, plog_end_offset(f->log));
            }
        }
        durable = plog_durable_offset(f->log);
        plog_fixture_kill(f);
        mem_storage_crash(f->ms);
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        assert_true(plog_end_offset(f->log) >= durable);
        log_model_truncate(&f->model, plog_end_offset(f->log));
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
        /* and it keeps working */
        assert_int_equal(plog_fixture_append(f, 2, 1, 1, 10, 1000), 0);
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    }
}

static void test_unclean_open_scans_from_recovery_point(void **state)
{
    struct plog_fixture *f = *state;
    uint64_t from_rp;
    uint64_t full;
    uint64_t before;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 300);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    assert_true(plog_segment_count(f->log) > 10);
    plog_fixture_kill(f);

    before = mem_storage_bytes_read(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    from_rp = mem_storage_bytes_read(f->ms) - before;
    /* the active segment and a few headers per closed one */
    assert_true(from_rp < 2 * f->cfg.segment_bytes);
    assert_true(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_fixture_kill(f);

    /* without the checkpoint, every segment is scanned */
    assert_int_equal(f->ops->unlink(f->ops->ctx,
                                    plog_fixture_path(PLOG_RECOVERY_CHECKPOINT),
                                    &f->ed),
                     0);
    before = mem_storage_bytes_read(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    full = mem_storage_bytes_read(f->ms) - before;
    assert_true(plog_recovered(f->log));
    assert_true(full >= plog_size_bytes(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* A recovery point that strtoll would have read ('+', a space, junk or a
 * NUL after it, overflow clamped to the largest offset, which would have
 * skipped the scan) is refused by the decoder, and the open then scans
 * every segment: never a failure, never a skipped scan. */
static void test_refused_checkpoint_means_full_scan(void **state)
{
    static const struct {
        const char *text;
        size_t len;
    } bad[] = {
        {"0\n+0\n", 5},
        {"0\n 0\n", 5},
        {"0\n0\nx", 5},
        {"0\n0\n\0007", 6},
        {"0\n99999999999999999999\n", 24},
        {"0\n9223372036854775807x\n", 23},
        {"", 0},
    };
    struct plog_fixture *f = *state;
    uint64_t before;
    size_t i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 200);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    assert_true(plog_segment_count(f->log) > 5);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        plog_fixture_kill(f);
        assert_int_equal(
            mem_storage_truncate_raw(
                f->ms, plog_fixture_path(PLOG_RECOVERY_CHECKPOINT), 0),
            0);
        if (bad[i].len > 0) {
            assert_int_equal(mem_storage_write_raw(
                                 f->ms,
                                 plog_fixture_path(PLOG_RECOVERY_CHECKPOINT), 0,
                                 bad[i].text, bad[i].len),
                             0);
        }
        before = mem_storage_bytes_read(f->ms);
        assert_int_equal(plog_fixture_open(f, 1000), 0);
        assert_true(plog_recovered(f->log));
        assert_true(mem_storage_bytes_read(f->ms) - before >=
                    plog_size_bytes(f->log));
        assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    }
}

static void test_checkpoint_is_written_atomically(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf b;
    char want[64];

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 100);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    buf_init(&b);
    assert_int_equal(
        mem_storage_read_raw(f->ms, plog_fixture_path(PLOG_RECOVERY_CHECKPOINT),
                             &b),
        0);
    buf_put_u8(&b, 0);
    /* it lies in the active segment, at or below the end */
    assert_int_equal(strncmp((char *)b.data, "0\n", 2), 0);
    assert_true(atoll((char *)b.data + 2) >= plog_active(f->log)->base_offset);
    assert_true(atoll((char *)b.data + 2) <= plog_end_offset(f->log));
    assert_int_equal(
        f->ops->exists(f->ops->ctx,
                       plog_fixture_path(PLOG_RECOVERY_CHECKPOINT ".tmp")),
        0);
    /* after a clean close it is the end offset exactly */
    plog_fixture_close(f);
    buf_reset(&b);
    assert_int_equal(
        mem_storage_read_raw(f->ms, plog_fixture_path(PLOG_RECOVERY_CHECKPOINT),
                             &b),
        0);
    (void)snprintf(want, sizeof(want), "0\n%lld\n",
                   (long long)log_model_end(&f->model));
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    /* an unreadable checkpoint means a full scan, not a failure */
    assert_int_equal(
        mem_storage_write_raw(
            f->ms, plog_fixture_path(PLOG_RECOVERY_CHECKPOINT), 0, "xx", 2),
        0);
    assert_int_equal(f->ops->unlink(f->ops->ctx,
                                    plog_fixture_path(PLOG_CLEAN_MARKER),
                                    &f->ed),
                     0);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_true(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    buf_fini(&b);
}

static void test_clean_close_survives_power_loss(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 60);
    plog_fixture_close(f);
    mem_storage_crash(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_false(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_clean_marker_does_not_come_back_after_crash(void **state)
{
    struct plog_fixture *f = *state;

    f->cfg.segment_bytes = 1 << 20; /* no roll: it would sync the dir */
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 10);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_false(plog_recovered(f->log));
    append_random(f, 5); /* unsynced: a crash may tear these */
    plog_fixture_kill(f);
    mem_storage_crash(f->ms);
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(PLOG_CLEAN_MARKER)), 0);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_true(plog_recovered(f->log));
    log_model_truncate(&f->model, plog_end_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

struct size_snap {
    int64_t sizes[256];
    int n;
    struct mem_storage *ms;
};

static void snap_one(void *arg, const char *path, bool is_dir)
{
    struct size_snap *s = arg;

    if (!is_dir && s->n < 256) {
        s->sizes[s->n++] = mem_storage_size_of(s->ms, path);
    }
}

static void snapshot(struct plog_fixture *f, struct size_snap *s)
{
    memset(s, 0, sizeof(*s));
    s->ms = f->ms;
    mem_storage_walk(f->ms, snap_one, s);
}

/* Refusals must leave every file exactly as it was. */
static void expect_refusal(struct plog_fixture *f, const char *needle)
{
    struct size_snap before;
    struct size_snap after;
    struct plog *log = NULL;

    snapshot(f, &before);
    assert_int_equal(
        plog_open(f->ops, PLOG_FIXTURE_DIR, &f->cfg, 1000, &log, &f->ed),
        WEIR_ECORRUPT);
    assert_null(log);
    if (strstr(f->ed.msg, needle) == NULL) {
        printf("message '%s' lacks '%s'\n", f->ed.msg, needle);
        fail();
    }
    snapshot(f, &after);
    assert_int_equal(before.n, after.n);
    assert_memory_equal(before.sizes, after.sizes,
                        (size_t)before.n * sizeof(int64_t));
    assert_int_equal(mem_storage_open_files(f->ms), 0);
}

static void test_corrupt_closed_segment_refuses_open(void **state)
{
    struct plog_fixture *f = *state;
    uint8_t flip = 0x5a;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 100);
    plog_fixture_kill(f);
    /* no checkpoint: the scan covers segment 0, where a byte went bad */
    assert_int_equal(f->ops->unlink(f->ops->ctx,
                                    plog_fixture_path(PLOG_RECOVERY_CHECKPOINT),
                                    &f->ed),
                     0);
    assert_int_equal(mem_storage_write_raw(
                         f->ms, plog_fixture_path(plog_fixture_seg(0, ".log")),
                         700, &flip, 1),
                     0);
    expect_refusal(f, "00000000000000000000.log: invalid batch at byte");
    assert_non_null(strstr(f->ed.msg, "refusing to open"));
}

static void test_missing_middle_segment_refuses_open(void **state)
{
    struct plog_fixture *f = *state;
    char victim[256];

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 100);
    assert_true(plog_segment_count(f->log) > 4);
    strcpy(victim, plog_fixture_path(
                       plog_fixture_seg(f->log->segs[2]->base_offset, ".log")));
    plog_fixture_close(f);
    assert_int_equal(f->ops->unlink(f->ops->ctx, victim, &f->ed), 0);
    expect_refusal(f, "ends at offset");
    assert_non_null(strstr(f->ed.msg, "next segment starts at"));
    /* unclean: the same */
    assert_int_equal(f->ops->unlink(f->ops->ctx,
                                    plog_fixture_path(PLOG_CLEAN_MARKER),
                                    &f->ed),
                     0);
    expect_refusal(f, "ends at offset");
}

static void test_bad_segment_name_refuses_open(void **state)
{
    struct plog_fixture *f = *state;
    struct storage_file *file;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 3);
    plog_fixture_close(f);
    assert_int_equal(f->ops->open(f->ops->ctx, plog_fixture_path("123.log"),
                                  true, &file, &f->ed),
                     0);
    f->ops->close(f->ops->ctx, file);
    expect_refusal(f, "123.log is not a segment name");
}

static void test_no_segment_but_checkpoint_refuses_open(void **state)
{
    struct plog_fixture *f = *state;
    char seg[256];

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 3);
    plog_fixture_close(f);
    strcpy(seg, plog_fixture_path(plog_fixture_seg(0, ".log")));
    assert_int_equal(f->ops->unlink(f->ops->ctx, seg, &f->ed), 0);
    expect_refusal(f, "holds no segment but its recovery point is");
}

static void test_doubtful_indexes_are_rebuilt(void **state)
{
    struct plog_fixture *f = *state;
    static const uint8_t zeros[48];
    char idx[256];
    char tidx[256];
    char *text;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 150);
    assert_true(plog_segment_count(f->log) > 4);
    strcpy(idx, plog_fixture_path(
                    plog_fixture_seg(f->log->segs[1]->base_offset, ".index")));
    strcpy(tidx, plog_fixture_path(plog_fixture_seg(
                     f->log->segs[2]->base_offset, ".timeindex")));
    plog_fixture_close(f);
    /* garbage over one index, zeros appended to another time index, and a
     * missing index in a third segment */
    assert_true(mem_storage_size_of(f->ms, idx) >= 16);
    assert_int_equal(mem_storage_garbage(f->ms, idx, 0, 16, 3), 0);
    assert_int_equal(
        mem_storage_write_raw(f->ms, tidx,
                              (uint64_t)mem_storage_size_of(f->ms, tidx), zeros,
                              sizeof(zeros)),
        0);
    assert_int_equal(f->ops->unlink(f->ops->ctx,
                                    plog_fixture_path(plog_fixture_seg(
                                        f->model.start, ".index")),
                                    &f->ed),
                     0);
    trace_capture();
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    text = trace_collect();
    assert_non_null(strstr(text, "action=index_rebuild"));
    assert_false(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    assert_int_equal(plog_fixture_check(f, 1), 0);
    assert_true(mem_storage_size_of(f->ms, tidx) % 12 == 0);
    /* rebuilt files are sane: the next clean open trusts them */
    plog_fixture_close(f);
    trace_capture();
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    text = trace_collect();
    assert_null(strstr(text, "index_rebuild"));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_orphan_index_files_are_removed(void **state)
{
    struct plog_fixture *f = *state;
    struct storage_file *file;
    char orphan[256];

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 3);
    plog_fixture_close(f);
    strcpy(orphan, plog_fixture_path(plog_fixture_seg(99999, ".index")));
    assert_int_equal(f->ops->open(f->ops->ctx, orphan, true, &file, &f->ed), 0);
    f->ops->close(f->ops->ctx, file);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(f->ops->exists(f->ops->ctx, orphan), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_crash_right_after_roll(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 40);
    assert_int_equal(plog_maybe_roll(f->log, 1000 + f->cfg.segment_ms, &f->ed),
                     0);
    assert_true(plog_active(f->log)->size == 0);
    plog_fixture_kill(f);
    mem_storage_crash(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    /* the roll synced everything before it */
    assert_true(plog_end_offset(f->log) == log_model_end(&f->model));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_torn_write_is_cut, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_garbage_tail_is_cut, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_zero_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_with_wrong_offset_is_cut,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_keeps_everything_flushed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_crashes_keep_log_consistent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_unclean_open_scans_from_recovery_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_checkpoint_means_full_scan,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_is_written_atomically,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_close_survives_power_loss,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_clean_marker_does_not_come_back_after_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_corrupt_closed_segment_refuses_open, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_missing_middle_segment_refuses_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_segment_name_refuses_open,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_no_segment_but_checkpoint_refuses_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_doubtful_indexes_are_rebuilt,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_index_files_are_removed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_right_after_roll, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
