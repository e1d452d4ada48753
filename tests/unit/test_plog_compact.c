/* SPDX-License-Identifier: Apache-2.0 */
/* Log compaction: last record per key with its offset and timestamp, null
 * keys kept, tombstones kept then dropped, the active segment untouched,
 * reads at compacted offsets, crash safety of the segment swap, configs,
 * idempotent producer fields. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"
#include "broker/storage/plog_int.h"
#include "tests/lib/plog_fixture.h"

#define T0   1000000LL
#define HOUR (3600LL * 1000)
#define MAXR 512

/* One record as read back. */
struct rec {
    int64_t offset;
    int64_t ts;
    char key[16]; /* "" with key_null */
    bool key_null;
    bool value_null;
    char value[16];
};

struct recs {
    struct rec r[MAXR];
    uint32_t n;
};

static int setup(void **state)
{
    static struct plog_fixture f;

    plog_fixture_init(&f);
    f.cfg.segment_bytes = 400;
    f.cfg.index_interval_bytes = 100;
    f.cfg.cleanup_policy = PLOG_CLEANUP_COMPACT;
    f.cfg.min_cleanable_dirty_ratio = 0.0;
    f.cfg.delete_retention_ms = HOUR;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    plog_fixture_fini(*state);
    return 0;
}

/* Append one batch of n records: keys[i] (NULL = null key), values[i]
 * (NULL = tombstone), timestamps ts + i. */
static int64_t append_batch(struct plog_fixture *f,
                            const char *const *keys,
                            const char *const *values,
                            int n,
                            int64_t ts,
                            int64_t pid,
                            int16_t epoch,
                            int32_t seq)
{
    struct batch_builder bb;
    struct weir_slice out;
    int64_t base;
    int64_t last;
    int i;

    batch_builder_init(&bb);
    bb.producer_id = pid;
    bb.producer_epoch = epoch;
    bb.base_sequence = seq;
    for (i = 0; i < n; i++) {
        assert_int_equal(batch_builder_add(
                             &bb, ts + i, keys[i],
                             keys[i] ? (int32_t)strlen(keys[i]) : -1, values[i],
                             values[i] ? (int32_t)strlen(values[i]) : -1, NULL,
                             0),
                         0);
    }
    assert_int_equal(batch_builder_finish(&bb, &out), 0);
    assert_int_equal(plog_append(f->log, (uint8_t *)out.p, out.len, 0, ts,
                                 &base, &last, &f->ed),
                     0);
    batch_builder_fini(&bb);
    return base;
}

static int64_t
put(struct plog_fixture *f, const char *key, const char *value, int64_t ts)
{
    return append_batch(f, &key, &value, 1, ts, -1, -1, -1);
}

static void roll(struct plog_fixture *f, int64_t wall_ms)
{
    assert_int_equal(plog_roll(f->log, wall_ms, &f->ed), 0);
}

/* Every record from `from` to the end, read the way a fetch does. */
static void read_all(struct plog_fixture *f, int64_t from, struct recs *out)
{
    int64_t off = from;
    struct weir_buf b;

    out->n = 0;
    buf_init(&b);
    while (off < plog_end_offset(f->log)) {
        struct plog_read_result rr;
        struct batch_header h;
        struct weir_slice whole;
        size_t pos = 0;
        assert_int_equal(
            plog_read(f->log, off, plog_end_offset(f->log), 1000, &rr, &f->ed),
            0);
        assert_true(rr.bytes > 0);
        assert_true(rr.first_offset >= off ||
                    rr.first_offset + 1000 > off); /* holds off or later */
        buf_reset(&b);
        assert_int_equal(plog_read_copy(f->log, &rr, &b, &f->ed), 0);
        for (;;) {
            struct batch_iter it;
            struct batch_record r;
            assert_int_equal(batch_next(buf_slice(&b), &pos, UINT32_MAX, false,
                                        &h, &whole, &f->ed),
                             0);
            if (whole.len == 0) {
                break;
            }
            assert_int_equal(batch_iter_init(&it, whole, &f->ed), 0);
            while (batch_iter_next(&it, &r) == 1) {
                struct rec *o;
                if (r.offset < off) {
                    continue;
                }
                assert_true(out->n < MAXR);
                o = &out->r[out->n++];
                memset(o, 0, sizeof(*o));
                o->offset = r.offset;
                o->ts = r.timestamp;
                o->key_null = r.key_null;
                if (r.key.len > 0) {
                    memcpy(o->key, r.key.p, r.key.len);
                }
                o->value_null = r.value_null;
                if (r.value.len > 0) {
                    memcpy(o->value, r.value.p, r.value.len);
                }
            }
            off = batch_last_offset(&h) + 1;
        }
    }
    buf_fini(&b);
    assert_int_equal(plog_check_invariants(f->log, &f->ed), 0);
}

