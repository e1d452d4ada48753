/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's metadata log on disk (controller/ctl_log.c), in a
 * temporary directory: batches replay whole, a torn tail is cut (a short
 * last batch, a last batch that fails its CRC, zeros), damage in the
 * middle refuses the open, snapshots plus the log after them rebuild the same
 * image, and a crash between a snapshot and the log rotation is harmless.
 * Batches come from a real ctl_core, so they are the records the controller
 * writes. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/ctl_chain.h"
#include "controller/ctl_log.h"
#include "controller/elect/ctl_core.h"
#include "controller/meta/meta_chain.h"
#include "controller/meta/meta_snapshot.h"

struct lfx {
    char dir[64];
    char path[128];
    struct ctl_core *core;
    struct ctl_actions out;
    struct ctl_log *log;
    uint64_t now_ms;
};

static int lfx_setup(void **state)
{
    struct lfx *f = calloc(1, sizeof(*f));
    struct ctl_config cfg;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct err_detail ed;

    assert_non_null(f);
    (void)snprintf(f->dir, sizeof(f->dir), "/tmp/weir-ctl-log-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    (void)snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, CTL_LOG_FILE);
    ctl_config_init(&cfg);
    cfg.rebalance_interval_ms = 0;
    assert_int_equal(ctl_core_new(&cfg, NULL, &f->core), 0);
    ctl_actions_init(&f->out);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed), 0);
    assert_int_equal(meta_image_end_offset(img), 0);
    meta_image_free(img);
    *state = f;
    return 0;
}

static int lfx_teardown(void **state)
{
    struct lfx *f = *state;
    char cmd[128];

    ctl_log_close(f->log);
    ctl_actions_fini(&f->out);
    ctl_core_free(f->core);
    (void)snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* Step the core and append its batch, as the controller does. */
static void lfx_step(struct lfx *f, struct ctl_event *ev)
{
    struct err_detail ed;

    ev->now_ms = f->now_ms += 10;
    assert_int_equal(ctl_core_step(f->core, ev, &f->out), 0);
    assert_int_equal(f->out.result, 0);
    assert_int_equal(ctl_log_append(f->log, f->out.records, f->out.n_records,
                                    f->out.first_offset, &ed),
                     0);
}

static void lfx_join(struct lfx *f, int32_t id)
{
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_REGISTER;
    ev.u.reg.broker_id = id;
    ev.u.reg.host = "127.0.0.1";
    ev.u.reg.port = (uint16_t)(9000 + id);
    lfx_step(f, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_CAUGHT_UP;
    ev.u.broker.broker_id = id;
    ev.u.broker.broker_epoch = f->out.broker_epoch;
    lfx_step(f, &ev);
}

static void lfx_create(struct lfx *f, const char *name, int32_t parts)
{
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_CREATE_TOPIC;
    ev.u.create.name = name;
    ev.u.create.partitions = parts;
    lfx_step(f, &ev);
}

/* Close and open again; the image must equal the core's. */
static struct ctl_log_stats lfx_reopen_equal(struct lfx *f, bool want_equal)
{
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct err_detail ed;

    ctl_log_close(f->log);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed), 0);
    assert_int_equal(meta_image_check(img, &ed), 0);
    assert_true(meta_image_equal(img, ctl_core_image(f->core)) == want_equal);
    assert_int_equal(ctl_log_end_offset(f->log), meta_image_end_offset(img));
    meta_image_free(img);
    return st;
}

static off_t lfx_size(const struct lfx *f)
{
    struct stat st;

    assert_int_equal(stat(f->path, &st), 0);
    return st.st_size;
}

static void test_batches_replay_whole(void **state)
{
    struct lfx *f = *state;
    struct ctl_log_stats st;

    lfx_join(f, 1);
    lfx_join(f, 2);
    lfx_create(f, "orders", 3);
    st = lfx_reopen_equal(f, true);
    assert_int_equal(st.cut_bytes, 0);
    assert_int_equal(st.batches, 5);
    /* appends continue after a reopen */
    lfx_join(f, 3);
    (void)lfx_reopen_equal(f, true);
}

/* Whole file into a malloc'd buffer; *len its size. */
static uint8_t *lfx_read(const char *path, size_t *len)
{
    struct stat st;
    uint8_t *p;
    int fd = open(path, O_RDONLY);

    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    p = malloc((size_t)st.st_size + 1);
    assert_non_null(p);
    assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
    (void)close(fd);
    *len = (size_t)st.st_size;
    return p;
}

