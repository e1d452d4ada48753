/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core, topics: round-robin placement with preferred leaders
 * spread, rack awareness, the replication factor default and cap, config
 * checks and defaults, refusals, deletion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_ctl_fixture.h"

static int create_with(struct ctl_fixture *f,
                       const char *name,
                       int32_t partitions,
                       int32_t rf,
                       const struct ctl_kv *configs,
                       uint32_t n_configs)
{
    struct ctl_event ev = {.type = CTL_EV_CREATE_TOPIC};

    ev.u.create.name = name;
    ev.u.create.partitions = partitions;
    ev.u.create.replication_factor = rf;
    ev.u.create.configs = configs;
    ev.u.create.n_configs = n_configs;
    return fx_step(f, &ev);
}

static void join_range(struct ctl_fixture *f,
                       int32_t from,
                       int32_t to,
                       const char *const *racks)
{
    int32_t id;

    for (id = from; id <= to; id++) {
        fx_join(f, id, racks != NULL ? racks[id - from] : NULL);
    }
}

static uint32_t leads(const struct ctl_fixture *f, int32_t id)
{
    return meta_image_broker(fx_image(f), id)->n_led;
}

static void test_round_robin_placement(void **state)
{
    struct ctl_fixture *f = *state;
    const struct meta_topic *topic;
    int64_t t;
    int32_t p;
    uint32_t r;
    uint32_t count[4] = {0};

    join_range(f, 1, 3, NULL);
    t = fx_create(f, "rr", 6, 3);
    assert_true(t >= 0);
    topic = meta_image_topic(fx_image(f), t);
    for (p = 0; p < 6; p++) {
        const struct meta_partition *part = &topic->partitions[p];
        const struct meta_partition *next = &topic->partitions[(p + 1) % 6];
        assert_int_equal(part->replicas.n, 3);
        /* consecutive partitions start one broker further round the ring */
        assert_int_equal(next->replicas.ids[0], part->replicas.ids[1]);
        for (r = 0; r < 3; r++) {
            assert_int_equal(part->replicas.ids[(r + 1) % 3],
                             part->replicas.ids[r] % 3 + 1);
            count[part->replicas.ids[r]]++;
        }
        assert_true(fx_ids_are(&part->isr, part->replicas.ids, 3));
        assert_int_equal(part->leader, part->replicas.ids[0]);
        assert_int_equal(part->leader_epoch, 0);
        assert_int_equal(part->partition_epoch, 0);
    }
    for (r = 1; r <= 3; r++) {
        assert_int_equal(count[r], 6);
        assert_int_equal(leads(f, (int32_t)r), 2);
    }
}

/* For many broker and partition counts, no broker leads more than one
 * partition more than another, and replicas are distinct. */
static void test_preferred_leaders_spread_evenly(void **state)
{
    struct ctl_fixture *f = *state;
    int32_t brokers;
    int32_t parts;
    char name[32];

    join_range(f, 0, 7, NULL);
    for (brokers = 1; brokers <= 8; brokers++) {
        for (parts = 1; parts <= 13; parts += 3) {
            int32_t rf = brokers < 3 ? brokers : 3;
            uint32_t min_led = UINT32_MAX;
            uint32_t max_led = 0;
            int64_t t;
            int32_t id;
            int32_t p;
            (void)snprintf(name, sizeof(name), "s%d-%d", brokers, parts);
            /* only brokers 0..brokers-1 are unfenced while placing */
            for (id = brokers; id < 8; id++) {
                assert_int_equal(fx_shutdown(f, id), 0);
            }
            t = fx_create(f, name, parts, rf);
            assert_true(t >= 0);
            for (p = 0; p < parts; p++) {
                const struct meta_partition *part = fx_part(f, t, p);
                uint32_t i;
                uint32_t j;
                for (i = 0; i < part->replicas.n; i++) {
                    assert_true(part->replicas.ids[i] < brokers);
                    for (j = 0; j < i; j++) {
                        assert_int_not_equal(part->replicas.ids[i],
                                             part->replicas.ids[j]);
                    }
                }
            }
            for (id = 0; id < brokers; id++) {
                uint32_t n = 0;
                for (p = 0; p < parts; p++) {
                    n += fx_part(f, t, p)->leader == id;
                }
                min_led = n < min_led ? n : min_led;
                max_led = n > max_led ? n : max_led;
            }
            assert_true(max_led - min_led <= 1);
            for (id = brokers; id < 8; id++) {
                fx_join(f, id, NULL);
            }
        }
    }
}

