/* SPDX-License-Identifier: Apache-2.0 */
/* libweir against the in-process fake broker: admin calls, producing with
 * batching, retries and acks=0, consuming from every kind of start, and
 * the error messages a user sees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/partitioner.h"
#include "client/weir.h"
#include "test_client_fake_broker.h"

struct fake_clock {
    uint64_t now_ms;
};

static uint64_t fake_now(void *ctx)
{
    return ((struct fake_clock *)ctx)->now_ms;
}

static int64_t fake_wall(void *ctx)
{
    return 1700000000000LL + (int64_t)((struct fake_clock *)ctx)->now_ms;
}

struct fix {
    struct fake_broker *fb;
    struct weir_client *c;
    struct fake_clock fc;
    struct clock clk;
};

static int fix_client(struct fix *f, bool fake_time)
{
    struct weir_client_config cfg;
    char bs[64];

    weir_client_config_init(&cfg);
    (void)snprintf(bs, sizeof(bs), "127.0.0.1:%u", fake_broker_port(f->fb));
    cfg.bootstrap = bs;
    cfg.request_timeout_ms = 5000;
    if (fake_time) {
        f->fc.now_ms = 1000;
        f->clk.now_ms = fake_now;
        f->clk.wall_ms = fake_wall;
        f->clk.ctx = &f->fc;
        cfg.clock = &f->clk;
    }
    return weir_client_new(&cfg, &f->c, NULL);
}

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));

    if (f == NULL || fake_broker_start(0, &f->fb) != 0 ||
        fix_client(f, false) != 0) {
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

struct report {
    int32_t partition;
    int64_t offset;
    int err;
    bool done;
};

struct reports {
    struct report *r;
    size_t n;
    size_t done;
};

static void on_delivery(void *arg, const struct weir_delivery *d)
{
    struct reports *rs = arg;
    size_t i = (size_t)(uintptr_t)d->opaque;

    assert_true(i < rs->n);
    assert_false(rs->r[i].done);
    rs->r[i].partition = d->partition;
    rs->r[i].offset = d->offset;
    rs->r[i].err = d->error_code;
    rs->r[i].done = true;
    rs->done++;
}

static struct weir_producer *
producer(struct fix *f, struct reports *rs, size_t n, int32_t acks)
{
    struct weir_producer_config pc;
    struct weir_producer *p;

    rs->r = calloc(n, sizeof(*rs->r));
    rs->n = n;
    rs->done = 0;
    weir_producer_config_init(&pc);
    pc.acks = acks;
    pc.retry_backoff_ms = 10;
    pc.on_delivery = on_delivery;
    pc.cb_arg = rs;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    return p;
}

static void create(struct fix *f, const char *name, int32_t n)
{
    struct weir_new_topic t = {name, n, 0, NULL, 0};
    struct err_detail ed;

    assert_int_equal(weir_admin_create_topic(f->c, &t, &ed), 0);
}

static struct weir_consumer *consumer(struct fix *f,
                                      const char *topic,
                                      int32_t n,
                                      enum weir_start start,
                                      int64_t value)
{
    struct weir_consumer_config kc;
    struct weir_assignment a[16];
    struct weir_consumer *k;
    struct err_detail ed;
    int32_t i;

    weir_consumer_config_init(&kc);
    kc.fetch_max_wait_ms = 50;
    kc.reset = WEIR_START_OFFSET;
    assert_int_equal(weir_consumer_new(f->c, &kc, &k, &ed), 0);
    for (i = 0; i < n; i++) {
        a[i].topic = topic;
        a[i].partition = i;
        a[i].start = start;
        a[i].value = value;
    }
    assert_int_equal(weir_consumer_assign(k, a, (size_t)n, &ed), 0);
    return k;
}

static void test_keyed_records_round_trip(void **state)
{
    struct fix *f = *state;
    const size_t n = 20000;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, n, -1);
    struct weir_consumer *k;
    const struct weir_record *rec;
    struct err_detail ed;
    int64_t next[4] = {0, 0, 0, 0};
    char key[32];
    char val[32];
    size_t got = 0;
    size_t i;

    create(f, "keyed", 4);
    for (i = 0; i < n; i++) {
        int kl = snprintf(key, sizeof(key), "k%zu", i % 500);
        int vl = snprintf(val, sizeof(val), "v%zu", i);
        assert_int_equal(weir_produce(p, "keyed", WEIR_PARTITION_ANY, key,
                                      (size_t)kl, val, (size_t)vl, -1,
                                      (void *)(uintptr_t)i, &ed),
                         0);
    }
    assert_int_equal(weir_producer_flush(p, 10000, &ed), 0);
    assert_int_equal(rs.done, n);
    assert_int_equal(weir_producer_outstanding(p), 0);
    for (i = 0; i < n; i++) {
        int kl = snprintf(key, sizeof(key), "k%zu", i % 500);
        assert_int_equal(rs.r[i].err, 0);
        assert_int_equal(rs.r[i].partition,
                         partitioner_key(key, (size_t)kl, 4));
        /* one producer, in order: offsets are dense per partition */
        assert_int_equal(rs.r[i].offset, next[rs.r[i].partition]++);
    }
    weir_producer_free(p);

    k = consumer(f, "keyed", 4, WEIR_START_EARLIEST, 0);
    memset(next, 0, sizeof(next));
    while (got < n) {
        assert_int_equal(weir_consumer_poll(k, 2000, &rec, &ed), 0);
        assert_non_null(rec);
        assert_int_equal(rec->offset, next[rec->partition]++);
        assert_int_equal(weir_consumer_position(k, "keyed", rec->partition),
                         rec->offset + 1);
        got++;
    }
    assert_int_equal(weir_consumer_poll(k, 100, &rec, &ed), 0);
    assert_null(rec);
    weir_consumer_free(k);
    free(rs.r);
}

