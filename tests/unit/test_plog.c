/* SPDX-License-Identifier: Apache-2.0 */
/* Partition log over memory storage: append/read round trips, index
 * lookups, fetch bounds, validation, disk full, flush and durability
 * bookkeeping, rolls, truncation and timestamp lookups. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "common/batch.h"
#include "common/crc32c.h"
#include "common/mem.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/plog_fixture.h"

static uint32_t rng_state = 12345;

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
    rng_state = 12345;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct plog_fixture *f = *state;

    plog_fixture_fini(f);
    return 0;
}

/* Append `count` random batches (1..8 records, values 1..300 bytes). */
static void append_random(struct plog_fixture *f, int count, int64_t wall)
{
    int i;

    for (i = 0; i < count; i++) {
        int32_t n = 1 + (int32_t)rnd(8);
        assert_int_equal(
            plog_fixture_append(f, n, 1000 + i * 10, 1, 1 + rnd(300), wall), 0);
    }
}

static void test_new_log_is_empty(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_true(plog_start_offset(f->log) == 0);
    assert_true(plog_end_offset(f->log) == 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_false(plog_recovered(f->log));
    assert_int_equal(plog_read(f->log, 0, INT64_MAX, 100, &r, &f->ed), 0);
    assert_int_equal(r.bytes, 0);
    assert_int_equal(r.fd, -1);
    assert_int_equal(plog_read(f->log, 1, INT64_MAX, 100, &r, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_read(f->log, -1, INT64_MAX, 100, &r, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    assert_true(mem_storage_size_of(f->ms, plog_fixture_path(plog_fixture_seg(
                                               0, ".log"))) == 0);
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
}

static void test_round_trip_many_batches_and_rolls(void **state)
{
    struct plog_fixture *f = *state;
    int i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 10; i++) {
        append_random(f, 30, 1000);
        assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    }
    assert_true(plog_segment_count(f->log) > 10);
    assert_true(plog_end_offset(f->log) == log_model_end(&f->model));
    /* small and large reads see the same records */
    assert_int_equal(plog_fixture_check(f, 1), 0);
    assert_int_equal(plog_fixture_check(f, 700), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* and reads starting inside a batch too */
    for (i = 0; i < 50; i++) {
        int64_t from = (int64_t)rnd((uint32_t)plog_end_offset(f->log));
        assert_int_equal(log_model_verify(&f->model, f->log, from, 3000), 0);
    }
    /* segments are not overfull, and rolled only when the next append
     * would not fit */
    for (i = 0; i + 1 < (int)f->log->n_segs; i++) {
        struct plog_read_result r;
        assert_true(f->log->segs[i]->size <= f->cfg.segment_bytes);
        assert_int_equal(plog_read(f->log, f->log->segs[i + 1]->base_offset,
                                   INT64_MAX, 1, &r, &f->ed),
                         0);
        assert_true(f->log->segs[i]->size + r.bytes > f->cfg.segment_bytes);
    }
}

static void test_read_finds_batch_of_every_offset_via_index(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    struct batch_header h;
    struct weir_buf b;
    unsigned long before;
    int64_t off;
    int i;

    f->cfg.segment_bytes = 1 << 20;
    f->cfg.index_interval_bytes = 4096;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 2000; i++) {
        assert_int_equal(
            plog_fixture_append(f, 1 + (i % 3), i, 1, 100 + rnd(100), 1000), 0);
    }
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_true(f->log->segs[0]->idx.n_off > 50);
    buf_init(&b);
    for (off = 0; off < plog_end_offset(f->log); off++) {
        buf_reset(&b);
        assert_int_equal(plog_read(f->log, off, INT64_MAX, 1, &r, &f->ed), 0);
        assert_int_equal(plog_read_copy(f->log, &r, &b, &f->ed), 0);
        assert_int_equal(batch_validate(buf_slice(&b), UINT32_MAX, &h, NULL),
                         0);
        assert_true(h.base_offset <= off && off <= batch_last_offset(&h));
        assert_true(r.first_offset == h.base_offset);
    }
    /* a lookup at the end reads a handful of headers, not the segment */
    before = mem_storage_calls(f->ms, MEM_OP_PREAD);
    assert_int_equal(plog_read(f->log, plog_end_offset(f->log) - 1, INT64_MAX,
                               1, &r, &f->ed),
                     0);
    assert_true(mem_storage_calls(f->ms, MEM_OP_PREAD) - before < 64);
    buf_fini(&b);
}

static void test_read_stops_at_max_offset_bytes_and_segment(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    int64_t bases[40];
    int i;

    f->cfg.segment_bytes = 1 << 20;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 40; i++) {
        bases[i] = plog_end_offset(f->log);
        assert_int_equal(plog_fixture_append(f, 3, i, 1, 50, 1000), 0);
    }
    /* max_offset at a batch boundary: exactly the batches below it */
    assert_int_equal(plog_read(f->log, 0, bases[10], 1 << 20, &r, &f->ed), 0);
    assert_true(r.first_offset == 0);
    assert_int_equal(r.position, 0);
    {
        struct plog_read_result r2;
        assert_int_equal(
            plog_read(f->log, bases[10], INT64_MAX, 1, &r2, &f->ed), 0);
        assert_int_equal(r.bytes, r2.position);
    }
    /* nothing at or past max_offset */
    assert_int_equal(plog_read(f->log, bases[10], bases[10], 100, &r, &f->ed),
                     0);
    assert_int_equal(r.bytes, 0);
    /* max_bytes below one batch still returns that one batch */
    assert_int_equal(plog_read(f->log, 4, INT64_MAX, 1, &r, &f->ed), 0);
    assert_true(r.first_offset == bases[1]);
    {
        struct plog_read_result one;
        uint32_t size1 = r.bytes;
        /* max_bytes of 2.5 batches gives two */
        assert_int_equal(
            plog_read(f->log, 4, INT64_MAX, size1 * 5 / 2, &one, &f->ed), 0);
        assert_int_equal(one.bytes, 2 * size1);
    }
    /* at the end: nothing, not an error */
    assert_int_equal(
        plog_read(f->log, plog_end_offset(f->log), INT64_MAX, 100, &r, &f->ed),
        0);
    assert_int_equal(r.bytes, 0);
    plog_fixture_fini(f);

    /* with small segments a read never crosses a segment end */
    plog_fixture_init(f);
    f->cfg.segment_bytes = 1000;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 60, 1000);
    for (i = 0; i < (int)f->log->n_segs; i++) {
        struct seg *s = f->log->segs[i];
        if (s->size == 0) {
            continue;
        }
        assert_int_equal(
            plog_read(f->log, s->base_offset, INT64_MAX, 1 << 20, &r, &f->ed),
            0);
        assert_ptr_equal(r.file, s->log);
        assert_int_equal(r.position, 0);
        assert_int_equal(r.bytes, s->size);
    }
}

static void test_append_refuses_invalid_batches(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf b;
    int64_t base;
    int64_t last;
    unsigned long writes;
    size_t first_len;
    uint8_t copy[4096];

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_append(f, 2, 10, 1, 20, 1000), 0);
    buf_init(&b);
    assert_int_equal(batch_gen_make(&b, 100, 3, 10, 1, 30), 0);
    first_len = b.len;
    assert_int_equal(batch_gen_make(&b, 101, 3, 10, 1, 30), 0);
    assert_int_equal(batch_gen_make(&b, 102, 3, 10, 1, 30), 0);
    writes = mem_storage_calls(f->ms, MEM_OP_PWRITE);

    /* a flipped bit in the second batch: nothing written, nothing patched */
    b.data[first_len + 70] ^= 0x10;
    memcpy(copy, b.data, b.len);
    assert_int_equal(
        plog_append(f->log, b.data, b.len, 3, 1000, &base, &last, &f->ed),
        WEIR_ECORRUPT_MESSAGE);
    assert_non_null(strstr(f->ed.msg, "batch 1"));
    assert_memory_equal(copy, b.data, b.len);
    b.data[first_len + 70] ^= 0x10;

    /* truncated tail */
    assert_int_equal(
        plog_append(f->log, b.data, b.len - 5, 3, 1000, &base, &last, &f->ed),
        WEIR_ECORRUPT_MESSAGE);
    /* too large for max_batch_bytes */
    f->log->cfg.max_batch_bytes = (uint32_t)first_len - 1;
    assert_int_equal(
        plog_append(f->log, b.data, b.len, 3, 1000, &base, &last, &f->ed),
        WEIR_EMESSAGE_TOO_LARGE);
    f->log->cfg.max_batch_bytes = f->cfg.max_batch_bytes;
    /* old magic */
    b.data[BATCH_OFF_MAGIC] = 1;
    assert_int_equal(
        plog_append(f->log, b.data, b.len, 3, 1000, &base, &last, &f->ed),
        WEIR_EUNSUPPORTED_VERSION);
    b.data[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    /* nothing at all */
    assert_int_equal(
        plog_append(f->log, b.data, 0, 3, 1000, &base, &last, &f->ed),
        WEIR_ECORRUPT_MESSAGE);

    assert_int_equal(mem_storage_calls(f->ms, MEM_OP_PWRITE), writes);
    assert_true(plog_end_offset(f->log) == 2);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    buf_fini(&b);
}

static void test_append_assigns_offsets_and_epoch_in_place(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result r;
    struct batch_header h;
    struct weir_buf b;
    struct weir_buf got;
    size_t l1;
    size_t l2;
    int64_t base;
    int64_t last;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_append(f, 5, 1, 1, 10, 1000), 0);
    buf_init(&b);
    buf_init(&got);
    /* three batches in one append, one write */
    assert_int_equal(batch_gen_make(&b, 50, 2, 100, 1, 10), 0);
    l1 = b.len;
    assert_int_equal(batch_gen_make(&b, 51, 4, 100, 1, 10), 0);
    l2 = b.len;
    assert_int_equal(batch_gen_make(&b, 52, 1, 100, 1, 10), 0);
    assert_int_equal(
        plog_append(f->log, b.data, b.len, 42, 1000, &base, &last, &f->ed), 0);
    assert_true(base == 5 && last == 11);
    log_model_add(&f->model, 50, 2, 100, 1);
    log_model_add(&f->model, 51, 4, 100, 1);
    log_model_add(&f->model, 52, 1, 100, 1);
    assert_true((int64_t)wire_get_u64be(b.data) == 5);
    assert_true((int64_t)wire_get_u64be(b.data + l1) == 7);
    assert_true((int64_t)wire_get_u64be(b.data + l2) == 11);
    assert_int_equal(
        (int32_t)wire_get_u32be(b.data + l1 + BATCH_OFF_LEADER_EPOCH), 42);
    /* what is read back carries the patched header and a valid CRC */
    assert_int_equal(plog_read(f->log, 8, INT64_MAX, 1, &r, &f->ed), 0);
    assert_int_equal(plog_read_copy(f->log, &r, &got, &f->ed), 0);
    assert_int_equal(batch_validate(buf_slice(&got), UINT32_MAX, &h, NULL), 0);
    assert_true(h.base_offset == 7 && h.leader_epoch == 42);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    buf_fini(&b);
    buf_fini(&got);
}

