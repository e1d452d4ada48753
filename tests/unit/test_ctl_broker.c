/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core, broker lifecycle on a fake clock: registration epochs,
 * staying fenced until caught up, session expiry, rejoining, new
 * incarnations, controlled shutdown, restarts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_ctl_fixture.h"

static int heartbeat_at(struct ctl_fixture *f,
                        int32_t id,
                        int64_t epoch,
                        int64_t applied,
                        bool want_shutdown)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_HEARTBEAT};

    ev.u.heartbeat.broker_id = id;
    ev.u.heartbeat.broker_epoch = epoch;
    ev.u.heartbeat.applied_offset = applied;
    ev.u.heartbeat.want_shutdown = want_shutdown;
    return fx_step(f, &ev);
}

static void test_epoch_is_the_registration_offset(void **state)
{
    struct ctl_fixture *f = *state;

    assert_int_equal(fx_register(f, 1, NULL), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_REGISTER_BROKER);
    assert_int_equal(f->out.first_offset, 0);
    assert_true(fx_fenced(f, 1));
    assert_int_equal(fx_register(f, 2, "rack-a"), 1);
    assert_string_equal(meta_image_broker(fx_image(f), 2)->rack, "rack-a");
    assert_string_equal(meta_image_broker(fx_image(f), 2)->host, "b2");
    assert_int_equal(meta_image_broker(fx_image(f), 2)->port, 9002);
    fx_assert_replay_equal(f);
}

static void test_fenced_until_caught_up_to_its_registration(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t e1 = fx_register(f, 1, NULL);
    int64_t e2 = fx_register(f, 2, NULL);
    struct ctl_event ev = {.type = CTL_EV_BROKER_CAUGHT_UP};

    /* broker 2 registered at offset 1: having applied offset 0 is not
     * enough, it has not seen its own registration */
    assert_int_equal(heartbeat_at(f, 2, e2, e2 - 1, false), 0);
    assert_int_equal(f->out.n_records, 0);
    assert_true(f->out.broker_fenced);
    assert_int_equal(heartbeat_at(f, 2, e2, -1, false), 0);
    assert_true(fx_fenced(f, 2));
    assert_int_equal(heartbeat_at(f, 2, e2, e2, false), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_UNFENCE_BROKER);
    assert_int_equal(f->out.records[0].u.fence.epoch, e2);
    assert_false(f->out.broker_fenced);
    assert_false(fx_fenced(f, 2));
    /* the explicit event does the same */
    ev.u.broker.broker_id = 1;
    ev.u.broker.broker_epoch = e1;
    assert_int_equal(fx_step(f, &ev), 0);
    assert_false(fx_fenced(f, 1));
    /* and is idempotent */
    assert_int_equal(fx_step(f, &ev), 0);
    assert_int_equal(f->out.n_records, 0);
    fx_assert_replay_equal(f);
}

static void test_unknown_or_stale_epoch_is_refused(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t old = fx_join(f, 1, NULL);
    int64_t now;

    assert_int_equal(heartbeat_at(f, 9, 0, 0, false), WEIR_ENOT_FOUND);
    assert_int_equal(f->out.n_records, 0);
    now = fx_register(f, 1, NULL);
    assert_true(now > old);
    assert_int_equal(heartbeat_at(f, 1, old, 100, false), WEIR_ENOT_FOUND);
    assert_non_null(strstr(f->out.detail.msg, "stale"));
    assert_true(fx_fenced(f, 1)); /* the old incarnation does not unfence */
    assert_int_equal(heartbeat_at(f, 1, now, now, false), 0);
    assert_false(fx_fenced(f, 1));
}

