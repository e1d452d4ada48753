/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core across restarts and failures: producer ids stay unique
 * and increasing across snapshots and log replays, epochs and topic ids
 * keep growing, config is checked, and a step that runs out of memory
 * either changes nothing or marks the core failed, after which a core
 * rebuilt from the log carries on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "tests/unit/test_ctl_fixture.h"

static int allocate(struct ctl_fixture *f, int32_t id, int64_t count)
{
    struct ctl_event ev = {.type = CTL_EV_ALLOCATE_PRODUCER_IDS};

    ev.u.pids.broker_id = id;
    ev.u.pids.broker_epoch = f->epoch[id];
    ev.u.pids.count = count;
    return fx_step(f, &ev);
}

static void test_producer_id_blocks(void **state)
{
    struct ctl_fixture *f = *state;
    int i;

    fx_join(f, 1, NULL);
    assert_int_equal(allocate(f, 1, 1), 0);
    assert_int_equal(f->out.producer_id, 0);
    assert_int_equal(f->out.producer_id_count, 1);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_PRODUCER_IDS);
    assert_int_equal(f->out.records[0].u.next_producer_id, 1000);
    for (i = 1; i < 1000; i++) {
        assert_int_equal(allocate(f, 1, 1), 0);
        assert_int_equal(f->out.producer_id, i);
        assert_int_equal(f->out.n_records, 0); /* from the reserved block */
    }
    assert_int_equal(allocate(f, 1, 1), 0);
    assert_int_equal(f->out.producer_id, 1000);
    assert_int_equal(f->out.records[0].u.next_producer_id, 2000);
    /* a request bigger than a block reserves exactly what it needs */
    assert_int_equal(allocate(f, 1, 5000), 0);
    assert_int_equal(f->out.producer_id, 1001);
    assert_int_equal(f->out.records[0].u.next_producer_id, 6001);
    assert_int_equal(meta_image_next_producer_id(fx_image(f)), 6001);
    fx_assert_replay_equal(f);
}

static void test_producer_id_refusals(void **state)
{
    struct ctl_fixture *f = *state;

    fx_join(f, 1, NULL);
    assert_int_equal(allocate(f, 1, 0), WEIR_EINVALID_REQUEST);
    assert_int_equal(allocate(f, 1, -1), WEIR_EINVALID_REQUEST);
    assert_int_equal(allocate(f, 1, CTL_MAX_PRODUCER_IDS + 1),
                     WEIR_EINVALID_REQUEST);
    assert_int_equal(f->out.producer_id, -1);
    f->epoch[1]++;
    assert_int_equal(allocate(f, 1, 1), WEIR_ENOT_FOUND);
    f->epoch[1]--;
    assert_int_equal(allocate(f, 1, CTL_MAX_PRODUCER_IDS), 0);
}

/* Every id handed out before a restart is below every id after it. */
static void test_producer_ids_increase_across_restarts(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t highest = -1;
    int round;
    int i;

    fx_join(f, 1, NULL);
    for (round = 0; round < 6; round++) {
        for (i = 0; i < 7; i++) {
            assert_int_equal(allocate(f, 1, 1 + i * 50), 0);
            assert_true(f->out.producer_id > highest);
            highest = f->out.producer_id + f->out.producer_id_count - 1;
        }
        if (round % 2 == 0) {
            fx_restart(f);
        } else {
            fx_restart_from_log(f);
        }
    }
    assert_int_equal(allocate(f, 1, 1), 0);
    assert_true(f->out.producer_id > highest);
    fx_assert_replay_equal(f);
}

static void test_epochs_and_ids_keep_growing_after_restart(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t e1 = fx_join(f, 1, NULL);
    int64_t t = fx_create(f, "before", 2, 1);
    int64_t e1_again;
    int64_t u;

    fx_restart(f);
    e1_again = fx_register(f, 1, NULL);
    assert_true(e1_again > e1);
    assert_true(e1_again >= meta_image_end_offset(fx_image(f)) - 1);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    u = fx_create(f, "after", 1, 1);
    assert_true(u > t);
    /* the partition of "before" that 1 led became leaderless at the
     * re-registration and got 1 back when it was unfenced */
    assert_int_equal(fx_part(f, t, 0)->leader, 1);
    assert_int_equal(fx_part(f, t, 0)->leader_epoch, 2);
    fx_assert_replay_equal(f);
}

