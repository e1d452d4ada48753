/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotent producer, client side. Against the in-process fake broker
 * (which checks sequences as the broker does): a retry after a lost reply
 * is deduplicated and reported once with its real offset, with one batch
 * or many in flight; a producer the broker forgot starts over; a broker
 * without producer ids fails the records clearly. Then the pure sequence
 * state (producer_idem.c) step by step: stamps, the five-batch window, a
 * dead stamp and the restart under the next epoch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/accum.h"
#include "client/producer_idem.h"
#include "client/weir.h"
#include "test_client_fake_broker.h"

struct fix {
    struct fake_broker *fb;
    struct weir_client *c;
};

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));
    struct weir_client_config cfg;
    char bs[64];

    if (f == NULL || fake_broker_start(0, &f->fb) != 0) {
        return -1;
    }
    weir_client_config_init(&cfg);
    (void)snprintf(bs, sizeof(bs), "127.0.0.1:%u", fake_broker_port(f->fb));
    cfg.bootstrap = bs;
    cfg.request_timeout_ms = 5000;
    if (weir_client_new(&cfg, &f->c, NULL) != 0) {
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;

    weir_client_free(f->c);
    fake_broker_stop(f->fb);
    free(f);
    return 0;
}

struct reports {
    int64_t *offset;
    int *err;
    size_t *count; /* reports per record: must end at exactly 1 */
    size_t n;
    size_t done;
};

static void on_delivery(void *arg, const struct weir_delivery *d)
{
    struct reports *rs = arg;
    size_t i = (size_t)(uintptr_t)d->opaque;

    assert_true(i < rs->n);
    rs->offset[i] = d->offset;
    rs->err[i] = d->error_code;
    rs->count[i]++;
    rs->done++;
}

static void reports_init(struct reports *rs, size_t n)
{
    rs->offset = calloc(n, sizeof(*rs->offset));
    rs->err = calloc(n, sizeof(*rs->err));
    rs->count = calloc(n, sizeof(*rs->count));
    rs->n = n;
    rs->done = 0;
}

static void reports_fini(struct reports *rs)
{
    free(rs->offset);
    free(rs->err);
    free(rs->count);
}

static struct weir_producer *producer(struct fix *f,
                                      struct reports *rs,
                                      bool idempotence,
                                      uint32_t batch_size)
{
    struct weir_producer_config pc;
    struct weir_producer *p;

    weir_producer_config_init(&pc);
    pc.retry_backoff_ms = 10;
    pc.batch_size_bytes = batch_size;
    pc.idempotence = idempotence;
    pc.on_delivery = on_delivery;
    pc.cb_arg = rs;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    return p;
}

/* A producer of one-record batches (batch size 1) with the given
 * delivery timeout and retries. */
static struct weir_producer *producer_small(struct fix *f,
                                            struct reports *rs,
                                            uint32_t delivery_timeout_ms,
                                            uint32_t retries)
{
    struct weir_producer_config pc;
    struct weir_producer *p;

    weir_producer_config_init(&pc);
    pc.retry_backoff_ms = 10;
    pc.retry_backoff_max_ms = 50;
    pc.batch_size_bytes = 1;
    pc.delivery_timeout_ms = delivery_timeout_ms;
    pc.retries = retries;
    pc.on_delivery = on_delivery;
    pc.cb_arg = rs;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    return p;
}

static void create(struct fix *f, const char *name)
{
    struct weir_new_topic t = {name, 1, 0, NULL, 0};
    struct err_detail ed;

    assert_int_equal(weir_admin_create_topic(f->c, &t, &ed), 0);
}

/* Records "r<i>" for i in [from, to), to partition 0. */
static void
send(struct weir_producer *p, const char *topic, size_t from, size_t to)
{
    struct err_detail ed;
    char v[32];
    size_t i;

    for (i = from; i < to; i++) {
        int n = snprintf(v, sizeof(v), "r%05zu", i);
        assert_int_equal(weir_produce(p, topic, 0, NULL, 0, v, (size_t)n, -1,
                                      (void *)(uintptr_t)i, &ed),
                         0);
    }
}