static const struct rec *find(const struct recs *rs, int64_t offset)
{
    uint32_t i;

    for (i = 0; i < rs->n; i++) {
        if (rs->r[i].offset == offset) {
            return &rs->r[i];
        }
    }
    return NULL;
}

/* 8 rounds of keys k0..k3 (value "r<round>"), rolled into closed
 * segments, then 2 more records in the active segment. */
static int64_t fill(struct plog_fixture *f)
{
    char key[8];
    char val[8];
    int round;
    int k;

    assert_int_equal(plog_fixture_open(f, T0), 0);
    for (round = 0; round < 8; round++) {
        for (k = 0; k < 4; k++) {
            snprintf(key, sizeof(key), "k%d", k);
            snprintf(val, sizeof(val), "r%d", round);
            (void)put(f, key, val, T0 + round * 10 + k);
        }
    }
    roll(f, T0 + 100);
    (void)put(f, "k0", "act", T0 + 200);
    (void)put(f, "k1", "act", T0 + 201);
    return plog_segment_count(f->log);
}

static void compact(struct plog_fixture *f, int64_t wall_ms)
{
    struct plog_compact_stats st;

    assert_int_equal(
        plog_compact(f->log, wall_ms, plog_end_offset(f->log), &st, &f->ed), 0);
}

static void check_latest_only(const struct recs *rs)
{
    int k;

    /* keys k0..k3 of round 7 sit at offsets 28..31, the active 32, 33 */
    assert_int_equal(rs->n, 6);
    for (k = 0; k < 4; k++) {
        const struct rec *r = find(rs, 28 + k);
        assert_non_null(r);
        assert_string_equal(r->value, "r7");
        assert_int_equal(r->ts, T0 + 70 + k);
    }
    assert_string_equal(find(rs, 32)->value, "act");
    assert_string_equal(find(rs, 33)->value, "act");
}

static void test_compact_keeps_latest_per_key(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_compact_stats st;
    struct recs rs;
    uint64_t before;

    assert_true(fill(f) > 3);
    before = plog_size_bytes(f->log);
    assert_true(plog_compact_needed(f->log, T0 + 300, INT64_MAX));
    assert_int_equal(plog_compact(f->log, T0 + 300, INT64_MAX, &st, &f->ed), 0);
    assert_true(st.segments > 0);
    assert_int_equal(st.records_removed, 28);
    assert_true(plog_size_bytes(f->log) < before);
    assert_int_equal(plog_start_offset(f->log), 0);
    read_all(f, 0, &rs);
    check_latest_only(&rs);
    /* nothing dirty any more */
    assert_false(plog_compact_needed(f->log, T0 + 400, INT64_MAX));
}

static void test_compact_read_at_removed_offset(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_read_result rr;
    struct recs rs;

    fill(f);
    compact(f, T0 + 300);
    /* offset 5 is gone: the read returns the next record kept, 28 */
    assert_int_equal(
        plog_read(f->log, 5, plog_end_offset(f->log), 1 << 20, &rr, &f->ed), 0);
    assert_int_equal(rr.first_offset, 28);
    read_all(f, 5, &rs);
    assert_int_equal(rs.n, 6);
    assert_int_equal(rs.r[0].offset, 28);
    /* the high watermark below the next kept record: nothing yet */
    assert_int_equal(plog_read(f->log, 5, 20, 1 << 20, &rr, &f->ed), 0);
    assert_int_equal(rr.bytes, 0);
}