static void test_config_is_checked(void **state)
{
    struct ctl_config cfg;
    struct ctl_core *core = (struct ctl_core *)1;
    struct meta_image *img;

    (void)state;
    ctl_config_init(&cfg);
    assert_int_equal(cfg.session_timeout_ms, 3000);
    assert_int_equal(cfg.default_replication_factor, 3);
    assert_int_equal(cfg.default_min_insync_replicas, 2);
    assert_false(cfg.unclean_leader_election);
    cfg.session_timeout_ms = 0;
    assert_int_equal(meta_image_new(&img), 0);
    /* the image is consumed also on failure (ASan would see a leak) */
    assert_int_equal(ctl_core_new(&cfg, img, &core), WEIR_EINVALID_ARGUMENT);
    assert_null(core);
    ctl_config_init(&cfg);
    cfg.default_replication_factor = META_MAX_REPLICAS + 1;
    assert_int_equal(ctl_core_new(&cfg, NULL, &core), WEIR_EINVALID_ARGUMENT);
    ctl_config_init(&cfg);
    cfg.default_partitions = 0;
    assert_int_equal(ctl_core_new(&cfg, NULL, &core), WEIR_EINVALID_ARGUMENT);
    ctl_config_init(&cfg);
    cfg.default_min_insync_replicas = 0;
    assert_int_equal(ctl_core_new(&cfg, NULL, &core), WEIR_EINVALID_ARGUMENT);
    ctl_config_init(&cfg);
    cfg.rebalance_interval_ms = CTL_MAX_INTERVAL_MS + 1;
    assert_int_equal(ctl_core_new(&cfg, NULL, &core), WEIR_EINVALID_ARGUMENT);
    ctl_config_init(&cfg);
    cfg.producer_id_block = 0;
    assert_int_equal(ctl_core_new(&cfg, NULL, &core), WEIR_EINVALID_ARGUMENT);
    ctl_core_free(NULL);
}

