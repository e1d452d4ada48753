/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotent producer state core: duplicates of each of the last five
 * batches, the sixth forgotten, gaps, epoch fencing and bumps, payloads of
 * several batches, sequence wrap, expiry, rebuild equal to live state, and
 * running out of memory. Headers only: the core never sees record bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/idem/idem_core.h"
#include "common/mem.h"

#define FX_MAX_LOG 4096

/* A partition as the broker would run it: check, then "append" (offsets
 * assigned densely) and record; every written header kept, with its
 * offset, for replays. */
struct fx {
    struct idem *s;
    int64_t end; /* next offset */
    struct batch_header log[FX_MAX_LOG];
    size_t n_log;
    struct err_detail ed;
};

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof(f));
    if (idem_new(&f.s) != 0) {
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    idem_free(f->s);
    return 0;
}

static struct batch_header
hdr(int64_t pid, int16_t epoch, int32_t seq, int32_t count, int64_t ts)
{
    struct batch_header h;

    memset(&h, 0, sizeof(h));
    h.base_offset = -1;
    h.magic = BATCH_MAGIC;
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.last_offset_delta = count - 1;
    h.record_count = count;
    h.base_timestamp = ts;
    h.max_timestamp = ts;
    return h;
}

/* Check a payload; append and record it when the verdict says so. */
static struct idem_check_result
produce(struct fx *f, const struct batch_header *hs, size_t n)
{
    struct idem_check_result r;
    size_t i;

    assert_int_equal(idem_check(f->s, hs, n, &r, &f->ed), 0);
    if (r.verdict == IDEM_VERDICT_APPEND) {
        idem_record(f->s, hs, n, f->end);
        for (i = 0; i < n; i++) {
            assert_true(f->n_log < FX_MAX_LOG);
            f->log[f->n_log] = hs[i];
            f->log[f->n_log].base_offset = f->end;
            f->n_log++;
            f->end += (int64_t)hs[i].last_offset_delta + 1;
        }
    }
    assert_int_equal(idem_check_invariants(f->s, &f->ed), 0);
    return r;
}

static struct idem_check_result produce1(struct fx *f, struct batch_header h)
{
    return produce(f, &h, 1);
}

static void expect_append(struct idem_check_result r)
{
    assert_int_equal(r.verdict, IDEM_VERDICT_APPEND);
}

static void expect_refuse(struct idem_check_result r, int code)
{
    assert_int_equal(r.verdict, IDEM_VERDICT_REFUSE);
    assert_int_equal(r.code, code);
}

static void expect_dup(struct idem_check_result r, int64_t base, int64_t last)
{
    assert_int_equal(r.verdict, IDEM_VERDICT_DUPLICATE);
    assert_int_equal(r.base_offset, base);
    assert_int_equal(r.last_offset, last);
}

static void test_plain_batches_bypass(void **state)
{
    struct fx *f = *state;
    struct idem_check_result r = produce1(f, hdr(-1, -1, -1, 4, 1000));

    expect_append(r);
    assert_int_equal(r.n_idempotent, 0);
    expect_append(produce1(f, hdr(-1, -1, -1, 4, 1000)));
    assert_int_equal(idem_count(f->s), 0);
}

static void test_new_producer_starts_at_zero(void **state)
{
    struct fx *f = *state;
    const struct idem_producer *p;

    expect_refuse(produce1(f, hdr(7, 0, 3, 1, 1000)),
                  WEIR_EUNKNOWN_PRODUCER_ID);
    assert_non_null(strstr(f->ed.msg, "unknown"));
    expect_append(produce1(f, hdr(7, 0, 0, 3, 1000)));
    p = idem_find(f->s, 7);
    assert_non_null(p);
    assert_int_equal(p->epoch, 0);
    assert_int_equal(p->n_batches, 1);
    assert_int_equal(p->batches[0].first_seq, 0);
    assert_int_equal(p->batches[0].last_seq, 2);
    assert_int_equal(p->batches[0].base_offset, 0);
    assert_int_equal(p->batches[0].last_offset, 2);
    assert_null(idem_find(f->s, 8));
    assert_null(idem_find(f->s, -1));
}