/* The cut bytes were kept in dir/name, exactly. */
static void lfx_assert_saved(const struct lfx *f,
                             const struct ctl_log_stats *st,
                             const uint8_t *before,
                             size_t before_len)
{
    char path[256];
    char want[64];
    uint8_t *saved;
    size_t n;

    (void)snprintf(want, sizeof(want), "%s.cut-%llu", CTL_LOG_FILE,
                   (unsigned long long)st->cut_at_byte);
    assert_string_equal(st->cut_file, want);
    (void)snprintf(path, sizeof(path), "%s/%s", f->dir, st->cut_file);
    saved = lfx_read(path, &n);
    assert_int_equal(n, st->cut_bytes);
    assert_int_equal(st->cut_at_byte + n, before_len);
    assert_memory_equal(saved, before + st->cut_at_byte, n);
    free(saved);
}

static void test_torn_tail_is_cut(void **state)
{
    struct lfx *f = *state;
    struct ctl_log_stats st;
    uint8_t *before;
    size_t before_len;
    off_t good;

    lfx_join(f, 1);
    good = lfx_size(f);
    lfx_create(f, "orders", 2); /* this batch gets torn */
    assert_int_equal(truncate(f->path, lfx_size(f) - 3), 0);
    before = lfx_read(f->path, &before_len);
    st = lfx_reopen_equal(f, false);
    assert_int_equal(st.batches, 2);
    assert_true(st.cut_bytes > 0);
    assert_int_equal(lfx_size(f), good); /* cut at the first bad byte */
    assert_int_equal(ctl_log_end_offset(f->log), 2);
    /* and not lost: the bytes cut are in metadata.log.cut-<byte> */
    assert_int_equal(st.cut_at_byte, good);
    lfx_assert_saved(f, &st, before, before_len);
    free(before);
    /* a second cut at the same byte keeps the first file */
    assert_int_equal(truncate(f->path, good + 100), 0);
    st = lfx_reopen_equal(f, false);
    assert_int_equal(st.cut_at_byte, good);
    assert_non_null(strstr(st.cut_file, ".cut-"));
    assert_non_null(strstr(st.cut_file, ".1"));
}

static void lfx_flip(const struct lfx *f, off_t at)
{
    uint8_t byte;
    int fd = open(f->path, O_RDWR);

    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x40;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    (void)close(fd);
}

/* A batch that fails its CRC with whole batches after it is damage, not a
 * crash during the last write: cutting there would drop the later batches
 * without a word, so open refuses and names the file and the byte. */
static void test_crc_failure_in_the_middle_refuses_to_start(void **state)
{
    struct lfx *f = *state;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct err_detail ed;
    char want[200];
    off_t good;
    off_t size;

    lfx_join(f, 1);
    good = lfx_size(f);
    lfx_join(f, 2);
    lfx_create(f, "orders", 1);
    size = lfx_size(f);
    lfx_flip(f, good + 12);
    ctl_log_close(f->log);
    f->log = NULL;
    err_detail_clear(&ed);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed),
                     WEIR_ECORRUPT);
    assert_null(f->log);
    assert_null(img);
    (void)snprintf(want, sizeof(want),
                   "%s: the batch at byte %lld fails its "
                   "CRC",
                   f->path, (long long)good);
    assert_non_null(strstr(ed.msg, want));
    assert_int_equal(lfx_size(f), size); /* nothing was cut */
    /* a length that cannot be, with bytes after it: refused the same way */
    lfx_flip(f, good + 12);
    lfx_flip(f, good);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed),
                     WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, "impossible length"));
    lfx_flip(f, good);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed), 0);
    assert_true(meta_image_equal(img, ctl_core_image(f->core)));
    meta_image_free(img);
}

/* The case: a bit flip in the length of the second of five
 * batches makes it look like a batch that runs past the end of the file
 * (a torn last write). The batches after it are whole and CRC-valid, so
 * it is damage in the middle: open refuses, naming the file and both
 * bytes, and cuts nothing (before, the three batches after it were cut
 * as a torn tail). */