static void test_compact_active_untouched(void **state)
{
    struct plog_fixture *f = *state;
    struct seg *act;
    uint64_t size;

    fill(f);
    act = plog_active(f->log);
    size = act->size;
    compact(f, T0 + 300);
    assert_ptr_equal(plog_active(f->log), act);
    assert_int_equal(act->size, size);
    assert_int_equal(plog_end_offset(f->log), 34);
}

static void test_compact_null_keys_kept(void **state)
{
    struct plog_fixture *f = *state;
    struct recs rs;

    assert_int_equal(plog_fixture_open(f, T0), 0);
    (void)put(f, NULL, "n1", T0);
    (void)put(f, "a", "1", T0 + 1);
    (void)put(f, NULL, "n2", T0 + 2);
    (void)put(f, "a", "2", T0 + 3);
    roll(f, T0 + 10);
    compact(f, T0 + 20);
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 3);
    assert_true(rs.r[0].key_null);
    assert_int_equal(rs.r[0].offset, 0);
    assert_true(rs.r[1].key_null);
    assert_int_equal(rs.r[1].offset, 2);
    assert_string_equal(rs.r[2].value, "2");
}

static void test_compact_tombstones(void **state)
{
    struct plog_fixture *f = *state;
    struct recs rs;

    assert_int_equal(plog_fixture_open(f, T0), 0);
    (void)put(f, "a", "1", T0);
    (void)put(f, "b", "1", T0 + 1);
    (void)put(f, "a", NULL, T0 + 2); /* tombstone, offset 2 */
    roll(f, T0 + 10);
    compact(f, T0 + 100); /* enters the cleaned part now */
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 2);
    assert_true(rs.r[1].value_null);
    /* more dirty data; the tombstone is kept within delete.retention.ms */
    (void)put(f, "c", "1", T0 + 200);
    roll(f, T0 + 210);
    compact(f, T0 + 100 + HOUR - 1);
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 3);
    assert_non_null(find(&rs, 2));
    /* and dropped once it has been cleaned for longer */
    (void)put(f, "d", "1", T0 + 300);
    roll(f, T0 + 310);
    compact(f, T0 + 100 + HOUR);
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 3);
    assert_null(find(&rs, 2));
    assert_string_equal(find(&rs, 1)->key, "b");
}

static void test_compact_reopen_reads_same(void **state)
{
    struct plog_fixture *f = *state;
    struct recs rs;

    fill(f);
    compact(f, T0 + 300);
    plog_fixture_close(f); /* clean */
    assert_int_equal(plog_fixture_open(f, T0 + 400), 0);
    assert_false(plog_recovered(f->log));
    read_all(f, 0, &rs);
    check_latest_only(&rs);
    plog_fixture_kill(f); /* unclean: full recovery scan */
    f->ops->unlink(f->ops->ctx, plog_fixture_path(PLOG_RECOVERY_CHECKPOINT),
                   &f->ed);
    assert_int_equal(plog_fixture_open(f, T0 + 500), 0);
    assert_true(plog_recovered(f->log));
    read_all(f, 0, &rs);
    check_latest_only(&rs);
    /* appends continue after the compacted part */
    assert_int_equal(put(f, "k2", "new", T0 + 600), 34);
}

/* Every record read must be one that was written at that offset (values
 * say the round), no offset twice, and the latest of every key present. */