/* Read the partition back: record i must be "r<i>" at offset i, each once. */
static void expect_log(struct fix *f, const char *topic, size_t n)
{
    struct weir_consumer_config kc;
    struct weir_assignment a = {topic, 0, WEIR_START_EARLIEST, 0};
    struct weir_consumer *k;
    const struct weir_record *rec;
    struct err_detail ed;
    char v[32];
    size_t got = 0;

    assert_int_equal(fake_broker_end_offset(f->fb, topic, 0), (int64_t)n);
    weir_consumer_config_init(&kc);
    kc.fetch_max_wait_ms = 50;
    assert_int_equal(weir_consumer_new(f->c, &kc, &k, &ed), 0);
    assert_int_equal(weir_consumer_assign(k, &a, 1, &ed), 0);
    while (got < n) {
        int len;
        assert_int_equal(weir_consumer_poll(k, 2000, &rec, &ed), 0);
        assert_non_null(rec);
        assert_int_equal(rec->offset, (int64_t)got);
        len = snprintf(v, sizeof(v), "r%05zu", got);
        assert_int_equal(rec->value_len, (size_t)len);
        assert_memory_equal(rec->value, v, (size_t)len);
        got++;
    }
    weir_consumer_free(k);
}

/* Every record reported once, written, at offset i. */
static void expect_reports(const struct reports *rs)
{
    size_t i;

    assert_int_equal(rs->done, rs->n);
    for (i = 0; i < rs->n; i++) {
        assert_int_equal(rs->count[i], 1);
        assert_int_equal(rs->err[i], 0);
        assert_int_equal(rs->offset[i], (int64_t)i);
    }
}

static void test_retry_after_lost_reply_is_deduplicated(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;
    uint64_t before;

    reports_init(&rs, 10);
    p = producer(f, &rs, true, 64 * 1024);
    create(f, "lost");
    fake_broker_drop_produce_replies(f->fb, 1);
    before = fake_broker_produce_requests(f->fb);
    send(p, "lost", 0, 10);
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    /* written by the first attempt; the retry was answered DUPLICATE */
    assert_int_equal(fake_broker_produce_requests(f->fb), before + 2);
    expect_reports(&rs);
    expect_log(f, "lost", 10);
    assert_int_equal(fake_broker_producer_id_requests(f->fb), 1);
    weir_producer_free(p);
    reports_fini(&rs);
}

static void test_without_idempotence_the_retry_writes_twice(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;
    size_t i;

    reports_init(&rs, 10);
    p = producer(f, &rs, false, 64 * 1024);
    create(f, "twice");
    fake_broker_drop_produce_replies(f->fb, 1);
    send(p, "twice", 0, 10);
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    assert_int_equal(fake_broker_end_offset(f->fb, "twice", 0), 20);
    for (i = 0; i < 10; i++) {
        assert_int_equal(rs.offset[i], (int64_t)(10 + i)); /* the copy */
    }
    assert_int_equal(fake_broker_producer_id_requests(f->fb), 0);
    weir_producer_free(p);
    reports_fini(&rs);
}

static void test_lost_replies_with_many_in_flight(void **state)
{
    struct fix *f = *state;
    const size_t n = 3000;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;
    int round;

    reports_init(&rs, n);
    p = producer(f, &rs, true, 300); /* many small batches */
    create(f, "many");
    for (round = 0; round < 3; round++) {
        /* a burst in flight, then replies lost: some requests written,
         * some not, the rest failed with the connection */
        send(p, "many", (size_t)round * 1000, (size_t)round * 1000 + 1000);
        (void)weir_producer_poll(p, 0);
        fake_broker_drop_produce_replies(f->fb, 1 + round);
        assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    }
    expect_reports(&rs);
    expect_log(f, "many", n);
    weir_producer_free(p);
    reports_fini(&rs);
}