static void test_keyless_records_stick_then_move(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 400, 1);
    struct err_detail ed;
    int counts[3] = {0, 0, 0};
    size_t i;

    create(f, "sticky", 3);
    for (i = 0; i < 400; i++) {
        assert_int_equal(weir_produce(p, "sticky", WEIR_PARTITION_ANY, NULL, 0,
                                      "x", 1, -1, (void *)(uintptr_t)i, &ed),
                         0);
        if (i % 100 == 99) { /* each flush sends the sticky batch */
            assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
        }
    }
    for (i = 0; i < 400; i++) {
        counts[rs.r[i].partition]++;
        /* a run of 100 shares one partition */
        assert_int_equal(rs.r[i].partition, rs.r[i - i % 100].partition);
    }
    for (i = 0; i < 3; i++) {
        assert_true(counts[i] >= 100);
    }
    weir_producer_free(p);
    free(rs.r);
}

static void test_linger_holds_batch_until_clock_moves(void **state)
{
    struct fix *f = *state;
    struct weir_producer_config pc;
    struct weir_producer *p;
    struct reports rs = {calloc(10, sizeof(struct report)), 10, 0};
    struct err_detail ed;
    uint64_t before;
    int i;

    weir_client_free(f->c);
    assert_int_equal(fix_client(f, true), 0);
    create(f, "linger", 1);
    weir_producer_config_init(&pc);
    pc.linger_ms = 1000;
    pc.on_delivery = on_delivery;
    pc.cb_arg = &rs;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    for (i = 0; i < 10; i++) {
        assert_int_equal(weir_produce(p, "linger", 0, NULL, 0, "v", 1, -1,
                                      (void *)(uintptr_t)i, &ed),
                         0);
    }
    before = fake_broker_produce_requests(f->fb);
    for (i = 0; i < 5; i++) {
        (void)weir_producer_poll(p, 10);
        f->fc.now_ms += 100; /* 500 ms of linger pass: not yet */
    }
    assert_int_equal(fake_broker_produce_requests(f->fb), before);
    assert_int_equal(rs.done, 0);
    f->fc.now_ms += 500;
    for (i = 0; i < 200 && rs.done < 10; i++) {
        (void)weir_producer_poll(p, 10);
    }
    assert_int_equal(rs.done, 10);
    assert_int_equal(fake_broker_produce_requests(f->fb), before + 1);
    assert_int_equal(rs.r[9].offset, 9);
    weir_producer_free(p);
    free(rs.r);
}

static void test_retriable_error_is_retried(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 1, -1);
    struct err_detail ed;
    uint64_t before;

    create(f, "retry", 1);
    fake_broker_fail_produce(f->fb, WEIR_ENOT_LEADER, 2);
    before = fake_broker_produce_requests(f->fb);
    assert_int_equal(weir_produce(p, "retry", 0, "k", 1, "v", 1, -1, NULL, &ed),
                     0);
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    assert_int_equal(rs.r[0].err, 0);
    assert_int_equal(rs.r[0].offset, 0);
    assert_int_equal(fake_broker_produce_requests(f->fb), before + 3);
    weir_producer_free(p);
    free(rs.r);
}