static void test_damaged_length_in_the_middle_is_not_a_torn_tail(void **state)
{
    struct lfx *f = *state;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct err_detail ed;
    char want[300];
    off_t second;
    off_t third;
    off_t size;
    int fd;
    uint8_t byte;

    lfx_join(f, 1); /* two batches */
    second = lfx_size(f);
    lfx_create(f, "t1", 1);
    third = lfx_size(f);
    lfx_create(f, "t2", 1);
    lfx_create(f, "t3", 1);
    size = lfx_size(f);
    /* bit 16 of the second batch's length: +65536, past the end */
    fd = open(f->path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, second + 1), 1);
    byte ^= 0x01;
    assert_int_equal(pwrite(fd, &byte, 1, second + 1), 1);
    (void)close(fd);
    ctl_log_close(f->log);
    f->log = NULL;
    err_detail_clear(&ed);
    assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed),
                     WEIR_ECORRUPT);
    assert_null(f->log);
    (void)snprintf(want, sizeof(want),
                   "%s: the batch at byte %lld runs past the end of the file, "
                   "but a whole batch follows at byte %lld",
                   f->path, (long long)second, (long long)third);
    if (strstr(ed.msg, want) == NULL) {
        fail_msg("got \"%s\"", ed.msg);
    }
    assert_int_equal(lfx_size(f), size);
}

/* The last batch ends exactly at the end of the file but fails its CRC: a
 * write torn inside the batch. It is cut. */
static void test_last_batch_with_bad_crc_is_cut(void **state)
{
    struct lfx *f = *state;
    struct ctl_log_stats st;
    off_t good;

    uint8_t *before;
    size_t before_len;

    lfx_join(f, 1);
    good = lfx_size(f);
    lfx_create(f, "orders", 2);
    lfx_flip(f, lfx_size(f) - 2);
    before = lfx_read(f->path, &before_len);
    st = lfx_reopen_equal(f, false);
    assert_int_equal(st.batches, 2);
    assert_true(st.cut_bytes > 0);
    assert_int_equal(lfx_size(f), good);
    assert_int_equal(ctl_log_end_offset(f->log), 2);
    lfx_assert_saved(f, &st, before, before_len); /* it may have been acked */
    free(before);
}

/* The file grew but the data never reached the disk: zeros after the last
 * whole batch are a torn tail too. */
static void test_zero_filled_tail_is_cut(void **state)
{
    struct lfx *f = *state;
    struct ctl_log_stats st;
    off_t good;

    lfx_join(f, 1);
    good = lfx_size(f);
    assert_int_equal(truncate(f->path, good + 4096), 0);
    st = lfx_reopen_equal(f, true);
    assert_int_equal(st.cut_bytes, 4096);
    assert_int_equal(lfx_size(f), good);
    /* a short frame head at the end is cut as well */
    assert_int_equal(truncate(f->path, good + 5), 0);
    st = lfx_reopen_equal(f, true);
    assert_int_equal(st.cut_bytes, 5);
}

static void test_snapshot_then_log_equals_full_replay(void **state)
{
    struct lfx *f = *state;
    struct ctl_log_stats st;
    struct err_detail ed;
    struct weir_buf b;
    uint32_t n = 0;

    lfx_join(f, 1);
    lfx_join(f, 2);
    lfx_create(f, "a", 2);
    assert_int_equal(ctl_log_snapshot(f->log, ctl_core_image(f->core), &ed), 0);
    assert_int_equal(lfx_size(f), 0);
    assert_int_equal(ctl_log_start_offset(f->log), ctl_log_end_offset(f->log));
    lfx_create(f, "b", 3);
    lfx_join(f, 3);
    st = lfx_reopen_equal(f, true);
    assert_true(st.snapshot_end > 0);
    assert_int_equal(st.batches, 3);
    /* the log holds exactly the records after the snapshot */
    buf_init(&b);
    assert_int_equal(ctl_log_read(f->log, st.snapshot_end, 1 << 20, &b, &n), 0);
    assert_int_equal(n, ctl_log_end_offset(f->log) - st.snapshot_end);
    assert_int_equal(ctl_log_read(f->log, st.snapshot_end - 1, 1 << 20, &b, &n),
                     WEIR_EINVALID_ARGUMENT);
    buf_fini(&b);
}

static void test_read_respects_max_bytes(void **state)
{
    struct lfx *f = *state;
    struct weir_buf b;
    uint32_t n = 0;

    lfx_join(f, 1);
    lfx_create(f, "orders", 5);
    buf_init(&b);
    assert_int_equal(ctl_log_read(f->log, 0, 1, &b, &n), 0);
    assert_int_equal(n, 1); /* at least one record */
    buf_reset(&b);
    assert_int_equal(ctl_log_read(f->log, 0, 1 << 20, &b, &n), 0);
    assert_int_equal(n, ctl_log_end_offset(f->log));
    buf_reset(&b);
    assert_int_equal(
        ctl_log_read(f->log, ctl_log_end_offset(f->log), 100, &b, &n), 0);
    assert_int_equal(n, 0);
    buf_fini(&b);
}