static void check_after_crash(const struct recs *rs)
{
    uint32_t i;
    int k;

    for (i = 0; i < rs->n; i++) {
        const struct rec *r = &rs->r[i];
        char want[8];
        if (i > 0) {
            assert_true(r->offset > rs->r[i - 1].offset);
        }
        if (r->offset < 32) {
            snprintf(want, sizeof(want), "r%d", (int)(r->offset / 4));
            assert_string_equal(r->value, want);
        }
    }
    for (k = 0; k < 4; k++) {
        assert_non_null(find(rs, 28 + k));
    }
    assert_non_null(find(rs, 32));
    assert_non_null(find(rs, 33));
}

static void test_compact_crash_at_every_step(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_compact_stats st;
    unsigned long nth;
    bool done = false;
    struct recs rs;

    for (nth = 1; !done && nth < 2000; nth++) {
        struct plog_config cfg = f->cfg;
        plog_fixture_fini(f);
        plog_fixture_init(f);
        f->cfg = cfg;
        fill(f);
        assert_int_equal(plog_flush(f->log, &f->ed), 0);
        mem_storage_fail(f->ms, MEM_OP_ANY, nth, EIO, 0, true);
        done = plog_compact(f->log, T0 + 300, INT64_MAX, &st, &f->ed) == 0;
        mem_storage_fail_clear(f->ms);
        plog_fixture_kill(f);
        mem_storage_crash(f->ms);
        assert_int_equal(plog_fixture_open(f, T0 + 400), 0);
        read_all(f, 0, &rs);
        check_after_crash(&rs);
        if (done) {
            check_latest_only(&rs);
        }
        /* the next pass finishes the job */
        compact(f, T0 + 500);
        read_all(f, 0, &rs);
        check_latest_only(&rs);
    }
    assert_true(done);
    assert_true(nth > 10);
}

static void test_compact_leftover_cleaned_file_discarded(void **state)
{
    struct plog_fixture *f = *state;
    const char *junk = "half a segment";
    char name[64];
    struct recs rs;

    fill(f);
    plog_fixture_close(f);
    snprintf(name, sizeof(name), "%s.cleaned", plog_fixture_seg(0, ".log"));
    assert_int_equal(mem_storage_write_raw(f->ms, plog_fixture_path(name), 0,
                                           junk, strlen(junk)),
                     -1); /* not there yet: create it through the ops */
    {
        struct storage_file *file;
        assert_int_equal(f->ops->open(f->ops->ctx, plog_fixture_path(name),
                                      true, &file, &f->ed),
                         0);
        assert_int_equal(
            f->ops->pwrite(f->ops->ctx, file, junk, strlen(junk), 0, &f->ed),
            0);
        f->ops->close(f->ops->ctx, file);
    }
    assert_int_equal(plog_fixture_open(f, T0 + 400), 0);
    assert_int_equal(f->ops->exists(f->ops->ctx, plog_fixture_path(name)), 0);
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 34);
}

static void test_compact_idempotent_fields_kept(void **state)
{
    struct plog_fixture *f = *state;
    const char *keys[4] = {"a", "b", "a", "c"};
    const char *vals[4] = {"1", "1", "2", "1"};
    struct recs rs;
    struct plog_read_result rr;
    struct weir_buf b;
    struct batch_header h;
    struct weir_slice whole;
    size_t pos = 0;
    int n = 0;

    assert_int_equal(plog_fixture_open(f, T0), 0);
    /* offsets 0..3: pid 7 epoch 3 sequences 100..103 */
    (void)append_batch(f, keys, vals, 4, T0, 7, 3, 100);
    (void)put(f, "c", "2", T0 + 10); /* supersedes offset 3 */
    (void)put(f, "b", "2", T0 + 11); /* supersedes offset 1 */
    roll(f, T0 + 20);
    compact(f, T0 + 30);
    read_all(f, 0, &rs);
    /* 0 (a=1) and 1 (b=1) go; 2 (a=2) stays; 3 (c=1) stays as the
     * producer's last record of its batch */
    assert_null(find(&rs, 0));
    assert_null(find(&rs, 1));
    assert_non_null(find(&rs, 2));
    assert_non_null(find(&rs, 3));
    assert_int_equal(
        plog_read(f->log, 0, plog_end_offset(f->log), 1 << 20, &rr, &f->ed), 0);
    buf_init(&b);
    assert_int_equal(plog_read_copy(f->log, &rr, &b, &f->ed), 0);
    assert_int_equal(
        batch_next(buf_slice(&b), &pos, UINT32_MAX, false, &h, &whole, &f->ed),
        0);
    n++;
    assert_int_equal(h.base_offset, 2);
    assert_int_equal(batch_last_offset(&h), 3);
    assert_int_equal(h.producer_id, 7);
    assert_int_equal(h.producer_epoch, 3);
    assert_int_equal(h.base_sequence, 102);
    assert_int_equal(h.base_timestamp, T0);
    assert_int_equal(h.max_timestamp, T0 + 3);
    buf_fini(&b);
    assert_int_equal(n, 1);
}