static void test_forgotten_producer_starts_over(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;

    reports_init(&rs, 20);
    p = producer(f, &rs, true, 64 * 1024);
    create(f, "forgot");
    send(p, "forgot", 0, 10);
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    /* the broker lost the producer's sequences: UNKNOWN_PRODUCER_ID for
     * its next batch, which then starts over under a new epoch */
    fake_broker_forget_producers(f->fb);
    send(p, "forgot", 10, 20);
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    expect_reports(&rs);
    expect_log(f, "forgot", 20);
    assert_int_equal(fake_broker_producer_id_requests(f->fb), 1);
    weir_producer_free(p);
    reports_fini(&rs);
}

/* The log holds exactly the records reported written, each once, in
 * record order, at the offset reported; returns how many. */
static size_t expect_written_in_order(struct fix *f,
                                      const char *topic,
                                      const struct reports *rs)
{
    struct weir_consumer_config kc;
    struct weir_assignment a = {topic, 0, WEIR_START_EARLIEST, 0};
    struct weir_consumer *k;
    const struct weir_record *rec;
    struct err_detail ed;
    int64_t n = fake_broker_end_offset(f->fb, topic, 0);
    size_t next = 0;
    int64_t got = 0;
    char v[32];

    weir_consumer_config_init(&kc);
    kc.fetch_max_wait_ms = 50;
    assert_int_equal(weir_consumer_new(f->c, &kc, &k, &ed), 0);
    assert_int_equal(weir_consumer_assign(k, &a, 1, &ed), 0);
    while (got < n) {
        int len;
        assert_int_equal(weir_consumer_poll(k, 2000, &rec, &ed), 0);
        assert_non_null(rec);
        while (next < rs->n && rs->err[next] != 0) {
            next++; /* failed: must not be in the log */
        }
        assert_true(next < rs->n);
        assert_int_equal(rs->offset[next], rec->offset);
        len = snprintf(v, sizeof(v), "r%05zu", next);
        assert_int_equal(rec->value_len, (size_t)len);
        assert_memory_equal(rec->value, v, (size_t)len);
        next++;
        got++;
    }
    while (next < rs->n) {
        assert_int_not_equal(rs->err[next], 0); /* every success is read */
        next++;
    }
    weir_consumer_free(k);
    return (size_t)got;
}

/* A retriable error on one of many pipelined batches (STORAGE three times
 * for the payload holding sequence 20, with retries 3): the batches in
 * flight behind it come back OUT_OF_ORDER_SEQUENCE, wait for it, and every
 * record is written once, in order. */
static void test_retriable_error_behind_pipelined_batches(void **state)
{
    struct fix *f = *state;
    const size_t n = 60;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;

    reports_init(&rs, n);
    p = producer_small(f, &rs, 20000, 3);
    create(f, "pipe");
    fake_broker_fail_batch(f->fb, WEIR_ESTORAGE, 0, 20, 3);
    send(p, "pipe", 0, n);
    assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    expect_reports(&rs);
    expect_log(f, "pipe", n);
    weir_producer_free(p);
    reports_fini(&rs);
}

/* The payload holding sequence 20 fails with STORAGE for longer than the
 * delivery timeout: records whose time runs out fail with retriable,
 * indefinite codes (their own STORAGE, or REQUEST_TIMED_OUT for those
 * that waited behind it), never OUT_OF_ORDER_SEQUENCE, which would say
 * "failed for good, not written" of a batch that never failed itself;
 * what is written is in order, once; and once the broker takes writes
 * again, later records are written under the next epoch. */