/* A crash after the snapshot's rename but before the log was replaced:
 * the old log's batches are already in the snapshot and are skipped. */
static void test_crash_between_snapshot_and_rotation(void **state)
{
    struct lfx *f = *state;
    char saved[160];
    char cmd[400];
    struct err_detail ed;

    lfx_join(f, 1);
    lfx_create(f, "orders", 2);
    (void)snprintf(saved, sizeof(saved), "%s/saved.log", f->dir);
    (void)snprintf(cmd, sizeof(cmd), "cp %s %s", f->path, saved);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(ctl_log_snapshot(f->log, ctl_core_image(f->core), &ed), 0);
    ctl_log_close(f->log);
    f->log = NULL;
    assert_int_equal(rename(saved, f->path), 0);
    {
        struct meta_image *img = NULL;
        struct ctl_log_stats st;
        assert_int_equal(ctl_log_open(f->dir, &f->log, &img, &st, &ed), 0);
        assert_true(meta_image_equal(img, ctl_core_image(f->core)));
        meta_image_free(img);
    }
    lfx_join(f, 2); /* and the log goes on after it */
    (void)lfx_reopen_equal(f, true);
}

/* The chain value at every offset, folded here from the records the log
 * serves (u32be length | record each) from offset 0. */
static void lfx_fold_all(struct lfx *f, int64_t *out, int64_t n)
{
    struct weir_buf b;
    uint32_t count = 0;
    size_t at = 0;
    int64_t i;

    buf_init(&b);
    assert_int_equal(ctl_log_read(f->log, 0, 1 << 30, &b, &count), 0);
    assert_int_equal(count, n);
    out[0] = META_CHAIN_ZERO;
    for (i = 0; i < n; i++) {
        uint32_t rlen = wire_get_u32be(b.data + at);
        out[i + 1] = meta_chain_fold(out[i], b.data + at + 4, rlen);
        at += 4 + rlen;
    }
    buf_fini(&b);
}

/* The log knows the chain value of every offset it holds, the same as a
 * broker folding the records it is served; a reopen computes the same
 * values, and a snapshot keeps those before its end (the tail) in the
 * snapshot file, so they survive the log's rotation and a restart. */
static void test_chain_values_survive_reopen_and_snapshot(void **state)
{
    struct lfx *f = *state;
    int64_t want[64];
    int64_t end;
    int64_t i;
    struct err_detail ed;

    lfx_join(f, 1);
    lfx_join(f, 2);
    lfx_create(f, "a", 3);
    end = ctl_log_end_offset(f->log);
    assert_true(end < 63);
    lfx_fold_all(f, want, end);
    assert_int_equal(ctl_log_chain_first(f->log), 0);
    for (i = 0; i <= end; i++) {
        assert_int_equal(ctl_log_chain_at(f->log, i), want[i]);
    }
    assert_int_equal(ctl_log_chain_at(f->log, end + 1), META_CHAIN_UNKNOWN);
    (void)lfx_reopen_equal(f, true);
    for (i = 0; i <= end; i++) {
        assert_int_equal(ctl_log_chain_at(f->log, i), want[i]);
    }
    assert_int_equal(ctl_log_snapshot(f->log, ctl_core_image(f->core), &ed), 0);
    lfx_create(f, "b", 1);
    (void)lfx_reopen_equal(f, true);
    assert_int_equal(ctl_log_start_offset(f->log), end);
    assert_int_equal(ctl_log_chain_first(f->log), 0); /* the tail */
    for (i = 0; i <= end; i++) {
        assert_int_equal(ctl_log_chain_at(f->log, i), want[i]);
    }
    assert_int_not_equal(ctl_log_chain_at(f->log, ctl_log_end_offset(f->log)),
                         META_CHAIN_UNKNOWN);
}

/* A snapshot written before chains existed (the image alone): its end
 * value is made from its bytes, nothing before it is known, and records
 * after it fold onto that value. */