static bool racks_distinct(const struct ctl_fixture *f,
                           const struct meta_partition *p)
{
    uint32_t i;
    uint32_t j;

    for (i = 0; i < p->replicas.n; i++) {
        for (j = 0; j < i; j++) {
            if (strcmp(
                    meta_image_broker(fx_image(f), p->replicas.ids[i])->rack,
                    meta_image_broker(fx_image(f), p->replicas.ids[j])->rack) ==
                0) {
                return false;
            }
        }
    }
    return true;
}

static void test_rack_aware_placement(void **state)
{
    struct ctl_fixture *f = *state;
    /* ids 1..6, racks given out of id order on purpose */
    static const char *const racks[] = {"a", "a", "b", "c", "b", "c"};
    int64_t t;
    int32_t p;
    int32_t id;

    join_range(f, 1, 6, racks);
    t = fx_create(f, "racked", 12, 3);
    for (p = 0; p < 12; p++) {
        assert_true(racks_distinct(f, fx_part(f, t, p)));
    }
    for (id = 1; id <= 6; id++) {
        assert_int_equal(leads(f, id), 2);
    }
    /* RF 2 also never puts both replicas on one rack */
    t = fx_create(f, "racked2", 12, 2);
    for (p = 0; p < 12; p++) {
        assert_true(racks_distinct(f, fx_part(f, t, p)));
    }
}

/* With fewer racks than replicas every rack is used, and with one big
 * rack the lone broker of the other rack is in every partition. */
static void test_rack_aware_with_uneven_racks(void **state)
{
    struct ctl_fixture *f = *state;
    static const char *const racks[] = {"big", "big", "big", "big", "small"};
    int64_t t;
    int32_t p;

    join_range(f, 1, 5, racks);
    t = fx_create(f, "uneven", 10, 2);
    for (p = 0; p < 10; p++) {
        assert_true(racks_distinct(f, fx_part(f, t, p)));
        assert_true(meta_ids_has(&fx_part(f, t, p)->replicas, 5));
    }
    t = fx_create(f, "wide", 10, 3);
    for (p = 0; p < 10; p++) {
        assert_true(meta_ids_has(&fx_part(f, t, p)->replicas, 5));
    }
}

static void test_replication_factor_default_and_cap(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;

    /* no broker yet: try again later */
    assert_int_equal(create_with(f, "none", 1, 0, NULL, 0),
                     WEIR_ENOT_ENOUGH_REPLICAS);
    fx_join(f, 1, NULL);
    t = fx_create(f, "one", 0, 0);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 1);
    assert_int_equal(meta_image_topic(fx_image(f), t)->n_partitions, 1);
    assert_string_equal(
        meta_topic_config(meta_image_topic(fx_image(f), t),
                          "min.insync.replicas"),
        "1"); /* the default 2, capped at the replication factor */
    fx_join(f, 2, NULL);
    t = fx_create(f, "two", 1, 0);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 2);
    fx_join(f, 3, NULL);
    fx_join(f, 4, NULL);
    fx_join(f, 5, NULL);
    t = fx_create(f, "three", 1, 0);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 3);
    assert_string_equal(meta_topic_config(meta_image_topic(fx_image(f), t),
                                          "min.insync.replicas"),
                        "2");
    t = fx_create(f, "five", 1, 5);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 5);
    /* fenced brokers get no replicas, and a factor they would be needed
     * for waits (retriably) until they are back */
    assert_int_equal(fx_shutdown(f, 4), 0);
    assert_int_equal(fx_shutdown(f, 5), 0);
    assert_int_equal(create_with(f, "six", 1, 4, NULL, 0),
                     WEIR_ENOT_ENOUGH_REPLICAS);
    assert_int_equal(f->out.n_records, 0);
    assert_int_equal(create_with(f, "six", 1, 6, NULL, 0),
                     WEIR_EINVALID_REPLICATION_FACTOR);
    t = fx_create(f, "dflt", 8, 0);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 3);
    assert_int_equal(leads(f, 4), 0);
    assert_int_equal(leads(f, 5), 0);
    assert_int_equal(create_with(f, "neg", 1, -1, NULL, 0),
                     WEIR_EINVALID_REPLICATION_FACTOR);
    assert_int_equal(create_with(f, "big", 1, META_MAX_REPLICAS + 1, NULL, 0),
                     WEIR_EINVALID_REPLICATION_FACTOR);
}

/* The default factor is capped at the brokers registered, not at those in
 * service: with two of three down, a topic (like __consumer_offsets on a
 * group's first request) is refused retriably rather than made with one
 * replica for ever, and made with three once they are back. */