static void test_retriable_error_past_the_deadline(void **state)
{
    struct fix *f = *state;
    const size_t n = 80;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;
    size_t i;
    size_t failed = 0;

    reports_init(&rs, n);
    p = producer_small(f, &rs, 1000, UINT32_MAX);
    create(f, "stuck");
    fake_broker_fail_batch(f->fb, WEIR_ESTORAGE, 0, 20, 1000000);
    send(p, "stuck", 0, 60);
    assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    fake_broker_fail_batch(f->fb, 0, 0, 0, 0);
    send(p, "stuck", 60, n);
    assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    assert_int_equal(rs.done, n);
    for (i = 0; i < n; i++) {
        assert_int_equal(rs.count[i], 1);
        if (rs.err[i] != 0) {
            failed++;
            assert_int_not_equal(rs.err[i], WEIR_EOUT_OF_ORDER_SEQUENCE);
            assert_true(weir_err_retriable(rs.err[i]));
            assert_false(weir_err_definite(rs.err[i]));
        }
    }
    assert_true(rs.err[20] != 0);
    for (i = 60; i < n; i++) {
        assert_int_equal(rs.err[i], 0); /* the broker took writes again */
    }
    assert_int_equal(expect_written_in_order(f, "stuck", &rs), n - failed);
    assert_int_equal(fake_broker_producer_epoch(f->fb, "stuck", 0, 0), 1);
    weir_producer_free(p);
    reports_fini(&rs);
}

/* A batch refused for good (MESSAGE_TOO_LARGE, definite: not written)
 * bumps the partition's epoch: every later record is written, in order,
 * under epoch 1 from sequence 0, and only the refused one fails, with
 * its definite code. */
static void test_permanent_failure_bumps_the_epoch(void **state)
{
    struct fix *f = *state;
    const size_t n = 60;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;
    size_t i;

    reports_init(&rs, n);
    p = producer_small(f, &rs, 20000, UINT32_MAX);
    create(f, "toolarge");
    /* the first payload holding it, then the batch on its own */
    fake_broker_fail_batch(f->fb, WEIR_EMESSAGE_TOO_LARGE, 0, 20, 2);
    send(p, "toolarge", 0, n);
    assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    assert_int_equal(rs.done, n);
    for (i = 0; i < n; i++) {
        assert_int_equal(rs.count[i], 1);
        assert_int_equal(rs.err[i], i == 20 ? WEIR_EMESSAGE_TOO_LARGE : 0);
    }
    assert_int_equal(expect_written_in_order(f, "toolarge", &rs), n - 1);
    assert_int_equal(fake_broker_producer_epoch(f->fb, "toolarge", 0, 0), 1);
    weir_producer_free(p);
    reports_fini(&rs);
}

/* A lost reply (indefinite: as far as the client knows, the records may
 * be written), then a definite refusal of the retry: the record is not
 * reported with the definite code, which would claim "not written". */
static void test_refusal_after_a_lost_reply_is_indefinite(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;

    reports_init(&rs, 1);
    p = producer_small(f, &rs, 20000, UINT32_MAX);
    create(f, "unsure");
    fake_broker_drop_produce_replies(f->fb, 1); /* the reply is lost */
    fake_broker_fail_produce(f->fb, WEIR_ETOPIC_AUTHORIZATION_FAILED, 2);
    send(p, "unsure", 0, 1);
    assert_int_equal(weir_producer_flush(p, 20000, &ed), 0);
    assert_int_equal(rs.done, 1);
    assert_int_not_equal(rs.err[0], 0);
    assert_false(weir_err_definite(rs.err[0]));
    weir_producer_free(p);
    reports_fini(&rs);
}

static void test_broker_without_producer_ids_fails_records(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p;
    struct err_detail ed;

    reports_init(&rs, 3);
    p = producer(f, &rs, true, 64 * 1024);
    create(f, "old");
    fake_broker_refuse_producer_ids(f->fb);
    send(p, "old", 0, 3);
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    assert_int_equal(rs.done, 3);
    assert_int_equal(rs.err[0], WEIR_EUNSUPPORTED_API);
    assert_int_equal(rs.err[2], WEIR_EUNSUPPORTED_API);
    assert_int_equal(fake_broker_end_offset(f->fb, "old", 0), 0);
    weir_producer_free(p);
    reports_fini(&rs);
}