static void test_disk_full_leaves_log_unchanged(void **state)
{
    struct plog_fixture *f = *state;
    const char *seg0;
    int64_t size;
    int64_t end;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 5, 1000);
    seg0 = plog_fixture_path(plog_fixture_seg(0, ".log"));
    size = mem_storage_size_of(f->ms, seg0);
    end = plog_end_offset(f->log);
    /* the disk fills after 30 bytes of the write */
    mem_storage_fail(f->ms, MEM_OP_PWRITE, 1, ENOSPC, 30, false);
    assert_int_equal(plog_fixture_append(f, 3, 5, 1, 50, 1000), WEIR_ESTORAGE);
    assert_non_null(strstr(f->ed.msg, "No space left on device"));
    assert_non_null(strstr(f->ed.msg, "pwrite /data/t-0/"));
    assert_true(plog_end_offset(f->log) == end);
    assert_true(mem_storage_size_of(f->ms, seg0) == size);
    /* a failed write takes the log offline: nothing more goes in or out */
    assert_true(plog_is_offline(f->log));
    assert_int_equal(plog_fixture_append(f, 1, 1, 1, 10, 1000),
                     WEIR_ELOG_OFFLINE);
    assert_true(mem_storage_size_of(f->ms, seg0) == size);
    /* space comes back: reopened in place, appends continue where they
     * were */
    assert_int_equal(plog_recover(f->log, 1000, &end, &end, &f->ed), 0);
    assert_false(plog_is_offline(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    append_random(f, 3, 1000);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_flush_advances_durable_offset(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long syncs;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_append(f, 4, 1, 1, 10, 1000), 0);
    assert_true(plog_durable_offset(f->log) == 0);
    assert_true(plog_unflushed_messages(f->log) == 4);
    syncs = mem_storage_calls(f->ms, MEM_OP_FSYNC);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    assert_true(mem_storage_calls(f->ms, MEM_OP_FSYNC) > syncs);
    assert_true(plog_durable_offset(f->log) == 4);
    assert_true(plog_unflushed_messages(f->log) == 0);
    /* nothing new: no fsync */
    syncs = mem_storage_calls(f->ms, MEM_OP_FSYNC);
    assert_int_equal(plog_flush(f->log, &f->ed), 0);
    assert_int_equal(mem_storage_calls(f->ms, MEM_OP_FSYNC), syncs);
    /* a roll syncs on its own, whatever the policy */
    f->log->cfg.flush_policy = PLOG_FLUSH_NEVER;
    append_random(f, 40, 1000);
    assert_true(plog_segment_count(f->log) > 1);
    assert_true(plog_durable_offset(f->log) ==
                plog_active(f->log)->base_offset);
}

static void test_fsync_failure_takes_log_offline(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 3, 1000);
    mem_storage_fail(f->ms, MEM_OP_FSYNC, 1, EIO, 0, false);
    assert_int_equal(plog_flush(f->log, &f->ed), WEIR_EIO);
    assert_true(plog_durable_offset(f->log) == 0);
    /* no retry-and-continue after a failed fsync */
    assert_int_equal(plog_fixture_append(f, 1, 1, 1, 10, 1000),
                     WEIR_ELOG_OFFLINE);
    assert_non_null(strstr(f->ed.msg, "offline"));
    assert_non_null(strstr(f->ed.msg, "fdatasync"));
    assert_int_equal(plog_flush(f->log, &f->ed), WEIR_ELOG_OFFLINE);
    /* close leaves no clean marker: the next open recovers, and cuts
     * the log back to what the last good fsync covered (nothing here):
     * the failure was noted in the directory */
    plog_fixture_close(f);
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(PLOG_CLEAN_MARKER)), 0);
    assert_int_equal(
        f->ops->exists(f->ops->ctx,
                       plog_fixture_path(PLOG_FSYNC_FAILED_CHECKPOINT)),
        1);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_true(plog_recovered(f->log));
    assert_false(plog_is_offline(f->log));
    assert_true(plog_end_offset(f->log) == 0);
    assert_true(plog_durable_offset(f->log) == 0);
    assert_int_equal(
        f->ops->exists(f->ops->ctx,
                       plog_fixture_path(PLOG_FSYNC_FAILED_CHECKPOINT)),
        0);
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
}