static void test_default_rf_not_lowered_while_brokers_down(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t end;
    int64_t t;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    assert_int_equal(fx_shutdown(f, 2), 0);
    assert_int_equal(fx_shutdown(f, 3), 0);
    end = meta_image_end_offset(fx_image(f));
    assert_int_equal(create_with(f, "__consumer_offsets", 4, 0, NULL, 0),
                     WEIR_ENOT_ENOUGH_REPLICAS);
    assert_true(weir_err_retriable(f->out.result));
    assert_non_null(strstr(f->out.detail.msg, "replication factor 3"));
    assert_non_null(strstr(f->out.detail.msg, "1 of 3"));
    assert_int_equal(create_with(f, "explicit", 1, 3, NULL, 0),
                     WEIR_ENOT_ENOUGH_REPLICAS);
    assert_int_equal(meta_image_end_offset(fx_image(f)), end);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t = fx_create(f, "__consumer_offsets", 4, 0);
    assert_int_equal(fx_part(f, t, 0)->replicas.n, 3);
    assert_string_equal(meta_topic_config(meta_image_topic(fx_image(f), t),
                                          "min.insync.replicas"),
                        "2");
}

static void test_bad_requests_are_refused(void **state)
{
    struct ctl_fixture *f = *state;
    char long_name[260];
    int64_t end;

    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    fx_join(f, 1, NULL);
    assert_true(fx_create(f, "taken", 1, 1) >= 0);
    end = meta_image_end_offset(fx_image(f));
    assert_int_equal(create_with(f, NULL, 1, 1, NULL, 0), WEIR_EINVALID_TOPIC);
    assert_int_equal(create_with(f, "", 1, 1, NULL, 0), WEIR_EINVALID_TOPIC);
    assert_int_equal(create_with(f, "..", 1, 1, NULL, 0), WEIR_EINVALID_TOPIC);
    assert_int_equal(create_with(f, "a/b", 1, 1, NULL, 0), WEIR_EINVALID_TOPIC);
    assert_int_equal(create_with(f, long_name, 1, 1, NULL, 0),
                     WEIR_EINVALID_TOPIC);
    assert_int_equal(create_with(f, "taken", 1, 1, NULL, 0),
                     WEIR_ETOPIC_EXISTS);
    assert_non_null(strstr(f->out.detail.msg, "taken"));
    assert_int_equal(create_with(f, "p", -1, 1, NULL, 0),
                     WEIR_EINVALID_PARTITIONS);
    assert_int_equal(create_with(f, "p", META_MAX_PARTITIONS + 1, 1, NULL, 0),
                     WEIR_EINVALID_PARTITIONS);
    assert_int_equal(meta_image_end_offset(fx_image(f)), end);
    assert_int_equal(f->out.topic_id, -1);
}

static void test_configs_are_checked_and_recorded(void **state)
{
    struct ctl_fixture *f = *state;
    static const char *const bad_min_isr[] = {"0", "4",  "-1",         "2x",
                                              "",  " 2", "99999999999"};
    struct ctl_kv kv[3];
    const struct meta_topic *topic;
    size_t i;
    int64_t t;

    join_range(f, 1, 3, NULL);
    for (i = 0; i < sizeof(bad_min_isr) / sizeof(bad_min_isr[0]); i++) {
        kv[0].key = "min.insync.replicas";
        kv[0].value = bad_min_isr[i];
        assert_int_equal(create_with(f, "c", 1, 3, kv, 1),
                         WEIR_EINVALID_CONFIG);
    }
    kv[0].key = "retention.ms";
    kv[0].value = "1000";
    kv[1].key = "retention.ms";
    kv[1].value = "2000";
    assert_int_equal(create_with(f, "c", 1, 3, kv, 2), WEIR_EINVALID_CONFIG);
    kv[1].key = "bad key";
    assert_int_equal(create_with(f, "c", 1, 3, kv, 2), WEIR_EINVALID_CONFIG);
    kv[1].key = NULL;
    assert_int_equal(create_with(f, "c", 1, 3, kv, 2), WEIR_EINVALID_CONFIG);
    kv[1].key = "k";
    kv[1].value = NULL;
    assert_int_equal(create_with(f, "c", 1, 3, kv, 2), WEIR_EINVALID_CONFIG);
    assert_int_equal(create_with(f, "c", 1, 3, NULL, 2), WEIR_EINVALID_CONFIG);
    assert_int_equal(create_with(f, "c", 1, 3, kv, META_MAX_CONFIGS),
                     WEIR_EINVALID_CONFIG);
    kv[1].key = "cleanup.policy";
    kv[1].value = "delete";
    kv[2].key = "min.insync.replicas";
    kv[2].value = "3";
    assert_int_equal(create_with(f, "c", 2, 3, kv, 3), 0);
    t = f->out.topic_id;
    /* the batch: CREATE_TOPIC at the topic id's offset, configs as given
     * (min.insync.replicas given, so not defaulted), then partitions */
    assert_int_equal(f->out.first_offset, t);
    assert_int_equal(f->out.n_records, 1 + 3 + 2);
    assert_int_equal(f->out.records[0].type, META_RECORD_CREATE_TOPIC);
    for (i = 1; i <= 3; i++) {
        assert_int_equal(f->out.records[i].type, META_RECORD_TOPIC_CONFIG);
    }
    assert_int_equal(f->out.records[4].type, META_RECORD_PARTITION);
    topic = meta_image_topic(fx_image(f), t);
    assert_int_equal(topic->n_configs, 3);
    assert_string_equal(meta_topic_config(topic, "retention.ms"), "1000");
    assert_string_equal(meta_topic_config(topic, "min.insync.replicas"), "3");
    fx_assert_replay_equal(f);
}