static void test_acks_zero_asks_for_no_producer_id(void **state)
{
    struct fix *f = *state;
    struct weir_producer_config pc;
    struct weir_producer *p;
    struct err_detail ed;

    create(f, "fire");
    weir_producer_config_init(&pc);
    pc.acks = 0;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    assert_int_equal(weir_produce(p, "fire", 0, NULL, 0, "v", 1, -1, NULL, &ed),
                     0);
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    assert_int_equal(fake_broker_producer_id_requests(f->fb), 0);
    weir_producer_free(p);
}

/* ---- the sequence state alone ---- */

static const struct accum_config acfg = {0, 100, 60000};

/* A queue with n one-record batches (batch size 100: one record each). */
static void queue_fill(struct accum_queue *q, int n)
{
    int i;

    accum_queue_init(q, "t", 0);
    for (i = 0; i < n; i++) {
        assert_int_equal(
            accum_append(q, &acfg, 0, 1000, NULL, 0, "0123456789", 10, NULL),
            0);
    }
}

/* Pop, stamp and "send" the head batch. */
static struct accum_batch *send_head(struct producer_idem *pi,
                                     struct accum_queue *q)
{
    struct accum_batch *b;
    int err;

    assert_true(producer_idem_can_send(pi, q));
    b = accum_pop(q, &err);
    assert_non_null(b);
    assert_int_equal(producer_idem_stamp(pi, q, b), 0);
    producer_idem_sent(b);
    return b;
}

static struct batch_header header_of(const struct accum_batch *b)
{
    struct batch_header h;

    assert_int_equal(batch_validate(b->bytes, UINT32_MAX, &h, NULL), 0);
    return h;
}

static void test_stamps_follow_the_window(void **state)
{
    struct producer_idem pi;
    struct accum_queue q;
    struct accum_batch *b[7];
    struct batch_header h;
    int i;

    (void)state;
    producer_idem_init(&pi);
    queue_fill(&q, 7);
    assert_false(producer_idem_can_send(&pi, &q)); /* no producer id yet */
    pi.producer_id = 42;
    for (i = 0; i < PRODUCER_IDEM_WINDOW; i++) {
        b[i] = send_head(&pi, &q);
        h = header_of(b[i]);
        assert_int_equal(h.producer_id, 42);
        assert_int_equal(h.producer_epoch, 0);
        assert_int_equal(h.base_sequence, i);
    }
    /* five unresolved: the sixth waits, even when a later one is done */
    assert_false(producer_idem_can_send(&pi, &q));
    producer_idem_returned(b[1]);
    producer_idem_resolved(b[1]);
    accum_batch_free(b[1]);
    assert_false(producer_idem_can_send(&pi, &q));
    producer_idem_returned(b[0]);
    producer_idem_resolved(b[0]);
    accum_batch_free(b[0]);
    b[5] = send_head(&pi, &q);
    b[6] = send_head(&pi, &q);
    assert_int_equal(header_of(b[6]).base_sequence, 6);
    assert_false(producer_idem_can_send(&pi, &q)); /* empty */
    for (i = 2; i < 7; i++) {
        accum_batch_free(b[i]);
    }
    accum_queue_fini(&q);
}