/* Seven batches of three records: seq 3k..3k+2 at offsets 3k..3k+2. */
static void write_seven(struct fx *f)
{
    int32_t k;

    for (k = 0; k < 7; k++) {
        expect_append(produce1(f, hdr(1, 0, 3 * k, 3, 1000 + k)));
    }
}

static void test_each_of_last_five_is_a_duplicate(void **state)
{
    struct fx *f = *state;
    int32_t k;

    write_seven(f);
    for (k = 2; k < 7; k++) {
        expect_dup(produce1(f, hdr(1, 0, 3 * k, 3, 1000 + k)), 3 * k,
                   3 * k + 2);
    }
    assert_int_equal(f->end, 21); /* nothing appended */
    assert_int_equal(idem_find(f->s, 1)->n_batches, IDEM_MAX_BATCHES);
    expect_append(produce1(f, hdr(1, 0, 21, 1, 2000)));
}

static void test_sixth_oldest_is_forgotten(void **state)
{
    struct fx *f = *state;

    write_seven(f);
    /* batches 0 and 1 fell out of the window */
    expect_refuse(produce1(f, hdr(1, 0, 3, 3, 1001)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_non_null(strstr(f->ed.msg, "older than the last 5"));
    expect_refuse(produce1(f, hdr(1, 0, 0, 3, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_int_equal(f->end, 21);
}

static void test_gap_is_out_of_order(void **state)
{
    struct fx *f = *state;

    expect_append(produce1(f, hdr(1, 0, 0, 2, 1000)));
    expect_refuse(produce1(f, hdr(1, 0, 3, 1, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_non_null(strstr(f->ed.msg, "expected sequence 2"));
    /* a retry that overlaps but is not the same batch is no duplicate */
    expect_refuse(produce1(f, hdr(1, 0, 0, 1, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    expect_refuse(produce1(f, hdr(1, 0, 1, 1, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_int_equal(f->end, 2);
    expect_append(produce1(f, hdr(1, 0, 2, 1, 1000)));
}

static void test_older_epoch_is_fenced(void **state)
{
    struct fx *f = *state;

    expect_append(produce1(f, hdr(1, 0, 0, 1, 1000)));
    expect_append(produce1(f, hdr(1, 1, 0, 1, 1000)));
    /* even a retry of a batch it wrote: the old epoch is fenced */
    expect_refuse(produce1(f, hdr(1, 0, 0, 1, 1000)),
                  WEIR_EINVALID_PRODUCER_EPOCH);
    assert_non_null(strstr(f->ed.msg, "fenced"));
    expect_refuse(produce1(f, hdr(1, 0, 1, 1, 1000)),
                  WEIR_EINVALID_PRODUCER_EPOCH);
    assert_int_equal(f->end, 2);
}

static void test_newer_epoch_restarts_at_zero(void **state)
{
    struct fx *f = *state;
    const struct idem_producer *p;

    expect_append(produce1(f, hdr(1, 0, 0, 5, 1000)));
    expect_append(produce1(f, hdr(1, 0, 5, 5, 1000)));
    expect_refuse(produce1(f, hdr(1, 3, 10, 1, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_non_null(strstr(f->ed.msg, "new epoch 3 must start"));
    expect_append(produce1(f, hdr(1, 3, 0, 2, 1000)));
    p = idem_find(f->s, 1);
    assert_int_equal(p->epoch, 3);
    assert_int_equal(p->n_batches, 1); /* the old epoch's are forgotten */
    expect_dup(produce1(f, hdr(1, 3, 0, 2, 1000)), 10, 11);
}

/* The client's epoch bump after a batch failed for good (KIP-360, done
 * locally): the batches behind it, renumbered from 0 under the next
 * epoch, are written; the failed batch or any other old-epoch batch that
 * arrives late (a request still travelling) is fenced, never written
 * after them; and a rebuild from the log keeps the bumped epoch, so the
 * fence holds across a restart. */
static void test_epoch_bump_after_a_failed_batch(void **state)
{
    struct fx *f = *state;
    struct idem *rebuilt;
    size_t i;

    expect_append(produce1(f, hdr(4, 0, 0, 2, 1000)));
    expect_append(produce1(f, hdr(4, 0, 2, 2, 1000)));
    /* sequence 4.. failed for good (never written); 6.. renumbered */
    expect_append(produce1(f, hdr(4, 1, 0, 2, 1000)));
    expect_append(produce1(f, hdr(4, 1, 2, 3, 1000)));
    expect_refuse(produce1(f, hdr(4, 0, 4, 2, 1000)),
                  WEIR_EINVALID_PRODUCER_EPOCH);
    expect_refuse(produce1(f, hdr(4, 0, 6, 1, 1000)),
                  WEIR_EINVALID_PRODUCER_EPOCH);
    /* a retry of a renumbered batch is still recognised */
    expect_dup(produce1(f, hdr(4, 1, 0, 2, 1000)), 4, 5);
    assert_int_equal(f->end, 9);
    assert_int_equal(idem_new(&rebuilt), 0);
    for (i = 0; i < f->n_log; i++) {
        assert_int_equal(idem_replay(rebuilt, &f->log[i]), 0);
    }
    assert_int_equal(idem_find(rebuilt, 4)->epoch, 1);
    assert_true(idem_equal(f->s, rebuilt));
    idem_free(rebuilt);
    expect_refuse(produce1(f, hdr(4, 0, 4, 2, 1000)),
                  WEIR_EINVALID_PRODUCER_EPOCH);
}

static void test_payload_of_several_batches(void **state)
{
    struct fx *f = *state;
    struct batch_header three[3] = {
        hdr(1, 0, 0, 2, 1000), hdr(1, 0, 2, 3, 1000), hdr(1, 0, 5, 1, 1000)};
    struct batch_header mixed[2] = {hdr(1, 0, 5, 1, 1000),
                                    hdr(1, 0, 6, 1, 1000)};
    struct batch_header gap[2] = {hdr(1, 0, 6, 1, 1000), hdr(1, 0, 8, 1, 1000)};
    struct batch_header two[2] = {hdr(2, 0, 0, 1, 1000), hdr(1, 0, 6, 1, 1000)};

    expect_append(produce(f, three, 3));
    assert_int_equal(idem_find(f->s, 1)->batches[1].base_offset, 2);
    assert_int_equal(idem_find(f->s, 1)->batches[2].base_offset, 5);
    expect_dup(produce(f, three, 3), 0, 5);     /* the whole retry */
    expect_dup(produce(f, three + 1, 2), 2, 5); /* its tail */
    expect_refuse(produce(f, mixed, 2), WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(f->ed.msg, "on their own"));
    expect_refuse(produce(f, gap, 2), WEIR_EOUT_OF_ORDER_SEQUENCE);
    assert_int_equal(f->end, 6);
    expect_append(produce(f, two, 2)); /* two producers in one payload */
    assert_int_equal(idem_count(f->s), 2);
    assert_int_equal(idem_find(f->s, 2)->batches[0].base_offset, 6);
    assert_int_equal(idem_find(f->s, 1)->batches[3].base_offset, 7);
}

static void test_duplicates_written_apart_are_refused(void **state)
{
    struct fx *f = *state;
    struct batch_header both[2] = {hdr(1, 0, 0, 1, 1000),
                                   hdr(1, 0, 1, 1, 1000)};
    struct batch_header dup_and_plain[2] = {hdr(1, 0, 0, 1, 1000),
                                            hdr(-1, -1, -1, 1, 1000)};

    expect_append(produce1(f, both[0]));
    expect_append(produce1(f, hdr(-1, -1, -1, 1, 1000)));
    expect_append(produce1(f, both[1]));
    expect_refuse(produce(f, both, 2), WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(f->ed.msg, "not together"));
    expect_refuse(produce(f, dup_and_plain, 2), WEIR_EINVALID_REQUEST);
    expect_dup(produce1(f, both[1]), 2, 2);
}

static void test_bad_fields_are_refused(void **state)
{
    struct fx *f = *state;
    struct batch_header many[IDEM_MAX_BATCHES * 2];
    int i;

    expect_refuse(produce1(f, hdr(1, -1, 0, 1, 1000)), WEIR_EINVALID_REQUEST);
    expect_refuse(produce1(f, hdr(1, 0, -5, 1, 1000)), WEIR_EINVALID_REQUEST);
    for (i = 0; i < IDEM_MAX_BATCHES * 2; i++) {
        many[i] = hdr(100 + i, 0, 0, 1, 1000);
    }
    expect_refuse(produce(f, many, IDEM_MAX_BATCHES * 2),
                  WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(f->ed.msg, "producers in one"));
    assert_int_equal(idem_count(f->s), 0);
}

static void test_sequence_wraps_at_int32_max(void **state)
{
    struct fx *f = *state;

    assert_int_equal(idem_seq_add(5, 3), 8);
    assert_int_equal(idem_seq_add(INT32_MAX, 1), 0);
    assert_int_equal(idem_seq_add(INT32_MAX - 1, 3), 1);
    assert_int_equal(idem_seq_add(INT32_MAX, 0), INT32_MAX);
    /* one huge batch brings the sequence near the top */
    expect_append(produce1(f, hdr(1, 0, 0, INT32_MAX - 1, 1000)));
    assert_int_equal(idem_find(f->s, 1)->batches[0].last_seq, INT32_MAX - 2);
    expect_append(produce1(f, hdr(1, 0, INT32_MAX - 1, 4, 1000)));
    assert_int_equal(idem_find(f->s, 1)->batches[1].last_seq, 1);
    expect_dup(produce1(f, hdr(1, 0, INT32_MAX - 1, 4, 1000)), INT32_MAX - 1,
               INT32_MAX + 2LL);
    expect_refuse(produce1(f, hdr(1, 0, 3, 1, 1000)),
                  WEIR_EOUT_OF_ORDER_SEQUENCE);
    expect_append(produce1(f, hdr(1, 0, 2, 1, 1000)));
}

static void test_expiry_forgets_idle_producers(void **state)
{
    struct fx *f = *state;
    int64_t pid;

    expect_append(produce1(f, hdr(1, 0, 0, 1, 1000)));
    expect_append(produce1(f, hdr(2, 0, 0, 1, 5000)));
    assert_int_equal(idem_expire(f->s, 6000, 5000), 0);
    assert_int_equal(idem_expire(f->s, 6001, 5000), 1);
    assert_null(idem_find(f->s, 1));
    assert_non_null(idem_find(f->s, 2));
    /* a forgotten producer must start over, as a new one would */
    expect_refuse(produce1(f, hdr(1, 0, 1, 1, 7000)),
                  WEIR_EUNKNOWN_PRODUCER_ID);
    expect_append(produce1(f, hdr(1, 0, 0, 1, 7000)));
    /* many producers, every other one idle: removals shift probe runs */
    for (pid = 10; pid < 2010; pid++) {
        expect_append(produce1(f, hdr(pid, 0, 0, 1, pid % 2 ? 100 : 9000)));
    }
    /* idle: the odd ones, and producers 1 (7000) and 2 (5000) */
    assert_int_equal(idem_expire(f->s, 9500, 1000), 1000 + 2);
    assert_int_equal(idem_check_invariants(f->s, &f->ed), 0);
    for (pid = 10; pid < 2010; pid++) {
        assert_true((idem_find(f->s, pid) != NULL) == (pid % 2 == 0));
    }
    assert_int_equal(idem_count(f->s), 1000);
}

static uint32_t rng = 2463534242u;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng % n;
}

/* One random payload of 1..3 batches: mostly the next batches of one of
 * a few producers, sometimes a retry, a gap, a plain batch or an epoch
 * bump, so every verdict happens. */
static void random_payload(struct fx *f, int32_t *next, int16_t *epoch)
{
    struct batch_header hs[3];
    size_t n = 1 + rnd(3);
    int64_t pid = rnd(6);
    int32_t seq = next[pid];
    uint32_t kind = rnd(20);
    size_t i;

    if (kind == 0) {
        epoch[pid]++;
        seq = 0;
    } else if (kind == 1 && seq > 0) {
        seq = (int32_t)rnd((uint32_t)seq); /* some old sequence */
    } else if (kind == 2) {
        seq += 1 + (int32_t)rnd(3);
    }
    for (i = 0; i < n; i++) {
        int32_t count = 1 + (int32_t)rnd(4);
        hs[i] = kind == 3 ? hdr(-1, -1, -1, count, 1000)
                          : hdr(pid, epoch[pid], seq, count, 1000 + rnd(50));
        seq = idem_seq_add(seq, count);
    }
    if (produce(f, hs, n).verdict == IDEM_VERDICT_APPEND && kind != 3) {
        next[pid] = seq;
    }
}

static void test_rebuild_equals_live_state(void **state)
{
    struct fx *f = *state;
    int32_t next[6] = {0};
    int16_t epoch[6] = {0};
    struct idem *rebuilt;
    size_t i;

    for (i = 0; i < 1500; i++) {
        random_payload(f, next, epoch);
    }
    assert_true(idem_count(f->s) > 3);
    assert_int_equal(idem_new(&rebuilt), 0);
    for (i = 0; i < f->n_log; i++) {
        assert_int_equal(idem_replay(rebuilt, &f->log[i]), 0);
    }
    assert_int_equal(idem_check_invariants(rebuilt, &f->ed), 0);
    assert_true(idem_equal(f->s, rebuilt));
    assert_true(idem_equal(rebuilt, f->s));
    /* and not trivially: one batch less differs */
    idem_clear(rebuilt);
    for (i = 0; i + 1 < f->n_log; i++) {
        assert_int_equal(idem_replay(rebuilt, &f->log[i]), 0);
    }
    assert_false(idem_equal(f->s, rebuilt));
    idem_free(rebuilt);
}

static void count_cb(void *arg, const struct idem_producer *p)
{
    (void)p;
    (*(int *)arg)++;
}

static void test_each_visits_every_producer(void **state)
{
    struct fx *f = *state;
    int n = 0;
    int64_t pid;

    for (pid = 0; pid < 50; pid++) {
        expect_append(produce1(f, hdr(pid, 0, 0, 1, 1000)));
    }
    idem_each(f->s, count_cb, &n);
    assert_int_equal(n, 50);
    idem_clear(f->s);
    assert_int_equal(idem_count(f->s), 0);
    assert_null(idem_find(f->s, 3));
}

/* Fail each allocation in turn: a failed check refuses nothing and
 * changes nothing; the state stays usable. */
static void test_out_of_memory_is_reported(void **state)
{
    struct fx *f = *state;
    struct idem_check_result r;
    struct batch_header h;
    unsigned long n;
    int64_t pid;
    int rv;

    for (pid = 0; pid < 40; pid++) {
        h = hdr(pid, 0, 0, 1, 1000);
        for (n = 1;; n++) {
            mem_fault_set(n, 0);
            rv = idem_check(f->s, &h, 1, &r, &f->ed);
            mem_fault_set(0, 0);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            assert_null(idem_find(f->s, pid));
        }
        idem_record(f->s, &h, 1, pid);
        assert_int_equal(idem_check_invariants(f->s, &f->ed), 0);
    }
    assert_int_equal(idem_count(f->s), 40);
    mem_fault_set(1, 0);
    h = hdr(1000, 0, 0, 1, 1000);
    rv = idem_replay(f->s, &h);
    mem_fault_set(0, 0);
    assert_true(rv == 0 || rv == WEIR_ENOMEM);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_plain_batches_bypass),
        T(test_new_producer_starts_at_zero),
        T(test_each_of_last_five_is_a_duplicate),
        T(test_sixth_oldest_is_forgotten),
        T(test_gap_is_out_of_order),
        T(test_older_epoch_is_fenced),
        T(test_newer_epoch_restarts_at_zero),
        T(test_epoch_bump_after_a_failed_batch),
        T(test_payload_of_several_batches),
        T(test_duplicates_written_apart_are_refused),
        T(test_bad_fields_are_refused),
        T(test_sequence_wraps_at_int32_max),
        T(test_expiry_forgets_idle_producers),
        T(test_rebuild_equals_live_state),
        T(test_each_visits_every_producer),
        T(test_out_of_memory_is_reported),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