static void test_delete_topic(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_event ev = {.type = CTL_EV_DELETE_TOPIC};
    int64_t t;
    int64_t again;

    join_range(f, 1, 3, NULL);
    t = fx_create(f, "gone", 3, 3);
    ev.u.del.name = "nope";
    assert_int_equal(fx_step(f, &ev), WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    ev.u.del.name = NULL;
    assert_int_equal(fx_step(f, &ev), WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    ev.u.del.name = "gone";
    assert_int_equal(fx_step(f, &ev), 0);
    assert_int_equal(f->out.topic_id, t);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_REMOVE_TOPIC);
    assert_null(meta_image_topic(fx_image(f), t));
    assert_int_equal(leads(f, 1) + leads(f, 2) + leads(f, 3), 0);
    assert_int_equal(fx_step(f, &ev), WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    /* a new topic of the same name is a different topic */
    again = fx_create(f, "gone", 1, 1);
    assert_true(again > t);
    fx_assert_replay_equal(f);
}

/* Configs the brokers could not apply are refused with INVALID_CONFIG
 * naming the key, before any record is written; the valid ones around
 * them do not make the topic half-created. */
static void test_bad_configs_are_refused_naming_the_key(void **state)
{
    struct ctl_fixture *f = *state;
    static const struct ctl_kv bad[] = {
        {"retention.ms", "abc"},       {"cleanup.policy", "banana"},
        {"nosuch.key", "1"},           {"segment.bytes", "1"},
        {"flush.policy", "sometimes"}, {"min.cleanable.dirty.ratio", "2"},
        {"max.message.bytes", "-1"},
    };
    struct ctl_kv kv[2];
    int64_t end;
    size_t i;

    join_range(f, 1, 3, NULL);
    end = meta_image_end_offset(fx_image(f));
    kv[0].key = "retention.ms";
    kv[0].value = "604800000";
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kv[1] = bad[i];
        assert_int_equal(create_with(f, "t", 1, 3, kv, 2),
                         WEIR_EINVALID_CONFIG);
        assert_non_null(strstr(f->out.detail.msg, bad[i].key));
        assert_int_equal(f->out.n_records, 0);
        assert_int_equal(meta_image_end_offset(fx_image(f)), end);
        assert_null(meta_image_topic_by_name(fx_image(f), "t", 1));
    }
    assert_non_null(strstr(f->out.detail.msg, "expected an integer"));
    kv[1].key = "nosuch.key";
    kv[1].value = "1";
    assert_int_equal(create_with(f, "t", 1, 3, kv, 2), WEIR_EINVALID_CONFIG);
    assert_non_null(strstr(f->out.detail.msg, "unknown topic config"));
    assert_non_null(strstr(f->out.detail.msg, "cleanup.policy"));
    kv[1].key = "cleanup.policy";
    kv[1].value = "compact";
    assert_int_equal(create_with(f, "t", 1, 3, kv, 2), 0);
    fx_assert_replay_equal(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin_placement, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_preferred_leaders_spread_evenly,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_rack_aware_placement, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_rack_aware_with_uneven_racks,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_replication_factor_default_and_cap,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_default_rf_not_lowered_while_brokers_down, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_requests_are_refused, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_configs_are_checked_and_recorded,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_bad_configs_are_refused_naming_the_key, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