static void test_dead_stamp_restarts_under_next_epoch(void **state)
{
    struct producer_idem pi;
    struct accum_queue q;
    struct accum_batch *b[3];
    struct batch_header h;
    int i;

    (void)state;
    producer_idem_init(&pi);
    pi.producer_id = 7;
    queue_fill(&q, 4);
    for (i = 0; i < 3; i++) {
        b[i] = send_head(&pi, &q);
    }
    /* the second is refused while the first is unresolved: retry as is */
    producer_idem_returned(b[1]);
    assert_true(
        producer_idem_resequence(&pi, b[1], WEIR_EOUT_OF_ORDER_SEQUENCE));
    assert_false(q.idem.dead);
    accum_requeue(&q, b[1], 1);
    /* the oldest is refused: nothing with this stamp can be written */
    producer_idem_returned(b[0]);
    assert_true(producer_idem_resequence(&pi, b[0], WEIR_EUNKNOWN_PRODUCER_ID));
    assert_true(q.idem.dead);
    accum_requeue(&q, b[0], 1);
    /* not while the third is still out */
    assert_false(producer_idem_can_send(&pi, &q));
    producer_idem_returned(b[2]);
    assert_true(
        producer_idem_resequence(&pi, b[2], WEIR_EOUT_OF_ORDER_SEQUENCE));
    accum_requeue(&q, b[2], 1);
    /* then all again, in order, epoch 1 from sequence 0 */
    for (i = 0; i < 4; i++) {
        struct accum_batch *x = send_head(&pi, &q);
        h = header_of(x);
        assert_int_equal(h.producer_id, 7);
        assert_int_equal(h.producer_epoch, 1);
        assert_int_equal(h.base_sequence, i);
        producer_idem_returned(x);
        producer_idem_resolved(x);
        accum_batch_free(x);
    }
    assert_int_equal(q.idem.restamps, 1);
    assert_int_equal(q.idem.n_window, 0);
    accum_queue_fini(&q);
}

/* b came back refused with err: returned, resequenced, requeued. */
static enum producer_idem_retry back(struct producer_idem *pi,
                                     struct accum_queue *q,
                                     struct accum_batch *b,
                                     int err)
{
    enum producer_idem_retry r;

    producer_idem_returned(b);
    r = producer_idem_resequence(pi, b, err);
    accum_requeue(q, b, 1);
    return r;
}

static void test_retries_go_one_at_a_time_in_order(void **state)
{
    struct producer_idem pi;
    struct accum_queue q;
    struct accum_batch *b[3];
    struct accum_batch *x;
    int i;

    (void)state;
    producer_idem_init(&pi);
    pi.producer_id = 9;
    queue_fill(&q, 3);
    for (i = 0; i < 3; i++) {
        b[i] = send_head(&pi, &q);
    }
    /* the first fails with a retriable error of its own, the two behind
     * it are refused for the gap: not their fault */
    assert_int_equal(back(&pi, &q, b[0], WEIR_ESTORAGE),
                     PRODUCER_IDEM_RETRY_NONE);
    assert_int_equal(back(&pi, &q, b[1], WEIR_EOUT_OF_ORDER_SEQUENCE),
                     PRODUCER_IDEM_RETRY_BEHIND);
    assert_false(q.idem.dead);
    assert_false(producer_idem_can_send(&pi, &q)); /* b[2] still out */
    assert_int_equal(back(&pi, &q, b[2], WEIR_EOUT_OF_ORDER_SEQUENCE),
                     PRODUCER_IDEM_RETRY_BEHIND);
    /* the oldest goes, alone */
    x = send_head(&pi, &q);
    assert_ptr_equal(x, b[0]);
    assert_int_equal(header_of(x).base_sequence, 0);
    assert_false(producer_idem_can_send(&pi, &q));
    producer_idem_returned(x);
    producer_idem_resolved(x);
    accum_batch_free(x);
    /* then the next, same stamp */
    x = send_head(&pi, &q);
    assert_ptr_equal(x, b[1]);
    assert_int_equal(header_of(x).base_sequence, 1);
    assert_int_equal(header_of(x).producer_epoch, 0);
    assert_false(producer_idem_can_send(&pi, &q));
    producer_idem_returned(x);
    producer_idem_resolved(x);
    accum_batch_free(x);
    x = send_head(&pi, &q);
    assert_ptr_equal(x, b[2]);
    producer_idem_returned(x);
    producer_idem_resolved(x);
    accum_batch_free(x);
    assert_int_equal(q.idem.restamps, 0);
    accum_queue_fini(&q);
}