static void test_session_expiry_fences(void **state)
{
    struct ctl_fixture *f = *state;
    const int32_t alive[] = {1, 2};

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    /* the deadline is the last heartbeat + timeout + 1 ms */
    assert_int_equal(f->out.next_tick_ms, 1000 + 3000 + 1);
    fx_advance(f, 2000);
    fx_heartbeat_all(f, alive, 2);
    fx_advance(f, 1000); /* broker 3 silent for exactly 3000 ms */
    assert_false(fx_fenced(f, 3));
    assert_int_equal(f->out.n_records, 0);
    assert_int_equal(f->out.next_tick_ms, 4001);
    fx_advance(f, 1);
    assert_true(fx_fenced(f, 3));
    assert_int_equal(f->out.n_fenced, 1);
    assert_int_equal(fx_count(f, META_RECORD_FENCE_BROKER), 1);
    assert_false(fx_fenced(f, 1));
    assert_false(fx_fenced(f, 2));
    /* fenced brokers no longer set the next tick */
    assert_int_equal(f->out.next_tick_ms, 3000 + 3000 + 1);
    fx_advance(f, 5000);
    assert_true(fx_fenced(f, 1));
    assert_true(fx_fenced(f, 2));
    assert_int_equal(f->out.n_fenced, 2);
    assert_int_equal(f->out.next_tick_ms, UINT64_MAX);
    fx_assert_replay_equal(f);
}

static void test_heartbeats_keep_the_session(void **state)
{
    struct ctl_fixture *f = *state;
    int i;

    fx_join(f, 1, NULL);
    for (i = 0; i < 40; i++) {
        fx_advance(f, 500);
        assert_int_equal(fx_heartbeat(f, 1), 0);
        assert_false(f->out.broker_fenced);
    }
    fx_advance(f, 3000);
    assert_false(fx_fenced(f, 1));
    fx_advance(f, 1);
    assert_true(fx_fenced(f, 1));
}

static int fx_lost(struct ctl_fixture *f, int32_t id, int64_t epoch)
{
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_DISCONNECTED;
    ev.u.broker.broker_id = id;
    ev.u.broker.broker_epoch = epoch;
    return fx_step(f, &ev);
}

/* kill -9 closes the broker's sockets: fenced after the (short)
 * disconnect timeout, not the whole session; a broker that heartbeats
 * again on a new connection, or a connection of an old incarnation, is
 * not fenced by it. */
static void test_lost_connection_fences_early(void **state)
{
    struct ctl_fixture *f = *state;
    const int32_t others[] = {2, 3};
    uint64_t lost_at;
    int64_t t;
    int i;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t = fx_create(f, "orders", 3, 3);
    fx_advance(f, 500);
    fx_heartbeat_all(f, others, 2);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 1);
    lost_at = f->clock.now_ms;
    assert_int_equal(fx_lost(f, 1, f->epoch[1]), 0);
    assert_int_equal(f->out.n_records, 0);
    assert_int_equal(f->out.next_tick_ms, lost_at + 1000);
    fx_advance(f, 999);
    assert_false(fx_fenced(f, 1));
    fx_advance(f, 1);
    assert_true(fx_fenced(f, 1));
    assert_int_equal(f->out.n_fenced, 1);
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 0);
    for (i = 0; i < 3; i++) {
        assert_false(meta_ids_has(&fx_part(f, t, i)->isr, 1));
    }
    /* broker 2 reconnects and heartbeats: the lost connection is forgiven */
    assert_int_equal(fx_lost(f, 2, f->epoch[2]), 0);
    fx_advance(f, 400);
    assert_int_equal(fx_heartbeat(f, 2), 0);
    /* broker 3: a connection of an epoch it no longer has */
    assert_int_equal(fx_lost(f, 3, f->epoch[3] + 1), 0);
    assert_int_equal(fx_lost(f, 99, 0), 0);
    fx_advance(f, 1500);
    assert_false(fx_fenced(f, 2));
    assert_false(fx_fenced(f, 3));
    fx_assert_replay_equal(f);
}

