/* SPDX-License-Identifier: Apache-2.0 */
/* The replication adapter's failure handling (broker/replica/repl_io*.c)
 * on a real partition directory and a fake clock, without a network: a
 * fetched batch the follower's log refuses for a reason that is not the
 * disk's is a fetch error (the log stays online, a new follower core
 * starts from the log after REPL_IO_RETRY_MS); a failing disk still takes
 * the log offline; a failed epoch reconcile is done again by the next
 * load. The part is made by hand, as repl_io_on_partition
 * would make it for a follower of broker 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/broker.h"
#include "broker/replica/repl_io.h"
#include "broker/replica/repl_io_int.h"
#include "broker/storage/plog.h"
#include "common/batch.h"
#include "common/crc32c.h"
#include "common/mem.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/fake_clock.h"

#define EPOCH 3

struct fx {
    char tmp[64];
    char dir[128];
    struct fake_clock fc;
    struct broker b;
    struct repl_io *io;
    struct repl_io_part *p;
    struct plog *log;
    struct err_detail ed;
};

static int setup(void **state)
{
    static struct fx f;
    struct plog_config cfg;

    memset(&f, 0, sizeof(f));
    (void)snprintf(f.tmp, sizeof(f.tmp), "/tmp/weir-repl-io-XXXXXX");
    assert_non_null(mkdtemp(f.tmp));
    (void)snprintf(f.dir, sizeof(f.dir), "%s/t-0", f.tmp);
    plog_config_defaults(&cfg);
    cfg.segment_bytes = 4096;
    assert_int_equal(
        plog_open(storage_posix(), f.dir, &cfg, 1000, &f.log, &f.ed), 0);
    fake_clock_init(&f.fc, 10000, 1000);
    f.b.clock = &f.fc.clock;
    f.b.cfg.id = 2;
    assert_int_equal(repl_io_new(&f.b, &f.io), 0);
    f.io->parts = mem_calloc(1, sizeof(*f.io->parts));
    f.p = mem_calloc(1, sizeof(*f.p));
    assert_non_null(f.io->parts);
    assert_non_null(f.p);
    f.p->topic = mem_strdup("t");
    f.p->role = CLUSTER_ROLE_FOLLOWER;
    f.p->leader = 1;
    f.p->leader_epoch = EPOCH;
    f.p->follower_hw = -1;
    repl_epochs_init(&f.p->epochs);
    f.io->parts[0] = f.p;
    f.io->n = f.io->cap = 1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[160];

    repl_io_free(f->io);
    plog_free(f->log);
    (void)snprintf(cmd, sizeof(cmd), "rm -rf %s", f->tmp);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* The next fetch's parameters, when one may go now. */
static bool fetch_now(struct fx *f, struct repl_fetch_params *fp)
{
    uint64_t next = UINT64_MAX;

    return repl_io_follow_params(f->io, f->p, f->log, f->fc.now_ms, fp, &next);
}

/* One batch of n records at base in EPOCH; with `codec` set it claims a
 * compression codec (the CRC is recomputed, so it still decodes). */
static void make_batch(struct weir_buf *b, int64_t base, int32_t n, int codec)
{
    uint16_t attrs;

    buf_reset(b);
    assert_int_equal(batch_gen_make(b, (uint32_t)base, n, 100, 1, 50), 0);
    batch_set_base(b->data, base, EPOCH);
    if (codec != 0) {
        attrs = wire_get_u16be(b->data + BATCH_OFF_ATTRIBUTES);
        wire_put_u16be(b->data + BATCH_OFF_ATTRIBUTES,
                       (uint16_t)(attrs | codec));
        wire_put_u32be(b->data + BATCH_OFF_CRC,
                       crc32c(b->data + BATCH_OFF_ATTRIBUTES,
                              b->len - BATCH_OFF_ATTRIBUTES));
    }
}

static void answer(struct fx *f, const struct weir_buf *b, int64_t hw)
{
    struct repl_io_answer a;

    memset(&a, 0, sizeof(a));
    a.err_msg = "";
    a.leader_epoch = EPOCH;
    a.log_start_offset = 0;
    a.high_watermark = hw;
    a.diverging_epoch = -1;
    a.diverging_end_offset = -1;
    a.data = b->data;
    a.len = b->len;
    repl_io_follow_answer(f->io, f->p, f->log, &a);
}