static void test_unwritten_failure_of_the_oldest_bumps_at_once(void **state)
{
    struct producer_idem pi;
    struct accum_queue q;
    struct accum_batch *b[3];
    struct accum_batch *x;
    int i;

    (void)state;
    producer_idem_init(&pi);
    pi.producer_id = 5;
    queue_fill(&q, 4);
    for (i = 0; i < 3; i++) {
        b[i] = send_head(&pi, &q);
    }
    /* a failure of a batch that is not the oldest proves nothing */
    producer_idem_returned(b[1]);
    producer_idem_failed(b[1], true);
    assert_false(q.idem.dead);
    accum_requeue(&q, b[1], 1);
    /* nor one of the oldest that may have been written */
    producer_idem_returned(b[0]);
    producer_idem_failed(b[0], false);
    assert_false(q.idem.dead);
    /* the oldest refused for good, certainly not written: dead at once */
    producer_idem_failed(b[0], true);
    assert_true(q.idem.dead);
    producer_idem_resolved(b[0]);
    accum_batch_free(b[0]);
    assert_false(producer_idem_can_send(&pi, &q)); /* b[2] still out */
    assert_int_equal(back(&pi, &q, b[2], WEIR_EOUT_OF_ORDER_SEQUENCE),
                     PRODUCER_IDEM_RETRY_RESTAMP);
    /* the rest again, in order, epoch 1 from sequence 0 */
    for (i = 0; i < 3; i++) {
        x = send_head(&pi, &q);
        assert_int_equal(header_of(x).producer_epoch, 1);
        assert_int_equal(header_of(x).base_sequence, i);
        producer_idem_returned(x);
        producer_idem_resolved(x);
        accum_batch_free(x);
    }
    assert_int_equal(q.idem.restamps, 1);
    accum_queue_fini(&q);
}

static void test_fenced_producer_takes_a_new_id(void **state)
{
    struct producer_idem pi;
    struct accum_queue q;
    struct accum_batch *b;

    (void)state;
    producer_idem_init(&pi);
    pi.producer_id = 3;
    queue_fill(&q, 1);
    b = send_head(&pi, &q);
    producer_idem_returned(b);
    assert_true(producer_idem_resequence(&pi, b, WEIR_EINVALID_PRODUCER_EPOCH));
    assert_true(pi.need_new_id);
    accum_requeue(&q, b, 1);
    assert_false(producer_idem_can_send(&pi, &q)); /* waits for the id */
    pi.producer_id = 4;
    pi.need_new_id = false;
    b = send_head(&pi, &q);
    assert_int_equal(header_of(b).producer_id, 4);
    assert_int_equal(header_of(b).base_sequence, 0);
    accum_batch_free(b);
    accum_queue_fini(&q);
}

static void test_sequence_wraps(void **state)
{
    (void)state;
    assert_int_equal(producer_idem_seq_add(1, 2), 3);
    assert_int_equal(producer_idem_seq_add(INT32_MAX, 1), 0);
    assert_int_equal(producer_idem_seq_add(INT32_MAX - 1, 5), 3);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_retry_after_lost_reply_is_deduplicated),
        T(test_without_idempotence_the_retry_writes_twice),
        T(test_lost_replies_with_many_in_flight),
        T(test_forgotten_producer_starts_over),
        T(test_broker_without_producer_ids_fails_records),
        T(test_acks_zero_asks_for_no_producer_id),
        T(test_retriable_error_behind_pipelined_batches),
        T(test_retriable_error_past_the_deadline),
        T(test_permanent_failure_bumps_the_epoch),
        T(test_refusal_after_a_lost_reply_is_indefinite),
        cmocka_unit_test(test_stamps_follow_the_window),
        cmocka_unit_test(test_dead_stamp_restarts_under_next_epoch),
        cmocka_unit_test(test_retries_go_one_at_a_time_in_order),
        cmocka_unit_test(test_unwritten_failure_of_the_oldest_bumps_at_once),
        cmocka_unit_test(test_fenced_producer_takes_a_new_id),
        cmocka_unit_test(test_sequence_wraps),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