static void test_lost_connection_ignored_when_off(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_config cfg;

    fx_fini(f);
    ctl_config_init(&cfg);
    cfg.rebalance_interval_ms = 0;
    cfg.disconnect_timeout_ms = 0;
    fx_init(f, &cfg);
    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    assert_int_equal(fx_lost(f, 1, f->epoch[1]), 0);
    assert_int_equal(f->out.next_tick_ms, 1000 + 3000 + 1);
    fx_advance(f, 2999);
    assert_false(fx_fenced(f, 1));
    fx_advance(f, 2);
    assert_true(fx_fenced(f, 1));
}

/* kill -STOP past the session, then kill -CONT: the same incarnation
 * comes back caught up and is unfenced, but leads nothing it lost. */
static void test_fenced_broker_rejoins_with_its_epoch(void **state)
{
    struct ctl_fixture *f = *state;
    const int32_t others[] = {2, 3};
    int64_t t;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t = fx_create(f, "orders", 3, 3);
    fx_advance(f, 2500);
    fx_heartbeat_all(f, others, 2);
    fx_advance(f, 600);
    assert_true(fx_fenced(f, 1));
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 0);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    assert_false(f->out.broker_fenced);
    assert_int_equal(f->out.n_records, 1); /* UNFENCE only: all have leaders */
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 0);
    assert_int_equal(fx_part(f, t, 0)->isr.n, 2);
    fx_assert_replay_equal(f);
}

static void test_new_incarnation_moves_leaderships_first(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int64_t old;
    uint32_t i;
    uint32_t led;

    old = fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    t = fx_create(f, "orders", 4, 2);
    led = meta_image_broker(fx_image(f), 1)->n_led;
    assert_int_equal(led, 2);
    assert_true(fx_register(f, 1, NULL) > old);
    /* partition changes for all four (1 leaves every ISR), then REGISTER */
    assert_int_equal(f->out.n_records, 5);
    for (i = 0; i < 4; i++) {
        assert_int_equal(f->out.records[i].type, META_RECORD_PARTITION_CHANGE);
        assert_int_equal(fx_part(f, t, (int32_t)i)->leader, 2);
    }
    assert_int_equal(f->out.records[4].type, META_RECORD_REGISTER_BROKER);
    assert_int_equal(f->out.broker_epoch, f->out.first_offset + 4);
    assert_int_equal(f->out.n_fenced, 1);
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 0);
    fx_assert_replay_equal(f);
}

/* The replication core's rule: a broker never leads the same leader epoch
 * twice. A restarted broker (new registration within the session) that
 * led partitions, even as their only replica, must come back to bumped
 * epochs, since its new incarnation lost what it had not fsynced. */
static void test_reregistered_leader_never_reuses_an_epoch(void **state)
{
    struct ctl_fixture *f = *state;
    int32_t before[2];
    int64_t solo;
    int64_t pair;

    fx_join(f, 1, NULL);
    solo = fx_create(f, "solo", 1, 1); /* only replica: broker 1 */
    fx_join(f, 2, NULL);
    pair = fx_create(f, "pair", 2, 2);
    assert_int_equal(fx_part(f, solo, 0)->leader, 1);
    before[0] = fx_part(f, solo, 0)->leader_epoch;
    before[1] = fx_part(f, pair, 0)->leader == 1
                    ? fx_part(f, pair, 0)->leader_epoch
                    : fx_part(f, pair, 1)->leader_epoch;
    fx_register(f, 1, NULL); /* restarted before its session expired */
    assert_int_equal(fx_part(f, solo, 0)->leader, -1);
    assert_true(fx_part(f, solo, 0)->leader_epoch > before[0]);
    assert_int_equal(fx_heartbeat(f, 1), 0); /* caught up: unfenced */
    assert_false(fx_fenced(f, 1));
    /* it leads its only partition again, in a newer epoch than both the
     * one it led before and the leaderless one in between */
    assert_int_equal(fx_part(f, solo, 0)->leader, 1);
    assert_true(fx_part(f, solo, 0)->leader_epoch > before[0] + 1);
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 1);
    /* where another ISR member existed, leadership moved on with a bump */
    assert_true(fx_part(f, pair, 0)->leader == 2 &&
                fx_part(f, pair, 1)->leader == 2);
    assert_true(fx_part(f, pair, 0)->leader_epoch > 0 ||
                fx_part(f, pair, 1)->leader_epoch > before[1]);
    fx_assert_replay_equal(f);
}