static void test_definite_error_is_reported(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 1, 1);
    struct err_detail ed;

    create(f, "fatal", 1);
    fake_broker_fail_produce(f->fb, WEIR_ECORRUPT_MESSAGE, 1);
    assert_int_equal(
        weir_produce(p, "fatal", 0, NULL, 0, "v", 1, -1, NULL, &ed), 0);
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    assert_int_equal(rs.r[0].err, WEIR_ECORRUPT_MESSAGE);
    assert_int_equal(rs.r[0].offset, -1);
    assert_int_equal(fake_broker_end_offset(f->fb, "fatal", 0), 0);
    weir_producer_free(p);
    free(rs.r);
}

static void test_definite_error_fails_only_the_batch_at_fault(void **state)
{
    struct fix *f = *state;
    struct weir_producer_config pc;
    struct weir_producer *p;
    struct reports rs = {calloc(30, sizeof(struct report)), 30, 0};
    struct err_detail ed;
    size_t failed = 0;
    int64_t next = 0;
    size_t i;

    create(f, "split", 1);
    weir_producer_config_init(&pc);
    pc.batch_size_bytes = 300; /* several batches in one request */
    pc.on_delivery = on_delivery;
    pc.cb_arg = &rs;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    /* the request fails as a whole, then the first batch alone */
    fake_broker_fail_produce(f->fb, WEIR_EMESSAGE_TOO_LARGE, 2);
    for (i = 0; i < 30; i++) {
        assert_int_equal(
            weir_produce(p, "split", 0, NULL, 0,
                         "0123456789012345678901234567890123456789", 40, -1,
                         (void *)(uintptr_t)i, &ed),
            0);
    }
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    for (i = 0; i < 30; i++) {
        if (rs.r[i].err != 0) {
            assert_int_equal(rs.r[i].err, WEIR_EMESSAGE_TOO_LARGE);
            assert_int_equal(i, failed); /* a prefix: the first batch */
            failed++;
        } else {
            assert_int_equal(rs.r[i].offset, next++);
        }
    }
    assert_true(failed > 0 && failed < 30);
    assert_int_equal(fake_broker_end_offset(f->fb, "split", 0), 30 - failed);
    weir_producer_free(p);
    free(rs.r);
}

static void test_acks_zero_reports_when_written(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 100, 0);
    struct err_detail ed;
    size_t i;

    create(f, "fire", 1);
    for (i = 0; i < 100; i++) {
        assert_int_equal(weir_produce(p, "fire", 0, NULL, 0, "v", 1, -1,
                                      (void *)(uintptr_t)i, &ed),
                         0);
    }
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    for (i = 0; i < 100; i++) {
        assert_int_equal(rs.r[i].err, 0);
        assert_int_equal(rs.r[i].offset, -1);
    }
    for (i = 0; i < 100 && fake_broker_end_offset(f->fb, "fire", 0) < 100;
         i++) {
        (void)weir_producer_poll(p, 10);
    }
    assert_int_equal(fake_broker_end_offset(f->fb, "fire", 0), 100);
    weir_producer_free(p);
    free(rs.r);
}

/* 100 records in small batches, with timestamps 1000 + offset. */
static void fill(struct fix *f, const char *topic)
{
    struct weir_producer_config pc;
    struct weir_producer *p;
    struct err_detail ed;
    char v[16];
    int i;

    create(f, topic, 1);
    weir_producer_config_init(&pc);
    pc.batch_size_bytes = 200;
    assert_int_equal(weir_producer_new(f->c, &pc, &p, NULL), 0);
    for (i = 0; i < 100; i++) {
        int n = snprintf(v, sizeof(v), "r%03d", i);
        assert_int_equal(weir_produce(p, topic, 0, NULL, 0, v, (size_t)n,
                                      1000 + i, NULL, &ed),
                         0);
    }
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    weir_producer_free(p);
}

