/* SPDX-License-Identifier: Apache-2.0 */
/* Group consumers against the fake broker's coordinator, in real time:
 * two members share six partitions (one owner per partition per
 * generation), commits survive a rejoin, close hands partitions over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/cli/cli.h"
#include "client/weir.h"
#include "test_client_fake_broker.h"

#define NPART 6
#define NREC  5 /* per partition */

struct fix {
    struct fake_broker *fb;
    struct weir_client *c[3];
};

static int fix_client(struct fix *f, int i)
{
    struct weir_client_config cfg;
    char bs[64];
    char id[16];

    weir_client_config_init(&cfg);
    (void)snprintf(bs, sizeof(bs), "127.0.0.1:%u", fake_broker_port(f->fb));
    (void)snprintf(id, sizeof(id), "c%d", i);
    cfg.bootstrap = bs;
    cfg.client_id = id;
    cfg.request_timeout_ms = 5000;
    return weir_client_new(&cfg, &f->c[i], NULL);
}

static void fix_produce(struct fix *f)
{
    struct weir_producer_config pc;
    struct weir_producer *p;
    struct err_detail ed;
    int32_t part;
    int i;

    weir_producer_config_init(&pc);
    assert_int_equal(weir_producer_new(f->c[0], &pc, &p, &ed), 0);
    for (part = 0; part < NPART; part++) {
        for (i = 0; i < NREC; i++) {
            assert_int_equal(
                weir_produce(p, "orders", part, NULL, 0, "v", 1, -1, NULL, &ed),
                0);
        }
    }
    assert_int_equal(weir_producer_flush(p, 5000, &ed), 0);
    weir_producer_free(p);
}

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));
    int i;

    if (f == NULL || fake_broker_start(0, &f->fb) != 0 ||
        fake_broker_create_topic(f->fb, "orders", NPART) != 0) {
        return -1;
    }
    for (i = 0; i < 3; i++) {
        if (fix_client(f, i) != 0) {
            return -1;
        }
    }
    fix_produce(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;
    int i;

    for (i = 0; i < 3; i++) {
        weir_client_free(f->c[i]);
    }
    fake_broker_stop(f->fb);
    free(f);
    return 0;
}

static struct weir_consumer *
member(struct fix *f, int i, const char *group, enum weir_start reset)
{
    struct weir_consumer_config kc;
    struct weir_consumer *k;
    struct err_detail ed;
    const char *topics[] = {"orders"};

    weir_consumer_config_init(&kc);
    kc.fetch_max_wait_ms = 20;
    kc.group_id = group;
    kc.session_timeout_ms = 3000;
    kc.heartbeat_interval_ms = 100;
    kc.rebalance_timeout_ms = 2000;
    kc.auto_commit_interval_ms = 200;
    kc.reset = reset;
    assert_int_equal(weir_consumer_new(f->c[i], &kc, &k, &ed), 0);
    assert_int_equal(weir_consumer_subscribe(k, topics, 1, &ed), 0);
    return k;
}

/* Records seen, by partition and offset. */
struct seen {
    int count[NPART][NREC];
    int total;
};

static void poll_once(struct weir_consumer *k, struct seen *s)
{
    const struct weir_record *rec;
    struct err_detail ed;

    assert_int_equal(weir_consumer_poll(k, 10, &rec, &ed), 0);
    if (rec != NULL && s != NULL) {
        assert_true(rec->partition >= 0 && rec->partition < NPART);
        assert_true(rec->offset >= 0 && rec->offset < NREC);
        s->count[rec->partition][rec->offset]++;

        s->total++;
    }
}

static size_t owned(struct weir_consumer *k, int *owner, int who)
{
    struct weir_topic_partition tps[NPART * 2];
    size_t n = weir_consumer_assignment(k, tps, NPART * 2);
    size_t i;

    assert_true(n <= NPART);
    for (i = 0; i < n && owner != NULL; i++) {
        assert_int_equal(owner[tps[i].partition], -1); /* one owner */
        owner[tps[i].partition] = who;
    }
    return n;
}

/* Poll both until they are in the same generation as the coordinator and
 * own every partition between them, exactly once. */
static void wait_split(struct fix *f,
                       struct weir_consumer *a,
                       struct weir_consumer *b,
                       struct seen *s)
{
    int owner[NPART];
    int tries;
    int32_t gen;

    for (tries = 0; tries < 1000; tries++) {
        poll_once(a, s);
        poll_once(b, s);
        gen = fake_broker_group_generation(f->fb, "g");
        if (weir_consumer_generation(a) != gen ||
            weir_consumer_generation(b) != gen) {
            continue;
        }
        memset(owner, -1, sizeof(owner));
        if (owned(a, owner, 0) + owned(b, owner, 1) == NPART) {
            assert_int_equal(owned(a, NULL, 0), NPART / 2); /* range */
            return;
        }
    }
    fail_msg("the group did not settle");
}