static void test_controlled_shutdown(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int32_t p;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t = fx_create(f, "orders", 6, 3);
    assert_int_equal(meta_image_broker(fx_image(f), 2)->n_led, 2);
    assert_int_equal(fx_shutdown(f, 2), 0);
    assert_true(f->out.shutdown_ok);
    assert_true(f->out.broker_fenced);
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), 6);
    assert_int_equal(f->out.records[6].type, META_RECORD_FENCE_BROKER);
    for (p = 0; p < 6; p++) {
        const struct meta_partition *part = fx_part(f, t, p);
        assert_false(meta_ids_has(&part->isr, 2));
        assert_true(part->leader == 1 || part->leader == 3);
    }
    /* heartbeats from it neither unfence it nor undo the shutdown */
    assert_int_equal(fx_heartbeat(f, 2), 0);
    assert_true(f->out.broker_fenced);
    assert_true(f->out.shutdown_ok);
    assert_int_equal(f->out.n_records, 0);
    /* the restarted broker registers anew and is unfenced normally */
    fx_join(f, 2, NULL);
    assert_false(fx_fenced(f, 2));
    fx_assert_replay_equal(f);
}

static void test_shutdown_through_heartbeat_flag(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int32_t leader;
    int32_t other;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    t = fx_create(f, "solo", 1, 1);
    leader = fx_part(f, t, 0)->leader;
    other = 3 - leader;
    assert_int_equal(heartbeat_at(f, leader, f->epoch[leader], 100, true), 0);
    assert_true(f->out.shutdown_ok);
    /* sole replica: nobody to take over, the partition waits for it (it
     * left the ISR for the ELR: it holds every committed record) */
    assert_int_equal(fx_part(f, t, 0)->leader, -1);
    assert_int_equal(fx_part(f, t, 0)->isr.n, 0);
    assert_int_equal(fx_part(f, t, 0)->elr.n, 1);
    assert_int_equal(fx_part(f, t, 0)->elr.ids[0], leader);
    /* an already fenced broker may go at once */
    fx_advance(f, 3001);
    assert_true(fx_fenced(f, other));
    assert_int_equal(heartbeat_at(f, other, f->epoch[other], 100, true), 0);
    assert_true(f->out.shutdown_ok);
    assert_int_equal(f->out.n_records, 0);
}

static void test_invalid_registrations_are_refused(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_event ev = {.type = CTL_EV_BROKER_REGISTER};
    char rack[80];

    memset(rack, 'r', sizeof(rack) - 1);
    rack[sizeof(rack) - 1] = '\0';
    ev.u.reg.broker_id = 1;
    ev.u.reg.port = 9092;
    ev.u.reg.host = NULL;
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    ev.u.reg.host = "";
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    ev.u.reg.host = "has space";
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    ev.u.reg.host = "ok";
    ev.u.reg.port = 0;
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    ev.u.reg.port = 9092;
    ev.u.reg.rack = rack;
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    ev.u.reg.rack = NULL;
    ev.u.reg.broker_id = -1;
    assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    assert_int_equal(meta_image_end_offset(fx_image(f)), 0);
    assert_int_equal(meta_image_broker_count(fx_image(f)), 0);
    ev.u.reg.broker_id = 1;
    assert_int_equal(fx_step(f, &ev), 0);
}

/* After a restart (or a failover) nobody knows when brokers last
 * heartbeated: none is fenced at once. One heard from within the
 * first-contact timeout has a full session from the first event; one not
 * heard from by then (dead, most likely: killed with the old controller)
 * is fenced then, not a whole session later. */