static int64_t first_offset(struct weir_consumer *k, int *count)
{
    const struct weir_record *rec;
    struct err_detail ed;
    int64_t first = -1;
    int64_t last = -1;
    char v[16];

    *count = 0;
    for (;;) {
        assert_int_equal(weir_consumer_poll(k, 300, &rec, &ed), 0);
        if (rec == NULL) {
            return first;
        }
        if (first < 0) {
            first = rec->offset;
        }
        assert_int_equal(rec->offset, last < 0 ? first : last + 1);
        last = rec->offset;
        (void)snprintf(v, sizeof(v), "r%03d", (int)rec->offset);
        assert_int_equal(rec->value_len, strlen(v));
        assert_memory_equal(rec->value, v, rec->value_len);
        assert_int_equal(rec->timestamp, 1000 + rec->offset);
        (*count)++;
    }
}

static void test_consumer_starts(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *k;
    int count;

    fill(f, "starts");
    k = consumer(f, "starts", 1, WEIR_START_EARLIEST, 0);
    assert_int_equal(first_offset(k, &count), 0);
    assert_int_equal(count, 100);
    weir_consumer_free(k);
    k = consumer(f, "starts", 1, WEIR_START_OFFSET, 37);
    assert_int_equal(first_offset(k, &count), 37);
    assert_int_equal(count, 63);
    weir_consumer_free(k);
    k = consumer(f, "starts", 1, WEIR_START_TIMESTAMP, 1050);
    assert_int_equal(first_offset(k, &count), 50);
    assert_int_equal(count, 50);
    weir_consumer_free(k);
    k = consumer(f, "starts", 1, WEIR_START_TIMESTAMP, 99999);
    assert_int_equal(weir_consumer_position(k, "starts", 0), 100);
    assert_int_equal(first_offset(k, &count), -1);
    weir_consumer_free(k);
    k = consumer(f, "starts", 1, WEIR_START_LATEST, 0);
    assert_int_equal(weir_consumer_position(k, "starts", 0), 100);
    assert_int_equal(first_offset(k, &count), -1);
    weir_consumer_free(k);
}

static void test_consumer_tolerates_partial_batches(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *k;
    int count;

    fill(f, "partial");
    fake_broker_truncate_fetch(f->fb, 9);
    k = consumer(f, "partial", 1, WEIR_START_OFFSET, 3);
    assert_int_equal(first_offset(k, &count), 3);
    assert_int_equal(count, 97);
    fake_broker_truncate_fetch(f->fb, 0);
    weir_consumer_free(k);
}

static void test_consumer_seek_rewinds(void **state)
{
    struct fix *f = *state;
    const struct weir_record *rec;
    struct weir_consumer *k;
    struct err_detail ed;
    int count;

    fill(f, "seek");
    k = consumer(f, "seek", 1, WEIR_START_EARLIEST, 0);
    assert_int_equal(weir_consumer_poll(k, 1000, &rec, &ed), 0);
    assert_int_equal(rec->offset, 0);
    assert_int_equal(weir_consumer_seek(k, "seek", 0, 90, &ed), 0);
    assert_int_equal(first_offset(k, &count), 90);
    assert_int_equal(count, 10);
    assert_int_equal(weir_consumer_seek(k, "seek", 5, 0, &ed), WEIR_ENOT_FOUND);
    weir_consumer_free(k);
}

static void test_offset_out_of_range_is_reported(void **state)
{
    struct fix *f = *state;
    const struct weir_record *rec;
    struct weir_consumer *k;
    struct err_detail ed;

    create(f, "empty", 1);
    k = consumer(f, "empty", 1, WEIR_START_OFFSET, 1000);
    assert_int_equal(weir_consumer_poll(k, 2000, &rec, &ed),
                     WEIR_EOFFSET_OUT_OF_RANGE);
    assert_non_null(strstr(ed.msg, "empty/0"));
    weir_consumer_free(k);
}