static void test_clean_close_skips_recovery(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long reads;

    f->cfg.index_interval_bytes = 4096;
    f->cfg.segment_bytes = 1 << 20;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 500, 1000);
    plog_fixture_close(f);
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(PLOG_CLEAN_MARKER)), 1);
    reads = mem_storage_calls(f->ms, MEM_OP_PREAD);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_false(plog_recovered(f->log));
    /* only the tail after the last index entry was read */
    assert_true(mem_storage_calls(f->ms, MEM_OP_PREAD) - reads < 64);
    /* the marker is gone, durably */
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(PLOG_CLEAN_MARKER)), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    append_random(f, 10, 1000);
    plog_fixture_kill(f);
    mem_storage_crash(f->ms);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_true(plog_recovered(f->log));
    log_model_truncate(&f->model, plog_end_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_rolls_by_age(void **state)
{
    struct plog_fixture *f = *state;

    f->cfg.segment_ms = 1000;
    f->cfg.segment_bytes = 1 << 20;
    assert_int_equal(plog_fixture_open(f, 0), 0);
    /* an empty segment does not roll however old it is */
    assert_int_equal(plog_maybe_roll(f->log, 50000, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    /* age counts from the first batch */
    assert_int_equal(plog_fixture_append(f, 1, 50000, 1, 10, 50000), 0);
    assert_int_equal(plog_fixture_append(f, 1, 50500, 1, 10, 50500), 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_int_equal(plog_fixture_append(f, 1, 51000, 1, 10, 51000), 0);
    assert_int_equal(plog_segment_count(f->log), 2);
    assert_true(plog_active(f->log)->base_offset == 2);
    /* the timer path */
    assert_int_equal(plog_maybe_roll(f->log, 51999, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 2);
    assert_int_equal(plog_maybe_roll(f->log, 52000, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 3);
    assert_int_equal(plog_maybe_roll(f->log, 99000, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 3);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_roll_by_size_keeps_big_append_whole(void **state)
{
    struct plog_fixture *f = *state;

    f->cfg.segment_bytes = 500;
    assert_int_equal(plog_fixture_open(f, 0), 0);
    /* bigger than a segment: accepted whole into the empty segment */
    assert_int_equal(plog_fixture_append(f, 3, 1, 1, 400, 0), 0);
    assert_int_equal(plog_segment_count(f->log), 1);
    assert_true(plog_active(f->log)->size > 500);
    /* the next append rolls first */
    assert_int_equal(plog_fixture_append(f, 1, 1, 1, 10, 0), 0);
    assert_int_equal(plog_segment_count(f->log), 2);
    assert_true(plog_active(f->log)->base_offset == 3);
    assert_true(f->ops->exists(f->ops->ctx, plog_fixture_path(plog_fixture_seg(
                                                3, ".timeindex"))) == 1);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_truncate_to_removes_batches_and_segments(void **state)
{
    struct plog_fixture *f = *state;
    uint32_t segs;
    int64_t cut;
    struct seg *s;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 200, 1000);
    segs = plog_segment_count(f->log);
    assert_true(segs > 5);
    /* inside a batch of segment 2: that whole batch goes, and every later
     * segment with its files */
    s = f->log->segs[2];
    cut = s->base_offset + (s->next_offset - s->base_offset) / 2;
    assert_int_equal(plog_truncate_to(f->log, cut, &f->ed), 0);
    assert_int_equal(plog_segment_count(f->log), 3);
    assert_true(plog_end_offset(f->log) <= cut);
    assert_true(plog_end_offset(f->log) > s->base_offset);
    assert_true(plog_durable_offset(f->log) == plog_end_offset(f->log));
    assert_int_equal(
        f->ops->exists(f->ops->ctx, plog_fixture_path(plog_fixture_seg(
                                        f->model.start + 1000, ".log"))),
        0);
    log_model_truncate(&f->model, plog_end_offset(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* appends continue at the new end, and survive a clean reopen */
    append_random(f, 30, 1000);
    assert_int_equal(plog_fixture_check(f, 500), 0);
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_false(plog_recovered(f->log));
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* exactly at a segment base: that segment becomes empty and active */
    s = f->log->segs[1];
    cut = s->base_offset;
    assert_int_equal(plog_truncate_to(f->log, cut, &f->ed), 0);
    assert_true(plog_end_offset(f->log) == cut);
    assert_int_equal(plog_segment_count(f->log), 2);
    log_model_truncate(&f->model, cut);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    /* and after an unclean stop too */
    append_random(f, 20, 1000);
    plog_fixture_kill(f);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static void test_truncate_to_bounds(void **state)
{
    struct plog_fixture *f = *state;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    append_random(f, 10, 1000);
    assert_int_equal(
        plog_truncate_to(f->log, plog_end_offset(f->log) + 5, &f->ed), 0);
    assert_true(plog_end_offset(f->log) == log_model_end(&f->model));
    assert_int_equal(plog_truncate_to(f->log, -1, &f->ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    assert_int_equal(plog_truncate_to(f->log, 0, &f->ed), 0);
    assert_true(plog_end_offset(f->log) == 0);
    log_model_truncate(&f->model, 0);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

static int64_t
brute_force_time(const struct log_model *m, int64_t ts, int64_t *found)
{
    size_t i;

    for (i = 0; i < m->n; i++) {
        if (m->v[i].ts >= ts) {
            *found = m->v[i].ts;
            return m->start + (int64_t)i;
        }
    }
    *found = -1;
    return -1;
}

static void check_times(struct plog_fixture *f, int64_t lo, int64_t hi)
{
    int64_t ts;
    int64_t off;
    int64_t got_ts;
    int64_t want_ts;

    for (ts = lo; ts <= hi; ts += 7) {
        assert_int_equal(
            plog_offset_for_time(f->log, ts, &off, &got_ts, &f->ed), 0);
        assert_true(off == brute_force_time(&f->model, ts, &want_ts));
        assert_true(got_ts == want_ts);
    }
}

static void test_offset_for_time_matches_brute_force(void **state)
{
    struct plog_fixture *f = *state;
    int64_t ts = 10000;
    int i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    for (i = 0; i < 300; i++) {
        /* mostly rising, sometimes stepping back, steps within batches of
         * -3..9 ms */
        ts += (int64_t)rnd(40) - 8;
        assert_int_equal(plog_fixture_append(f, 1 + (int32_t)rnd(6), ts,
                                             (int64_t)rnd(13) - 3,
                                             20 + rnd(100), 1000),
                         0);
    }
    assert_true(plog_segment_count(f->log) > 3);
    check_times(f, 9000, ts + 200);
    /* the same after a clean reopen, from the index files */
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    check_times(f, 9000, ts + 200);
}

/* A batch marked compressed is refused whole, codec known or not: the
 * broker cannot check its records (nor could anyone read it back), and
 * nothing of the append is written. */
static void test_compressed_batch_refused(void **state)
{
    struct plog_fixture *f = *state;
    static const uint16_t codecs[] = {BATCH_CODEC_GZIP, 4, 7};
    struct weir_buf b;
    int64_t base;
    int64_t last;
    size_t i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_append(f, 3, 100, 1, 10, 1000), 0);
    for (i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
        buf_init(&b);
        assert_int_equal(batch_gen_make(&b, 9, 4, 200, 10, 10), 0);
        wire_put_u16be(b.data + BATCH_OFF_ATTRIBUTES, codecs[i]);
        wire_put_u32be(b.data + BATCH_OFF_CRC,
                       crc32c(b.data + BATCH_OFF_ATTRIBUTES,
                              b.len - BATCH_OFF_ATTRIBUTES));
        assert_int_equal(
            plog_append(f->log, b.data, b.len, 1, 1000, &base, &last, &f->ed),
            WEIR_EUNSUPPORTED_COMPRESSION);
        assert_non_null(strstr(f->ed.msg, "compression codec"));
        assert_int_equal(plog_end_offset(f->log), 3);
        buf_fini(&b);
    }
}

/* One pass of the OOM sweep: every call may fail for lack of memory, but
 * what succeeded must stay consistent. */
static void oom_scenario(struct plog_fixture *f)
{
    struct plog_read_result r;
    struct weir_buf b;
    int64_t off;
    int64_t ts;
    uint32_t deleted;
    int fails = 0;
    int i;

    if (plog_fixture_open(f, 1000) != 0) {
        return;
    }
    for (i = 0; i < 25; i++) {
        if (plog_fixture_append(f, 1 + i % 3, i, 1, 100, 1000) != 0) {
            break;
        }
    }
    fails += plog_flush(f->log, &f->ed) != 0;
    buf_init(&b);
    if (plog_read(f->log, 3, INT64_MAX, 500, &r, &f->ed) == 0) {
        fails += plog_read_copy(f->log, &r, &b, &f->ed) != 0;
    }
    buf_fini(&b);
    fails += plog_offset_for_time(f->log, 5, &off, &ts, &f->ed) != 0;
    fails += plog_truncate_to(f->log, plog_end_offset(f->log) / 2, &f->ed) != 0;
    log_model_truncate(&f->model, plog_end_offset(f->log));
    fails +=
        plog_enforce_retention(f->log, 1000, INT64_MAX, &deleted, &f->ed) != 0;
    log_model_drop_front(&f->model, plog_start_offset(f->log));
    plog_fixture_close(f);
    fails += plog_fixture_open(f, 1000) != 0;
    /* failures are allowed here, only lack of memory may cause them */
    assert_true(fails == 0 || mem_fault_count() > 0);
}

static void test_out_of_memory_anywhere_is_survivable(void **state)
{
    struct plog_fixture *f = *state;
    unsigned long n;
    unsigned long injected = 1;

    for (n = 1; injected > 0; n++) {
        plog_fixture_fini(f);
        plog_fixture_init(f);
        f->cfg.segment_bytes = 800;
        f->cfg.retention_bytes = 1000;
        mem_fault_set(n, 0);
        oom_scenario(f);
        injected = mem_fault_count();
        mem_fault_set(0, 0);
        if (f->log != NULL) {
            assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
        }
    }
    assert_true(n > 20);
    /* the last pass ran clean: the data is all there */
    assert_non_null(f->log);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
}

/* One append carrying many batches spreads over segments at batch
 * boundaries, as separate appends would; offsets stay dense. */
static void test_multi_batch_append_splits_at_segment_size(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf all;
    int64_t base;
    int64_t last;
    uint32_t i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    buf_init(&all);
    for (i = 0; i < 20; i++) {
        assert_int_equal(batch_gen_make(&all, i, 3, 1000, 1, 300), 0);
    }
    assert_true(all.len > 4 * f->cfg.segment_bytes);
    assert_int_equal(
        plog_append(f->log, all.data, all.len, 0, 1000, &base, &last, &f->ed),
        0);
    assert_true(base == 0);
    assert_true(last == 59);
    assert_true(plog_end_offset(f->log) == 60);
    assert_true(plog_segment_count(f->log) >= 4);
    for (i = 0; i < plog_segment_count(f->log); i++) {
        assert_true(f->log->segs[i]->size <= f->cfg.segment_bytes);
    }
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    buf_fini(&all);
}

/* Every batch of log, in order, as stored. */
static void
read_all(struct plog *log, struct weir_buf *out, struct err_detail *ed)
{
    struct plog_read_result r;
    struct weir_buf part;
    int64_t off = plog_start_offset(log);
    struct batch_header h;
    size_t pos;

    buf_init(&part);
    while (off < plog_end_offset(log)) {
        assert_int_equal(plog_read(log, off, INT64_MAX, 1 << 20, &r, ed), 0);
        assert_true(r.bytes > 0);
        buf_reset(&part);
        assert_int_equal(plog_read_copy(log, &r, &part, ed), 0);
        assert_int_equal(buf_reserve(out, part.len), 0);
        buf_put(out, part.data, part.len);
        for (pos = 0; pos < part.len; pos += batch_size(&h)) {
            assert_int_equal(batch_header_decode(part.data + pos,
                                                 part.len - pos, UINT32_MAX, &h,
                                                 NULL),
                             0);
            off = h.base_offset + h.last_offset_delta + 1;
        }
    }
    buf_fini(&part);
}

static void test_append_replica_keeps_offsets_and_epochs(void **state)
{
    struct plog_fixture *f = *state;
    struct plog *leader = NULL;
    struct weir_buf b;
    struct weir_buf lead_bytes;
    struct weir_buf rep_bytes;
    int64_t base;
    int64_t last;
    size_t pos;
    uint32_t i;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(
        plog_open(f->ops, "/data/leader-0", &f->cfg, 1000, &leader, &f->ed), 0);
    buf_init(&b);
    buf_init(&lead_bytes);
    buf_init(&rep_bytes);
    /* the leader's log spans several segments and three epochs */
    for (i = 0; i < 30; i++) {
        buf_reset(&b);
        assert_int_equal(
            batch_gen_make(&b, i, 1 + (int32_t)rnd(6), 100, 1, 1 + rnd(400)),
            0);
        assert_int_equal(plog_append(leader, b.data, b.len, 3 + (int32_t)i / 10,
                                     1000, &base, &last, &f->ed),
                         0);
    }
    read_all(leader, &lead_bytes, &f->ed);
    /* the follower appends what it fetched in pieces of whole batches */
    pos = 0;
    while (pos < lead_bytes.len) {
        struct batch_header h;
        size_t len = 0;
        uint32_t nb = 1 + rnd(5);

        while (nb-- > 0 && pos + len < lead_bytes.len) {
            assert_int_equal(batch_header_decode(lead_bytes.data + pos + len,
                                                 lead_bytes.len - pos - len,
                                                 UINT32_MAX, &h, NULL),
                             0);
            len += batch_size(&h);
        }
        assert_int_equal(plog_append_replica(f->log, lead_bytes.data + pos, len,
                                             1000, &last, &f->ed),
                         0);
        assert_true(last == plog_end_offset(f->log) - 1);
        pos += len;
    }
    assert_true(plog_end_offset(f->log) == plog_end_offset(leader));
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    read_all(f->log, &rep_bytes, &f->ed);
    assert_true(rep_bytes.len == lead_bytes.len);
    assert_memory_equal(rep_bytes.data, lead_bytes.data, lead_bytes.len);
    /* survives a crash: recovery accepts the replica's log */
    plog_fixture_kill(f);
    assert_int_equal(plog_fixture_open(f, 2000), 0);
    assert_true(plog_end_offset(f->log) <= plog_end_offset(leader));
    plog_close(leader);
    buf_fini(&b);
    buf_fini(&lead_bytes);
    buf_fini(&rep_bytes);
}

static void test_append_replica_refuses_overlaps_and_corruption(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf b;
    size_t l1;
    int64_t last;

    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_int_equal(plog_fixture_append(f, 5, 1, 1, 10, 1000), 0);
    buf_init(&b);
    /* starts below the end offset (5) */
    assert_int_equal(batch_gen_make(&b, 60, 2, 100, 1, 10), 0);
    batch_set_base(b.data, 4, 7);
    assert_int_equal(
        plog_append_replica(f->log, b.data, b.len, 1000, &last, &f->ed),
        WEIR_EOFFSET_OUT_OF_RANGE);
    /* a second batch overlapping the first: nothing of it is written */
    batch_set_base(b.data, 5, 7);
    l1 = b.len;
    assert_int_equal(batch_gen_make(&b, 61, 3, 100, 1, 10), 0);
    batch_set_base(b.data + l1, 6, 7);
    assert_int_equal(
        plog_append_replica(f->log, b.data, b.len, 1000, &last, &f->ed),
        WEIR_EOFFSET_OUT_OF_RANGE);
    assert_true(plog_end_offset(f->log) == 5);
    /* a flipped byte under the CRC */
    batch_set_base(b.data + l1, 7, 7);
    b.data[b.len - 1] ^= 0x5a;
    assert_int_equal(
        plog_append_replica(f->log, b.data, b.len, 1000, &last, &f->ed),
        WEIR_ECORRUPT_MESSAGE);
    assert_true(plog_end_offset(f->log) == 5);
    b.data[b.len - 1] ^= 0x5a;
    assert_int_equal(
        plog_append_replica(f->log, b.data, b.len, 1000, &last, &f->ed), 0);
    assert_true(last == 9 && plog_end_offset(f->log) == 10);
    log_model_add(&f->model, 60, 2, 100, 1);
    log_model_add(&f->model, 61, 3, 100, 1);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    assert_false(f->log->compacted); /* dense: no cleaner checkpoint */
    buf_fini(&b);
}

/* Append what the leader serves in pieces of 1..5 whole batches. */
static void append_in_pieces(struct plog_fixture *f,
                             const struct weir_buf *bytes)
{
    size_t pos = 0;
    int64_t last;

    while (pos < bytes->len) {
        struct batch_header h;
        size_t len = 0;
        uint32_t nb = 1 + rnd(5);

        while (nb-- > 0 && pos + len < bytes->len) {
            assert_int_equal(batch_header_decode(bytes->data + pos + len,
                                                 bytes->len - pos - len,
                                                 UINT32_MAX, &h, NULL),
                             0);
            len += batch_size(&h);
        }
        assert_int_equal(plog_append_replica(f->log, bytes->data + pos, len,
                                             1000, &last, &f->ed),
                         0);
        assert_true(last == plog_end_offset(f->log) - 1);
        pos += len;
    }
}

/* A compacted leader's log skips offsets between batches; a follower
 * (here with cleanup.policy=delete, as after a policy change) copies it
 * as it is, its end moving past each gap, and opens it again after a
 * clean stop and after a crash with a full recovery scan. */
static void test_append_replica_skips_compacted_offsets(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_config lcfg = f->cfg;
    struct plog_compact_stats st;
    struct plog_read_result r;
    struct plog *leader = NULL;
    struct weir_buf b;
    struct weir_buf lead_bytes;
    struct weir_buf rep_bytes;
    struct batch_header h;
    int64_t base;
    int64_t last;
    uint32_t i;

    lcfg.cleanup_policy = PLOG_CLEANUP_COMPACT;
    lcfg.min_cleanable_dirty_ratio = 0.0;
    assert_int_equal(
        plog_open(f->ops, "/data/leader-0", &lcfg, 1000, &leader, &f->ed), 0);
    buf_init(&b);
    buf_init(&lead_bytes);
    buf_init(&rep_bytes);
    for (i = 0; i < 60; i++) { /* keys k0..k5 again and again */
        buf_reset(&b);
        assert_int_equal(
            batch_gen_make(&b, i, 1 + (int32_t)rnd(6), 100, 1, 1 + rnd(200)),
            0);
        assert_int_equal(
            plog_append(leader, b.data, b.len, 3, 1000, &base, &last, &f->ed),
            0);
    }
    assert_int_equal(
        plog_compact(leader, 2000, plog_end_offset(leader), &st, &f->ed), 0);
    assert_true(st.records_removed > 0);
    read_all(leader, &lead_bytes, &f->ed);
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    assert_false(f->log->compacted);
    append_in_pieces(f, &lead_bytes);
    assert_true(f->log->compacted);
    assert_int_equal(
        f->ops->exists(f->ops->ctx,
                       plog_fixture_path("cleaner-offset-checkpoint")),
        1);
    assert_true(plog_end_offset(f->log) == plog_end_offset(leader));
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    read_all(f->log, &rep_bytes, &f->ed);
    assert_true(rep_bytes.len == lead_bytes.len);
    assert_memory_equal(rep_bytes.data, lead_bytes.data, lead_bytes.len);
    /* a read at a removed offset serves the next batch kept */
    assert_int_equal(batch_header_decode(lead_bytes.data, lead_bytes.len,
                                         UINT32_MAX, &h, NULL),
                     0);
    assert_true(h.base_offset > 0);
    assert_int_equal(plog_read(f->log, 0, INT64_MAX, 1 << 20, &r, &f->ed), 0);
    assert_true(r.first_offset == h.base_offset);
    /* clean stop, then a crash after which everything is scanned */
    plog_fixture_close(f);
    assert_int_equal(plog_fixture_open(f, 2000), 0);
    plog_fixture_kill(f);
    assert_int_equal(
        f->ops->unlink(f->ops->ctx,
                       plog_fixture_path("recovery-point-offset-checkpoint"),
                       &f->ed),
        0);
    assert_int_equal(plog_fixture_open(f, 3000), 0);
    assert_true(plog_recovered(f->log));
    assert_true(plog_end_offset(f->log) == plog_end_offset(leader));
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
    buf_reset(&rep_bytes);
    read_all(f->log, &rep_bytes, &f->ed);
    assert_true(rep_bytes.len == lead_bytes.len);
    assert_memory_equal(rep_bytes.data, lead_bytes.data, lead_bytes.len);
    plog_close(leader);
    buf_fini(&b);
    buf_fini(&lead_bytes);
    buf_fini(&rep_bytes);
}

/* max.message.bytes is the producer's limit: the leader accepted the
 * batch, so a follower (here with a smaller limit) copies it. */
static void test_append_replica_ignores_max_message_bytes(void **state)
{
    struct plog_fixture *f = *state;
    struct weir_buf b;
    int64_t base;
    int64_t last;

    f->cfg.max_batch_bytes = 1024;
    assert_int_equal(plog_fixture_open(f, 1000), 0);
    buf_init(&b);
    assert_int_equal(batch_gen_make(&b, 70, 20, 100, 1, 200), 0);
    assert_true(b.len > 4000);
    assert_int_equal(
        plog_append(f->log, b.data, b.len, 3, 1000, &base, &last, &f->ed),
        WEIR_EMESSAGE_TOO_LARGE);
    batch_set_base(b.data, 0, 3);
    assert_int_equal(
        plog_append_replica(f->log, b.data, b.len, 1000, &last, &f->ed), 0);
    assert_true(last == 19);
    log_model_add(&f->model, 70, 20, 100, 1);
    assert_int_equal(plog_fixture_check(f, 1 << 20), 0);
    buf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_multi_batch_append_splits_at_segment_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_log_is_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_append_replica_keeps_offsets_and_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_append_replica_refuses_overlaps_and_corruption, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_append_replica_skips_compacted_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_append_replica_ignores_max_message_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_many_batches_and_rolls,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_read_finds_batch_of_every_offset_via_index, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_read_stops_at_max_offset_bytes_and_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_refuses_invalid_batches,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_append_assigns_offsets_and_epoch_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full_leaves_log_unchanged,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_advances_durable_offset,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_failure_takes_log_offline,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_close_skips_recovery, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rolls_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_roll_by_size_keeps_big_append_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_truncate_to_removes_batches_and_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_to_bounds, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_offset_for_time_matches_brute_force, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compressed_batch_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_out_of_memory_anywhere_is_survivable, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