static void
test_restart_fences_brokers_not_heard_from_by_first_contact(void **state)
{
    struct ctl_fixture *f = *state;
    uint64_t seen;
    bool stopping;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fake_clock_advance(&f->clock, 2900);
    fx_restart(f);
    fake_clock_advance(&f->clock, 1000);   /* 3900 ms since the heartbeats */
    assert_int_equal(fx_advance(f, 0), 0); /* the first event */
    assert_false(fx_fenced(f, 1));
    assert_false(fx_fenced(f, 2));
    assert_int_equal(f->out.next_tick_ms, f->clock.now_ms + 1500);
    assert_true(ctl_core_broker_liveness(f->core, 1, &seen, &stopping));
    assert_int_equal(seen, 1000 + 3900);
    assert_false(stopping);
    assert_false(ctl_core_broker_liveness(f->core, 7, &seen, &stopping));
    fx_advance(f, 1000);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    fx_advance(f, 499);
    assert_false(fx_fenced(f, 2));
    fx_advance(f, 1);
    assert_false(fx_fenced(f, 1));
    assert_true(fx_fenced(f, 2));
    /* broker 1's session runs from its heartbeat as usual */
    fx_advance(f, 2500);
    assert_false(fx_fenced(f, 1));
    fx_advance(f, 1);
    assert_true(fx_fenced(f, 1));
    fx_assert_replay_equal(f);
}

/* first_contact_timeout_ms 0 (or at least the session timeout): every
 * broker gets a whole session from the first event after a restart. */
static void
test_restart_without_first_contact_gives_a_full_session(void **state)
{
    struct ctl_fixture *f = *state;

    f->cfg.first_contact_timeout_ms = 0;
    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_restart(f);
    assert_int_equal(fx_advance(f, 0), 0);
    fx_advance(f, 2000);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    fx_advance(f, 1000);
    assert_false(fx_fenced(f, 1));
    assert_false(fx_fenced(f, 2));
    fx_advance(f, 1);
    assert_false(fx_fenced(f, 1));
    assert_true(fx_fenced(f, 2));
    f->cfg.first_contact_timeout_ms = f->cfg.session_timeout_ms;
    fx_restart(f);
    assert_int_equal(fx_advance(f, 0), 0);
    fx_advance(f, 3000);
    assert_false(fx_fenced(f, 1));
    fx_advance(f, 1);
    assert_true(fx_fenced(f, 1));
    fx_assert_replay_equal(f);
}

static void test_time_never_runs_backwards(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_event ev = {.type = CTL_EV_BROKER_HEARTBEAT};
    uint64_t seen;
    bool stopping;

    fx_join(f, 1, NULL);
    fake_clock_advance(&f->clock, 2000);
    assert_int_equal(fx_heartbeat(f, 1), 0);
    /* a heartbeat stamped earlier than the last event counts as now */
    ev.now_ms = 5;
    ev.u.heartbeat.broker_id = 1;
    ev.u.heartbeat.broker_epoch = f->epoch[1];
    ev.u.heartbeat.applied_offset = 100;
    assert_int_equal(ctl_core_step(f->core, &ev, &f->out), 0);
    assert_true(ctl_core_broker_liveness(f->core, 1, &seen, &stopping));
    assert_int_equal(seen, 3000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_epoch_is_the_registration_offset,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_fenced_until_caught_up_to_its_registration, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_or_stale_epoch_is_refused,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_session_expiry_fences, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_heartbeats_keep_the_session,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_lost_connection_fences_early,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_lost_connection_ignored_when_off,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_fenced_broker_rejoins_with_its_epoch, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_new_incarnation_moves_leaderships_first, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_reregistered_leader_never_reuses_an_epoch, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_controlled_shutdown, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_through_heartbeat_flag,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_registrations_are_refused,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_restart_fences_brokers_not_heard_from_by_first_contact,
            fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_restart_without_first_contact_gives_a_full_session, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_time_never_runs_backwards,
                                        fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