static void test_admin_calls(void **state)
{
    struct fix *f = *state;
    struct weir_new_topic t = {"adm", 3, 0, NULL, 0};
    struct weir_topic_list *l;
    struct weir_topic_desc *d;
    struct weir_offset_result *res;
    struct err_detail ed;
    size_t n;

    assert_int_equal(weir_admin_create_topic(f->c, &t, &ed), 0);
    assert_int_equal(weir_admin_create_topic(f->c, &t, &ed),
                     WEIR_ETOPIC_EXISTS);
    assert_string_equal(ed.msg, "topic 'adm' already exists");
    t.name = "bad/name";
    assert_int_equal(weir_admin_create_topic(f->c, &t, &ed),
                     WEIR_EINVALID_TOPIC);
    assert_int_equal(weir_admin_list_topics(f->c, false, &l, &ed), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->names[0], "adm");
    weir_topic_list_free(l);
    assert_int_equal(weir_admin_describe_topic(f->c, "adm", &d, &ed), 0);
    assert_int_equal(d->n_partitions, 3);
    assert_int_equal(d->partitions[2].partition, 2);
    assert_int_equal(d->partitions[2].leader, 1);
    assert_int_equal(d->partitions[2].n_isr, 1);
    assert_int_equal(d->partitions[2].end_offset, 0);
    weir_topic_desc_free(d);
    assert_int_equal(weir_admin_list_offsets(f->c, "adm", -1,
                                             WEIR_OFFSET_LATEST, &res, &n, &ed),
                     0);
    assert_int_equal(n, 3);
    assert_int_equal(res[1].partition, 1);
    assert_int_equal(res[1].offset, 0);
    weir_offsets_free(res);
    assert_int_equal(weir_admin_list_offsets(f->c, "adm", 7, WEIR_OFFSET_LATEST,
                                             &res, &n, &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(weir_admin_delete_topic(f->c, "adm", &ed), 0);
    assert_int_equal(weir_admin_describe_topic(f->c, "adm", &d, &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_string_equal(ed.msg, "topic 'adm' does not exist");
    assert_int_equal(weir_admin_delete_topic(f->c, "adm", &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
}

static void test_unknown_topic_is_named(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 1, -1);
    struct err_detail ed;
    int32_t n;

    assert_int_equal(weir_produce(p, "nope", 0, NULL, 0, "v", 1, -1, NULL, &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_string_equal(ed.msg, "topic 'nope' does not exist");
    assert_int_equal(weir_client_partition_count(f->c, "nope", &n, &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    create(f, "two", 2);
    assert_int_equal(weir_produce(p, "two", 2, NULL, 0, "v", 1, -1, NULL, &ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_string_equal(ed.msg, "topic 'two' has no partition 2 (it has 2)");
    weir_producer_free(p);
    assert_int_equal(rs.done, 0);
    free(rs.r);
}

static void test_unreachable_broker_is_named(void **state)
{
    struct weir_client_config cfg;
    struct weir_client *c;
    struct err_detail ed;
    int32_t n;

    (void)state;
    weir_client_config_init(&cfg);
    cfg.bootstrap = "127.0.0.1:1";
    assert_int_equal(weir_client_new(&cfg, &c, &ed), 0);
    assert_int_equal(weir_client_partition_count(c, "t", &n, &ed),
                     WEIR_ENETWORK);
    assert_string_equal(ed.msg,
                        "cannot connect to 127.0.0.1:1: Connection refused");
    weir_client_free(c);
    cfg.bootstrap = "127.0.0.1:1,127.0.0.1:2";
    assert_int_equal(weir_client_new(&cfg, &c, &ed), 0);
    assert_int_equal(weir_client_partition_count(c, "t", &n, &ed),
                     WEIR_ENETWORK);
    assert_non_null(strstr(ed.msg, "no broker reachable"));
    assert_non_null(strstr(ed.msg, "127.0.0.1:2: Connection refused"));
    weir_client_free(c);
}

static void test_produce_free_reports_unsent(void **state)
{
    struct fix *f = *state;
    struct reports rs;
    struct weir_producer *p = producer(f, &rs, 3, -1);
    struct err_detail ed;
    size_t i;

    create(f, "drop", 1);
    for (i = 0; i < 3; i++) {
        assert_int_equal(weir_produce(p, "drop", 0, NULL, 0, "v", 1, -1,
                                      (void *)(uintptr_t)i, &ed),
                         0);
    }
    weir_producer_free(p);
    assert_int_equal(rs.done, 3);
    assert_int_equal(rs.r[0].err, WEIR_ESHUTTING_DOWN);
    free(rs.r);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_keyed_records_round_trip),
        T(test_keyless_records_stick_then_move),
        T(test_linger_holds_batch_until_clock_moves),
        T(test_retriable_error_is_retried),
        T(test_definite_error_is_reported),
        T(test_definite_error_fails_only_the_batch_at_fault),
        T(test_acks_zero_reports_when_written),
        T(test_consumer_starts),
        T(test_consumer_tolerates_partial_batches),
        T(test_consumer_seek_rewinds),
        T(test_offset_out_of_range_is_reported),
        T(test_admin_calls),
        T(test_unknown_topic_is_named),
        T(test_unreachable_broker_is_named),
        T(test_produce_free_reports_unsent),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