static void test_two_members_share_six_partitions(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *a = member(f, 0, "g", WEIR_START_EARLIEST);
    struct weir_consumer *b;
    struct seen s;
    int tries;
    int p;
    int o;

    memset(&s, 0, sizeof(s));
    for (tries = 0; tries < 500 && owned(a, NULL, 0) < NPART; tries++) {
        poll_once(a, &s);
    }
    assert_int_equal(owned(a, NULL, 0), NPART);
    assert_true(weir_consumer_generation(a) >= 1);

    b = member(f, 1, "g", WEIR_START_EARLIEST);
    wait_split(f, a, b, &s);
    for (tries = 0; tries < 2000 && s.total < NPART * NREC; tries++) {
        poll_once(a, &s);
        poll_once(b, &s);
    }
    /* commit on revoke: the rebalance neither lost nor repeated records */
    for (p = 0; p < NPART; p++) {
        for (o = 0; o < NREC; o++) {
            assert_int_equal(s.count[p][o], 1);
        }
    }

    weir_consumer_free(b); /* commits and leaves: a takes everything */
    for (tries = 0; tries < 1000 && owned(a, NULL, 0) < NPART; tries++) {
        poll_once(a, &s);
    }
    assert_int_equal(owned(a, NULL, 0), NPART);
    assert_int_equal(weir_consumer_generation(a),
                     fake_broker_group_generation(f->fb, "g"));
    weir_consumer_free(a);
    for (p = 0; p < NPART; p++) {
        assert_int_equal(fake_broker_committed(f->fb, "g", "orders", p), NREC);
    }
}

static void test_committed_offsets_come_back_after_rejoin(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *a = member(f, 0, "g", WEIR_START_EARLIEST);
    struct weir_consumer *c;
    struct err_detail ed;
    struct seen s;
    int tries;
    int p;

    memset(&s, 0, sizeof(s));
    for (tries = 0; tries < 2000 && s.total < 3 * NREC; tries++) {
        poll_once(a, &s);
    }
    assert_int_equal(weir_consumer_commit(a, true, &ed), 0);
    assert_int_equal(weir_consumer_close(a, &ed), 0);
    weir_consumer_free(a);

    c = member(f, 2, "g", WEIR_START_EARLIEST);
    for (tries = 0; tries < 500 && owned(c, NULL, 0) < NPART; tries++) {
        poll_once(c, &s);
    }
    for (p = 0; p < NPART; p++) {
        int64_t committed = fake_broker_committed(f->fb, "g", "orders", p);
        int64_t pos = weir_consumer_position(c, "orders", p);
        assert_true(committed >= 0);
        /* a position at the commit, or past it by what c read since */
        assert_true(pos >= committed);
    }
    for (tries = 0; tries < 2000 && s.total < NPART * NREC; tries++) {
        poll_once(c, &s);
    }
    assert_int_equal(s.total, NPART * NREC); /* nothing twice */
    weir_consumer_free(c);
}

static void test_reset_none_fails_without_commit(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *k = member(f, 0, "fresh", WEIR_START_OFFSET);
    const struct weir_record *rec;
    struct err_detail ed;
    int tries;
    int rv = 0;

    for (tries = 0; tries < 500 && rv == 0; tries++) {
        rv = weir_consumer_poll(k, 10, &rec, &ed);
    }
    assert_int_equal(rv, WEIR_EOFFSET_OUT_OF_RANGE);
    assert_non_null(strstr(ed.msg, "no committed offset"));
    /* seeking gives the application its way out */
    assert_int_equal(
        weir_consumer_seek_to(k, "orders", 0, WEIR_START_EARLIEST, 0, &ed), 0);
    weir_consumer_free(k);
}