static void test_legacy_snapshot_starts_the_chain(void **state)
{
    struct lfx *f = *state;
    struct err_detail ed;
    struct weir_buf b;
    char path[200];
    int64_t end;
    int fd;

    lfx_join(f, 1);
    lfx_create(f, "a", 1);
    end = ctl_log_end_offset(f->log);
    buf_init(&b);
    assert_int_equal(meta_snapshot_encode(ctl_core_image(f->core), &b, &ed), 0);
    (void)snprintf(path, sizeof(path), "%s/%s", f->dir, CTL_SNAPSHOT_FILE);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    (void)close(fd);
    assert_int_equal(truncate(f->path, 0), 0);
    (void)lfx_reopen_equal(f, true);
    assert_int_equal(ctl_log_chain_first(f->log), end);
    assert_int_equal(ctl_log_chain_at(f->log, end),
                     meta_chain_of_legacy_snapshot(b.data, b.len));
    assert_int_equal(ctl_log_chain_at(f->log, end - 1), META_CHAIN_UNKNOWN);
    buf_fini(&b);
    lfx_join(f, 2);
    assert_int_not_equal(ctl_log_chain_at(f->log, end + 1), META_CHAIN_UNKNOWN);
}

/* The chain values held are bounded: a snapshot keeps CTL_CHAIN_KEEP
 * values before its end, and the head it writes reads back the same. */
static void test_chain_tail_is_bounded(void **state)
{
    static const uint8_t rec[] = {9, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1};
    struct ctl_chain c;
    struct ctl_chain back;
    struct err_detail ed;
    struct weir_buf b;
    int64_t end = 100 + CTL_CHAIN_KEEP + 10;
    int64_t back_end = -1;
    size_t used = 0;
    int64_t i;

    (void)state;
    ctl_chain_init(&c);
    ctl_chain_init(&back);
    assert_int_equal(ctl_chain_reset(&c, 100, 5), 0);
    for (i = 100; i < end; i++) {
        assert_int_equal(ctl_chain_push(&c, rec, sizeof(rec)), 0);
    }
    assert_int_equal(ctl_chain_at(&c, 100), 5);
    buf_init(&b);
    assert_int_equal(ctl_chain_encode(&c, end - 1, &b), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(ctl_chain_encode(&c, end, &b), 0);
    assert_int_equal(b.len,
                     CTL_CHAIN_HEAD_BYTES + (CTL_CHAIN_KEEP + 1) * 8 + 4);
    assert_int_equal(
        ctl_chain_decode(&back, b.data, b.len, &used, &back_end, &ed), 0);
    assert_int_equal(used, b.len);
    assert_int_equal(back_end, end);
    assert_int_equal(ctl_chain_first(&back), end - CTL_CHAIN_KEEP);
    assert_int_equal(ctl_chain_at(&back, end), ctl_chain_at(&c, end));
    assert_int_equal(ctl_chain_at(&back, end - CTL_CHAIN_KEEP - 1),
                     META_CHAIN_UNKNOWN);
    ctl_chain_trim(&c);
    assert_int_equal(ctl_chain_first(&c), end - CTL_CHAIN_KEEP);
    assert_int_equal(ctl_chain_at(&c, 100), META_CHAIN_UNKNOWN);
    assert_int_equal(ctl_chain_at(&c, end), ctl_chain_at(&back, end));
    /* one flipped byte of a value: refused */
    b.data[CTL_CHAIN_HEAD_BYTES + 3] ^= 1;
    assert_int_equal(
        ctl_chain_decode(&back, b.data, b.len, &used, &back_end, &ed),
        WEIR_ECORRUPT);
    buf_fini(&b);
    ctl_chain_fini(&c);
    ctl_chain_fini(&back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches_replay_whole, lfx_setup,
                                        lfx_teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_is_cut, lfx_setup,
                                        lfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_crc_failure_in_the_middle_refuses_to_start, lfx_setup,
            lfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_damaged_length_in_the_middle_is_not_a_torn_tail, lfx_setup,
            lfx_teardown),
        cmocka_unit_test_setup_teardown(test_last_batch_with_bad_crc_is_cut,
                                        lfx_setup, lfx_teardown),
        cmocka_unit_test_setup_teardown(test_zero_filled_tail_is_cut, lfx_setup,
                                        lfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_snapshot_then_log_equals_full_replay, lfx_setup, lfx_teardown),
        cmocka_unit_test_setup_teardown(test_read_respects_max_bytes, lfx_setup,
                                        lfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_crash_between_snapshot_and_rotation, lfx_setup, lfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_chain_values_survive_reopen_and_snapshot, lfx_setup,
            lfx_teardown),
        cmocka_unit_test_setup_teardown(test_legacy_snapshot_starts_the_chain,
                                        lfx_setup, lfx_teardown),
        cmocka_unit_test(test_chain_tail_is_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