/* Event i of a scenario touching every handler; false past the end. */
static bool scenario(struct ctl_fixture *f, int i, struct ctl_event *ev)
{
    static const struct ctl_kv kv[] = {{"retention.ms", "60000"}};
    static const char *const hosts[] = {"b1", "b2", "b3"};
    static const char *const dirs[] = {"d1", "d2", "d3"};
    static struct ctl_replica offline;
    const struct meta_topic *t = meta_image_topic_by_name(fx_image(f), "t", 1);

    memset(ev, 0, sizeof(*ev));
    if (t != NULL) {
        offline.topic_id = t->id;
        offline.partition = 1;
    }
    if (i < 3) {
        ev->type = CTL_EV_BROKER_REGISTER;
        ev->u.reg.broker_id = i + 1;
        ev->u.reg.host = hosts[i];
        ev->u.reg.port = 9092;
        ev->u.reg.rack = i == 0 ? "r1" : "r2";
        ev->u.reg.directory_id = dirs[i];
        ev->u.reg.previous_broker_epoch = -1;
        return true;
    }
    if (i < 6) {
        ev->type = CTL_EV_BROKER_CAUGHT_UP;
        ev->u.broker.broker_id = i - 2;
        ev->u.broker.broker_epoch = f->epoch[i - 2];
        return true;
    }
    switch (i) {
    case 6:
        ev->type = CTL_EV_CREATE_TOPIC;
        ev->u.create.name = "t";
        ev->u.create.partitions = 4;
        ev->u.create.configs = kv;
        ev->u.create.n_configs = 1;
        return true;
    case 7:
        ev->type = CTL_EV_ALTER_ISR;
        ev->u.alter_isr.broker_id = t->partitions[0].leader;
        ev->u.alter_isr.broker_epoch = f->epoch[t->partitions[0].leader];
        ev->u.alter_isr.topic_id = t->id;
        ev->u.alter_isr.isr.n = 1;
        ev->u.alter_isr.isr.ids[0] = t->partitions[0].leader;
        return true;
    case 8:
        ev->type = CTL_EV_ALLOCATE_PRODUCER_IDS;
        ev->u.pids.broker_id = 1;
        ev->u.pids.broker_epoch = f->epoch[1];
        ev->u.pids.count = 10;
        return true;
    case 9:
        ev->type = CTL_EV_CONTROLLED_SHUTDOWN;
        ev->u.broker.broker_id = 2;
        ev->u.broker.broker_epoch = f->epoch[2];
        return true;
    case 10:
        fake_clock_advance(&f->clock, 5000);
        ev->type = CTL_EV_TICK; /* fences 1 and 3 */
        return true;
    case 11:
        ev->type = CTL_EV_BROKER_HEARTBEAT; /* 3 comes back */
        ev->u.heartbeat.broker_id = 3;
        ev->u.heartbeat.broker_epoch = f->epoch[3];
        ev->u.heartbeat.applied_offset = 1000;
        return true;
    case 12:
        ev->type = CTL_EV_BROKER_HEARTBEAT; /* a log of 3 goes offline */
        ev->u.heartbeat.broker_id = 3;
        ev->u.heartbeat.broker_epoch = f->epoch[3];
        ev->u.heartbeat.applied_offset = 1000;
        ev->u.heartbeat.offline = &offline;
        ev->u.heartbeat.n_offline = 1;
        return true;
    case 13:
        ev->type = CTL_EV_BROKER_REGISTER; /* 1 is back on a new disk */
        ev->u.reg.broker_id = 1;
        ev->u.reg.host = "b1";
        ev->u.reg.port = 9092;
        ev->u.reg.directory_id = "d1-new";
        ev->u.reg.previous_broker_epoch = -1;
        ev->u.reg.offline = &offline;
        ev->u.reg.n_offline = 1;
        return true;
    case 14:
        ev->type = CTL_EV_DELETE_TOPIC;
        ev->u.del.name = "t";
        return true;
    default:
        return false;
    }
}

/* Run each event failing the 1st, 2nd, ... allocation until it succeeds.
 * A failed step either left the image as the log says, or marked the core
 * failed; then the core is rebuilt from the log, as an adapter would. */
static void test_steps_survive_failed_allocations(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_event ev;
    unsigned long k;
    int i;
    int rv;
    int rebuilt = 0;

    for (i = 0; scenario(f, i, &ev); i++) {
        for (k = 1;; k++) {
            ev.now_ms = f->clock.now_ms;
            mem_fault_set(k, 0);
            rv = ctl_core_step(f->core, &ev, &f->out);
            mem_fault_set(0, 0);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            assert_int_equal(f->out.n_records, 0);
            if (ctl_core_failed(f->core)) {
                assert_int_equal(ctl_core_step(f->core, &ev, &f->out),
                                 WEIR_EUNKNOWN);
                fx_restart_from_log(f);
                rebuilt++;
            } else {
                fx_assert_replay_equal(f);
            }
        }
        /* the successful run goes through the fixture's log */
        f->out.result = rv;
        {
            uint32_t r;
            for (r = 0; r < f->out.n_records; r++) {
                assert_int_equal(
                    meta_record_encode(&f->out.records[r], &f->log, NULL), 0);
            }
        }
        assert_int_equal(meta_image_check(fx_image(f), NULL), 0);
        if (ev.type == CTL_EV_BROKER_REGISTER) {
            f->epoch[ev.u.reg.broker_id] = f->out.broker_epoch;
        }
    }
    assert_true(rebuilt > 0); /* some batch was cut short */
    assert_null(meta_image_topic_by_name(fx_image(f), "t", 1));
    assert_false(fx_fenced(f, 3));
    assert_true(fx_fenced(f, 1));
    fx_assert_replay_equal(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_producer_id_blocks, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_producer_id_refusals, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_producer_ids_increase_across_restarts, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_epochs_and_ids_keep_growing_after_restart, fx_setup,
            fx_teardown),
        cmocka_unit_test(test_config_is_checked),
        cmocka_unit_test_setup_teardown(test_steps_survive_failed_allocations,
                                        fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