static void test_subscribe_needs_a_group(void **state)
{
    struct fix *f = *state;
    struct weir_consumer_config kc;
    struct weir_consumer *k;
    struct err_detail ed;
    const char *topics[] = {"orders"};

    weir_consumer_config_init(&kc);
    assert_int_equal(weir_consumer_new(f->c[0], &kc, &k, &ed), 0);
    assert_int_equal(weir_consumer_subscribe(k, topics, 1, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(weir_consumer_commit(k, true, &ed),
                     WEIR_EINVALID_ARGUMENT);
    weir_consumer_free(k);
    kc.group_id = "g";
    kc.heartbeat_interval_ms = 5000; /* more than a third of 10 s */
    assert_int_equal(weir_consumer_new(f->c[0], &kc, &k, &ed),
                     WEIR_EINVALID_ARGUMENT);
    kc.heartbeat_interval_ms = 3000;
    kc.strategies = "range,fastest";
    assert_int_equal(weir_consumer_new(f->c[0], &kc, &k, &ed),
                     WEIR_EINVALID_ARGUMENT);
}

static void test_admin_sees_members_offsets_and_lag(void **state)
{
    struct fix *f = *state;
    struct weir_consumer *a = member(f, 0, "g", WEIR_START_EARLIEST);
    struct weir_group_offsets *o = NULL;
    struct weir_group_desc *d = NULL;
    struct weir_group_list *l = NULL;
    struct weir_group_offset reset = {"orders", 0, 1, -1, -1, -1};
    struct err_detail ed;
    struct seen s;
    int tries;

    memset(&s, 0, sizeof(s));
    for (tries = 0; tries < 2000 && s.total < NREC; tries++) {
        poll_once(a, &s);
    }
    assert_int_equal(weir_consumer_commit(a, true, &ed), 0);
    assert_int_equal(weir_admin_list_groups(f->c[1], &l, &ed), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->groups[0].group, "g");
    assert_string_equal(l->groups[0].state, "Stable");
    weir_group_list_free(l);
    assert_int_equal(weir_admin_describe_group(f->c[1], "g", &d, &ed), 0);
    assert_int_equal(d->n_members, 1);
    assert_int_equal(d->members[0].n_partitions, NPART);
    assert_string_equal(d->protocol, "range");
    weir_group_desc_free(d);
    assert_int_equal(weir_admin_group_offsets(f->c[1], "g", NULL, &o, &ed), 0);
    assert_int_equal(weir_admin_group_lag(f->c[1], o, &ed), 0);
    assert_true(o->n >= 1);
    assert_int_equal(o->o[0].log_end, NREC);
    assert_int_equal(o->o[0].lag, NREC - o->o[0].offset);
    weir_group_offsets_free(o);
    /* an operator commit into a live group is refused */
    assert_int_equal(
        weir_admin_commit_group_offsets(f->c[1], "g", &reset, 1, &ed),
        WEIR_ENON_EMPTY_GROUP);
    assert_int_equal(weir_admin_delete_group(f->c[1], "g", &ed),
                     WEIR_ENON_EMPTY_GROUP);
    weir_consumer_free(a);
    assert_int_equal(
        weir_admin_commit_group_offsets(f->c[1], "g", &reset, 1, &ed), 0);
    assert_int_equal(fake_broker_committed(f->fb, "g", "orders", 0), 1);
    assert_int_equal(weir_admin_delete_group(f->c[1], "g", &ed), 0);
    assert_int_equal(weir_admin_describe_group(f->c[1], "g", &d, &ed),
                     WEIR_EGROUP_NOT_FOUND);
}

static void test_cli_parses_durations_and_partition_lists(void **state)
{
    int32_t parts[4];
    char topic[32];
    int64_t ms;
    size_t n;

    (void)state;
    assert_int_equal(cli_parse_duration("P1DT2H30M10S", &ms), 0);
    assert_int_equal(ms, 86400000 + 2 * 3600000 + 30 * 60000 + 10000);
    assert_int_equal(cli_parse_duration("PT15M", &ms), 0);
    assert_int_equal(ms, 15 * 60000);
    assert_int_equal(cli_parse_duration("P2D", &ms), 0);
    assert_int_equal(ms, 2 * 86400000LL);
    assert_int_equal(cli_parse_duration("P", &ms), -1);
    assert_int_equal(cli_parse_duration("PT", &ms), -1);
    assert_int_equal(cli_parse_duration("P1H", &ms), -1); /* H needs T */
    assert_int_equal(cli_parse_duration("PT1M1H", &ms), -1);
    assert_int_equal(cli_parse_duration("1D", &ms), -1);
    assert_int_equal(
        cli_parse_topic_parts("orders", topic, sizeof(topic), parts, 4, &n), 0);
    assert_string_equal(topic, "orders");
    assert_int_equal(n, 0);
    assert_int_equal(
        cli_parse_topic_parts("orders:0,3", topic, sizeof(topic), parts, 4, &n),
        0);
    assert_int_equal(n, 2);
    assert_int_equal(parts[1], 3);
    assert_int_equal(
        cli_parse_topic_parts("orders:", topic, sizeof(topic), parts, 4, &n),
        -1);
    assert_int_equal(
        cli_parse_topic_parts("orders:1,x", topic, sizeof(topic), parts, 4, &n),
        -1);
    assert_int_equal(
        cli_parse_topic_parts(":1", topic, sizeof(topic), parts, 4, &n), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_two_members_share_six_partitions),
        T(test_committed_offsets_come_back_after_rejoin),
        T(test_reset_none_fails_without_commit),
        T(test_subscribe_needs_a_group),
        T(test_admin_sees_members_offsets_and_lag),
        T(test_cli_parses_durations_and_partition_lists),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