static void test_compact_policy_and_lag(void **state)
{
    struct plog_fixture *f = *state;
    uint32_t deleted;

    /* delete only: nothing to compact */
    f->cfg.cleanup_policy = PLOG_CLEANUP_DELETE;
    fill(f);
    assert_false(plog_compact_needed(f->log, T0 + 300, INT64_MAX));
    /* compact only: retention deletes nothing */
    f->cfg.cleanup_policy = PLOG_CLEANUP_COMPACT;
    f->cfg.retention_ms = 1;
    plog_set_config(f->log, &f->cfg);
    assert_int_equal(plog_enforce_retention(f->log, T0 + 10 * HOUR, INT64_MAX,
                                            &deleted, &f->ed),
                     0);
    assert_int_equal(deleted, 0);
    /* lag: records younger than it are not cleanable yet */
    f->cfg.min_compaction_lag_ms = HOUR;
    plog_set_config(f->log, &f->cfg);
    assert_false(plog_compact_needed(f->log, T0 + 300, INT64_MAX));
    assert_true(plog_compact_needed(f->log, T0 + 2 * HOUR, INT64_MAX));
    /* ratio: 1.0 needs everything dirty - true before the first pass */
    f->cfg.min_compaction_lag_ms = 0;
    f->cfg.min_cleanable_dirty_ratio = 1.0;
    plog_set_config(f->log, &f->cfg);
    assert_true(plog_compact_needed(f->log, T0 + 300, INT64_MAX));
    compact(f, T0 + 300);
    (void)put(f, "k3", "x", T0 + 400);
    roll(f, T0 + 410);
    assert_false(plog_compact_needed(f->log, T0 + 500, INT64_MAX));
}

/* A record that is not committed yet never decides that an older one
 * goes: k=old committed (below the high watermark), k=new above it in a
 * closed segment. A failover may cut k=new; k=old must still be there. */
static void test_compact_stops_at_high_watermark(void **state)
{
    struct plog_fixture *f = *state;
    struct plog_compact_stats st;
    struct recs rs;
    int64_t hw;

    assert_int_equal(plog_fixture_open(f, T0), 0);
    (void)put(f, "k", "old", T0);
    (void)put(f, "a", "1", T0 + 1);
    (void)put(f, "a", "2", T0 + 2); /* supersedes a=1, both committed */
    roll(f, T0 + 10);
    hw = plog_end_offset(f->log); /* 3: the first segment is committed */
    (void)put(f, "k", "new", T0 + 20);
    (void)put(f, "b", "1", T0 + 21);
    roll(f, T0 + 30);
    (void)put(f, "c", "1", T0 + 40); /* active */
    assert_true(plog_compact_needed(f->log, T0 + 50, hw));
    assert_int_equal(plog_compact(f->log, T0 + 50, hw, &st, &f->ed), 0);
    assert_int_equal(st.records_removed, 1); /* a=1 only */
    read_all(f, 0, &rs);
    assert_int_equal(rs.n, 5);
    assert_string_equal(find(&rs, 0)->value, "old");
    assert_null(find(&rs, 1));
    assert_string_equal(find(&rs, 3)->value, "new");
    /* the cleaned part is the committed one: nothing more to do there */
    assert_false(plog_compact_needed(f->log, T0 + 60, hw));
    /* the high watermark inside the second segment: still untouched */
    assert_false(plog_compact_needed(f->log, T0 + 60, hw + 1));
    /* once k=new is committed, k=old goes */
    hw = plog_active(f->log)->base_offset;
    assert_int_equal(plog_compact(f->log, T0 + 70, hw, &st, &f->ed), 0);
    assert_int_equal(st.records_removed, 1);
    read_all(f, 0, &rs);
    assert_null(find(&rs, 0));
    assert_string_equal(find(&rs, 3)->value, "new");
    /* a follower that has no high watermark yet (-1) cleans nothing */
    assert_false(plog_compact_needed(f->log, T0 + 80, -1));
}