static void test_refused_batch_is_a_fetch_error_not_a_disk_error(void **state)
{
    struct fx *f = *state;
    struct repl_fetch_params fp;
    struct weir_buf b;
    uint64_t next = UINT64_MAX;

    buf_init(&b);
    assert_true(fetch_now(f, &fp));
    assert_int_equal(fp.fetch_offset, 0);
    /* the core accepts the batch (offsets and epoch are right), the log
     * refuses it (a compressed batch): nothing is the disk's fault */
    make_batch(&b, 0, 5, BATCH_CODEC_LZ4);
    answer(f, &b, 0);
    assert_false(plog_is_offline(f->log));
    assert_false(f->p->failed);
    assert_null(f->p->follow);
    assert_int_equal(plog_end_offset(f->log), 0);
    /* a new core, from the log, after the pause */
    assert_false(
        repl_io_follow_params(f->io, f->p, f->log, f->fc.now_ms, &fp, &next));
    assert_true(next == f->fc.now_ms + REPL_IO_RETRY_MS);
    fake_clock_advance(&f->fc, REPL_IO_RETRY_MS);
    assert_true(fetch_now(f, &fp));
    assert_int_equal(fp.fetch_offset, 0);
    assert_int_equal(fp.last_fetched_epoch, REPL_EPOCH_NONE);
    /* the leader's good batch goes in */
    make_batch(&b, 0, 5, 0);
    answer(f, &b, 5);
    assert_int_equal(plog_end_offset(f->log), 5);
    assert_int_equal(plog_durable_offset(f->log), 5);
    assert_true(fetch_now(f, &fp));
    assert_int_equal(fp.fetch_offset, 5);
    assert_int_equal(fp.last_fetched_epoch, EPOCH);
    assert_false(plog_is_offline(f->log));
    buf_fini(&b);
}

static void test_failing_disk_still_fails_the_partition(void **state)
{
    struct fx *f = *state;
    struct repl_fetch_params fp;

    assert_true(fetch_now(f, &fp));
    /* a storage call about the log failed with EIO (its checkpoint) */
    assert_true(plog_storage_failed(f->log, WEIR_EIO, "rename: EIO"));
    repl_io_follow_failed(f->io, f->p, f->log, WEIR_EIO,
                          "writing the leader-epoch checkpoint: %s", "EIO");
    assert_true(f->p->failed);
    assert_true(plog_is_offline(f->log));
    assert_int_equal(plog_offline_cause(f->log), PLOG_OFFLINE_IO);
}

/* Append one batch of 2 records in `epoch` as a leader would. */
static void lead_append(struct fx *f, int32_t epoch)
{
    struct weir_buf b;
    int64_t base;
    int64_t last;

    buf_init(&b);
    assert_int_equal(batch_gen_make(&b, 1, 2, 100, 1, 20), 0);
    assert_int_equal(
        plog_append(f->log, b.data, b.len, epoch, 1000, &base, &last, &f->ed),
        0);
    buf_fini(&b);
}

static bool epochs_are(const struct repl_epochs *c,
                       const struct repl_epoch_entry *want,
                       uint32_t n)
{
    uint32_t i;

    if (repl_epochs_count(c) != n) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (repl_epochs_entry(c, i)->epoch != want[i].epoch ||
            repl_epochs_entry(c, i)->start_offset != want[i].start_offset) {
            return false;
        }
    }
    return true;
}

/* A reconcile that fails (here: each allocation failing in turn) is done
 * again by the next load, which ends with the whole history; before,
 * the part counted as loaded and kept the partial cache for good. */
static void test_failed_epoch_reconcile_is_done_again(void **state)
{
    static const struct repl_epoch_entry want[] = {{1, 0}, {2, 4}, {5, 8}};
    struct fx *f = *state;
    unsigned long nth;
    int failed = 0;
    int rv;

    lead_append(f, 1);
    lead_append(f, 1);
    lead_append(f, 2);
    lead_append(f, 2);
    lead_append(f, 5);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    for (nth = 1; nth < 64; nth++) {
        repl_epochs_fini(&f->p->epochs);
        repl_epochs_init(&f->p->epochs);
        f->p->loaded = false;
        mem_fault_set(nth, 0);
        rv = repl_io_part_load(f->p, f->log);
        mem_fault_set(0, 0);
        if (rv == 0) {
            assert_true(f->p->loaded);
            assert_true(epochs_are(&f->p->epochs, want, 3));
            continue;
        }
        failed++;
        assert_false(f->p->loaded);
        assert_int_equal(repl_io_part_load(f->p, f->log), 0);
        assert_true(f->p->loaded);
        assert_true(epochs_are(&f->p->epochs, want, 3));
    }
    assert_true(failed > 0);
    assert_false(plog_is_offline(f->log));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_refused_batch_is_a_fetch_error_not_a_disk_error, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_failing_disk_still_fails_the_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_failed_epoch_reconcile_is_done_again, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