static void test_compact_config_validation(void **state)
{
    struct plog_config d;
    struct plog_config out;
    struct err_detail ed;
    static const struct {
        struct logmgr_kv kv;
        int ok;
    } cases[] = {
        {{"cleanup.policy", "compact"}, 1},
        {{"cleanup.policy", "compact,delete"}, 1},
        {{"cleanup.policy", "delete,compact"}, 1},
        {{"cleanup.policy", "delete"}, 1},
        {{"cleanup.policy", "compact, delete"}, 0},
        {{"cleanup.policy", ""}, 0},
        {{"cleanup.policy", "compact,compact"}, 0},
        {{"delete.retention.ms", "0"}, 1},
        {{"delete.retention.ms", "-1"}, 0},
        {{"delete.retention.ms", "1h"}, 0},
        {{"min.compaction.lag.ms", "60000"}, 1},
        {{"min.compaction.lag.ms", "-5"}, 0},
        {{"min.cleanable.dirty.ratio", "0.25"}, 1},
        {{"min.cleanable.dirty.ratio", "1"}, 1},
        {{"min.cleanable.dirty.ratio", "0"}, 1},
        {{"min.cleanable.dirty.ratio", "1.5"}, 0},
        {{"min.cleanable.dirty.ratio", "-0.1"}, 0},
        {{"min.cleanable.dirty.ratio", "nan"}, 0},
        {{"min.cleanable.dirty.ratio", ""}, 0},
        {{"min.cleanable.dirty.ratio", "0.5x"}, 0},
    };
    size_t i;

    (void)state;
    plog_config_defaults(&d);
    assert_int_equal(d.cleanup_policy, PLOG_CLEANUP_DELETE);
    assert_int_equal(d.delete_retention_ms, 86400000);
    assert_int_equal(d.min_compaction_lag_ms, 0);
    assert_true(d.min_cleanable_dirty_ratio == 0.5);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rv = logmgr_parse_topic_config(&d, &cases[i].kv, 1, &out, &ed);
        if (cases[i].ok) {
            assert_int_equal(rv, 0);
        } else {
            assert_int_equal(rv, WEIR_EINVALID_CONFIG);
            assert_non_null(strstr(ed.msg, cases[i].kv.key));
        }
    }
    assert_int_equal(logmgr_parse_topic_config(&d, &cases[1].kv, 1, &out, &ed),
                     0);
    assert_int_equal(out.cleanup_policy,
                     PLOG_CLEANUP_COMPACT | PLOG_CLEANUP_DELETE);
    assert_int_equal(logmgr_parse_topic_config(&d, &cases[12].kv, 1, &out, &ed),
                     0);
    assert_true(out.min_cleanable_dirty_ratio == 0.25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compact_keeps_latest_per_key,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_read_at_removed_offset,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_active_untouched, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_null_keys_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_tombstones, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_reopen_reads_same, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_crash_at_every_step, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_compact_leftover_cleaned_file_discarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_idempotent_fields_kept,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_policy_and_lag, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_stops_at_high_watermark,
                                        setup, teardown),
        cmocka_unit_test(test_compact_config_validation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
